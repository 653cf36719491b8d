/**
 * Segment files: the log's records live in JSONL files under `<dataDir>/log/`, each named by the
 * zero-padded `seq` of its first record (`0000000000000001.jsonl`). This module knows their
 * names, lists them, reads one whole for replay, and keeps the one segment that takes appends
 * open (opening it, closing it, rolling over to a new one). The line format inside is
 * record-format.ts's; the hash chain, replay and group commit are log.ts's.
 *
 * A record never spans two segments: a batch that does not fit in the current segment (its
 * size would pass the roll-over limit) starts a new one named by the batch's first seq.
 */
import { constants as fsConstants, existsSync, readFileSync, readdirSync, statSync, statfsSync, writeSync } from 'node:fs';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { SEGMENT_ZERO_WRITE_BYTES } from '../constants.js';
import { fsyncDir } from './fsutil.js';

/** Segment file names: the zero-padded seq of the segment's first record. */
export const SEGMENT_NAME = /^(\d{16})\.jsonl$/;

/** Segment file name for a first seq (`0000000000000001.jsonl`). */
export function segmentName(firstSeq: number): string {
  return `${String(firstSeq).padStart(16, '0')}.jsonl`;
}

/** Where a segment starts and how long its durable part is; used by backup. */
export interface SegmentInfo {
  name: string;
  firstSeq: number;
  sizeBytes: number;
}

/** Lists the segments of a log directory in seq order ([] when the directory does not exist). */
export function listSegments(logDir: string): SegmentInfo[] {
  if (!existsSync(logDir)) return [];
  const out: SegmentInfo[] = [];
  for (const name of readdirSync(logDir)) {
    const m = SEGMENT_NAME.exec(name);
    if (!m) continue;
    out.push({ name, firstSeq: Number(m[1]), sizeBytes: statSync(join(logDir, name)).size });
  }
  return out.sort((a, b) => a.firstSeq - b.firstSeq);
}

/**
 * The bytes of segment `seg` of `logDir`, whole, for replay (at most the roll-over size plus one
 * batch). Throws the file system's error when it cannot be read.
 */
export function readSegment(logDir: string, seg: SegmentInfo): Buffer {
  return readFileSync(join(logDir, seg.name));
}

/** Zeros copied into the space a segment is extended by (one shared buffer of SEGMENT_ZERO_WRITE_BYTES). */
let zeroChunk: Buffer | null = null;

/**
 * The segment that takes appends: its first seq, its size in bytes (what the log has written to
 * it), and its file handle once opened for appending. Starts as the last segment of `logDir`
 * (or an empty segment 1 for a new log); the log writes through `write` and adds to `bytes`.
 *
 * Zeroed ahead (issue 56): a write that would pass the end of the file first extends it by
 * `zeroAheadBytes` of written zeros, so the appends after it overwrite blocks the file already
 * has and their fdatasync need not commit a new file size through the file system's journal
 * (measured here: 130-140 µs a lone append's fdatasync, against 190-200 µs growing the file).
 * The zeros past `bytes` are never records: replay stops at a line that starts with a NUL byte
 * (replay.ts `zeroTail`), open truncates them, and `close` — at every roll-over, before the next
 * segment exists, and at shutdown — cuts the file back to `bytes`, so only the last segment of a
 * log whose server stopped without closing can end in zeros.
 */
export class ActiveSegment {
  /** The open handle (read-write, positional writes), or null before the first batch and after close. */
  handle: fsp.FileHandle | null = null;
  /** Seq of the segment's first record (its name). */
  firstSeq: number;
  /** Bytes in the segment (written by this log or found at open). */
  bytes: number;
  /** The file's size: `bytes` plus the zeros written ahead of them. */
  private fileBytes = 0;

  constructor(
    private readonly logDir: string,
    /** Roll-over size in bytes (SEGMENT_BYTES_MAX unless a test sets a smaller one). */
    private readonly bytesMax: number,
    /** Bytes of zeros a write past the file's end extends it by (SEGMENT_ZERO_AHEAD_BYTES; 0: the file grows with each write). */
    private readonly zeroAheadBytes: number,
    /**
     * Free bytes under the data folder that must stay free (FORUM_MIN_FREE_BYTES): an extension
     * takes at most a quarter of the free space above it, none at or below it, so the zeros never
     * bring the disk guard's 507 forward.
     */
    private readonly minFreeBytes = 0,
  ) {
    const segs = listSegments(logDir);
    const last = segs[segs.length - 1];
    this.firstSeq = last ? last.firstSeq : 1;
    this.bytes = last ? last.sizeBytes : 0;
  }

  /**
   * Whether a batch of `batchBytes` must start a new segment: this one has records and is sealed
   * or, with `bySize`, would pass the limit (a log that follows a replica bucket rolls over only
   * where the leader's segments begin, never by its own size; issue 50, Log#followsSegments).
   */
  isFull(batchBytes: number, sealed: boolean, bySize: boolean): boolean {
    return this.bytes > 0 && (sealed || (bySize && this.bytes + batchBytes > this.bytesMax));
  }

  /**
   * Opens the segment for appending, first closing the open handle; with `rollOver`, or when the
   * segment is empty, the segment becomes the one starting at `firstSeq` (an empty current
   * segment — a new log, or a crash right after a roll-over — is simply renamed that way). A file
   * it creates is made durable in the directory (fsync of `logDir`); bytes past `bytes` (none
   * after a recovery or a close) are cut off. Rejects on a file-system error.
   */
  async open(firstSeq: number, rollOver: boolean): Promise<void> {
    await this.close();
    if (rollOver || this.bytes === 0) {
      this.firstSeq = firstSeq;
      this.bytes = 0;
    }
    const path = join(this.logDir, segmentName(this.firstSeq));
    const created = !existsSync(path);
    this.handle = await fsp.open(path, fsConstants.O_RDWR | fsConstants.O_CREAT, 0o600);
    this.fileBytes = (await this.handle.stat()).size;
    if (this.fileBytes > this.bytes) {
      await this.handle.truncate(this.bytes);
      this.fileBytes = this.bytes;
    }
    if (created) await fsyncDir(this.logDir);
  }

  /**
   * Writes `data` at byte `bytes` of the open segment (into the page cache: synchronous,
   * microseconds), first zeroing the space ahead when it would pass the file's end; `bytes` is
   * not moved (the log does once the batch is durable). The caller's fdatasync makes both
   * durable. Throws the file system's error (ENOSPC and the like) for the data write; a failed
   * extension only leaves the file growing with the write.
   */
  write(data: Buffer): void {
    const fd = this.handle!.fd;
    const end = this.bytes + data.length;
    if (end > this.fileBytes && this.zeroAheadBytes > 0) this.zeroAhead(fd, end);
    let written = 0;
    while (written < data.length) written += writeSync(fd, data, written, data.length - written, this.bytes + written);
    if (end > this.fileBytes) this.fileBytes = end;
  }

  /**
   * Extends the file with zeros to `end` plus `zeroAheadBytes` (never past the roll-over size, nor
   * past a quarter of the free space above `minFreeBytes`; one statfs per extension).
   */
  private zeroAhead(fd: number, end: number): void {
    let ahead = this.zeroAheadBytes;
    try {
      const fsStats = statfsSync(this.logDir);
      ahead = Math.min(ahead, Math.max(0, Math.floor((fsStats.bavail * fsStats.bsize - this.minFreeBytes) / 4)));
    } catch {
      // Free space unknown: the disk guard does not know it either (it never refuses then).
    }
    const target = Math.max(end, Math.min(end + ahead, this.bytesMax));
    zeroChunk ??= Buffer.alloc(SEGMENT_ZERO_WRITE_BYTES);
    try {
      while (this.fileBytes < target) {
        this.fileBytes += writeSync(fd, zeroChunk, 0, Math.min(zeroChunk.length, target - this.fileBytes), this.fileBytes);
      }
    } catch {
      // Out of space for the zeros (the data write reports it if it does not fit either).
    }
  }

  /**
   * Closes the handle, if open, after cutting the zeros past `bytes` off the file and making that
   * durable: a segment the log leaves (roll-over, an erasure's rewrite) ends at its last record.
   * Rejects on a file-system error (the handle is closed all the same).
   */
  async close(): Promise<void> {
    const handle = this.handle;
    if (!handle) return;
    this.handle = null;
    try {
      if (this.fileBytes > this.bytes) {
        await handle.truncate(this.bytes);
        await handle.datasync();
        this.fileBytes = this.bytes;
      }
    } finally {
      await handle.close();
    }
  }
}
