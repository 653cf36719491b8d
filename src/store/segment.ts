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
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
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

/**
 * The segment that takes appends: its first seq, its size in bytes (what the log has written to
 * it), and its file handle once opened for appending. Starts as the last segment of `logDir`
 * (or an empty segment 1 for a new log); the log writes through `handle` and adds to `bytes`.
 */
export class ActiveSegment {
  /** The open append handle, or null before the first batch and after close. */
  handle: fsp.FileHandle | null = null;
  /** Seq of the segment's first record (its name). */
  firstSeq: number;
  /** Bytes in the segment (written by this log or found at open). */
  bytes: number;

  constructor(
    private readonly logDir: string,
    /** Roll-over size in bytes (SEGMENT_BYTES_MAX unless a test sets a smaller one). */
    private readonly bytesMax: number,
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
   * it creates is made durable in the directory (fsync of `logDir`). Rejects on a file-system error.
   */
  async open(firstSeq: number, rollOver: boolean): Promise<void> {
    await this.close();
    if (rollOver || this.bytes === 0) {
      this.firstSeq = firstSeq;
      this.bytes = 0;
    }
    const path = join(this.logDir, segmentName(this.firstSeq));
    const created = !existsSync(path);
    this.handle = await fsp.open(path, 'a', 0o600);
    if (created) await fsyncDir(this.logDir);
  }

  /** Closes the append handle, if open. */
  async close(): Promise<void> {
    if (!this.handle) return;
    await this.handle.close();
    this.handle = null;
  }
}
