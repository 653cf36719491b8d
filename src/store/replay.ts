/**
 * Replay and recovery of the append-only log (store/log.ts holds the writable log, and
 * group-commit.ts its batching): reading the JSONL segment files under `<dataDir>/log/` in order,
 * checking framing, hash chain and seq continuity, the erasure contract's vouching, the torn
 * tail of the last segment, and the checkpoint in meta.json.
 *
 * Recovery on open: bytes after the last newline of the last segment are a torn write (a crash
 * mid-write; never acknowledged) only if they can be what our write left: they start with
 * `{"payload":` or are a proper prefix of it, or they are only NUL bytes (zero-fill a file
 * system can leave after power loss). A torn write is truncated and reported — unless it is a
 * complete record that only lacks its newline, which is kept and given its newline. Any other
 * tail (garbage appended, a whole record followed by a stray byte) and any other damage (bad
 * framing, bad hash, a gap in seq, a missing segment, an incomplete line in a segment that is
 * not the last) throws LogCorruptError naming the file and byte offset, and a log that
 * ends before the checkpoint in meta.json (segments removed, log emptied or replaced) throws
 * StoreStateError: serving it would reuse seqs under the same originId (part 6 rule 8).
 *
 * A whole replay of a large log (issue 30) frames and hash-checks the segments before the last
 * on worker threads (replay-worker.ts) while the main thread links the segments' chains and
 * applies the records in log order; it reports exactly what the single-threaded replay reports.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import stableStringify from 'fast-json-stable-stringify';
import { REPLAY_SEGMENTS_AHEAD, REPLAY_WORKERS_BYTES_MIN, REPLAY_WORKERS_MAX } from '../constants.js';
import { LogCorruptError, RecordDamagedError, SnapshotMismatchError, StoreStateError } from './errors.js';
import { listSegments, readSegment, type SegmentInfo } from './segment.js';
import type { LogMeta } from './meta.js';
import type { SegmentRecords } from './records.js';
import { CHECKED_FIELDS, SegmentChecker, type CheckedSegment } from './replay-worker.js';
import {
  ERASE_RECORD_TYPE,
  GENESIS_HASH,
  HASH_SUFFIX_LENGTH,
  eraseTargetsOf,
  lineRecord,
  parseLine,
  startsLikeRecord,
  storedHashAt,
  type LineFields,
  type LogRecord,
  type ParsedLine,
} from './record-format.js';

/** The log's folder inside the data folder. */
export const LOG_DIR = 'log';

/** Result of reading a log directory from disk. */
export interface ReplayResult {
  lastSeq: number;
  lastHash: string;
  records: number;
  /**
   * Unterminated tail of the last segment (offset and bytes), if any. `complete` is true when
   * those bytes are a whole valid record that only lacks its newline (it was replayed and counts
   * in lastSeq; open() adds the newline); otherwise they are a torn write that open() truncates.
   */
  torn: { file: string; offset: number; bytes: number; complete: boolean } | null;
  /**
   * NUL bytes that end the last segment after its last record (or after `torn`'s bytes): space
   * the log zeroed ahead of its appends (issue 56, segment.ts `ActiveSegment`), never a record.
   * open() truncates it; read-only readers stop before it (`segmentDataBytes`).
   */
  zeroTail: { file: string; offset: number; bytes: number } | null;
  /** The chained hash of record `hashAtSeq` (a replay option), or null when the log ends before it. */
  hashAt: string | null;
  /**
   * Every erase target named by the `moderation.erase` records replayed (seq → original chained
   * hash), in log order: the vouched map's entries from this replay (see record-format.ts).
   */
  vouched: Map<number, string>;
  /** Worker threads that checked segments (0: the replay ran on the calling thread only). */
  workers: number;
}

/**
 * Called for each replayed record: the record, its payload's canonical JSON (as stored), and
 * where its line lies — the segment's first seq, the line's byte offset in it, and the length in
 * bytes of its record text (the line up to its `,"hash"` field; see records.ts).
 */
export type RecordVisitor = (record: LogRecord, payloadJson: string, segmentFirstSeq: number, offset: number, length: number) => void;

/**
 * Where a replay resumes after a state snapshot: the first record to replay (`seq`), the segment
 * and byte offset of its line, and the chained hash of the record before it.
 */
export interface ReplayStart {
  seq: number;
  segmentFirstSeq: number;
  offset: number;
  prevHash: string;
}

/** Options of a replay: `strict` (verify's canonical-form check), `hashAtSeq`, `start`. */
export interface ReplayOptions {
  strict?: boolean;
  /** Report the chained hash of this record as `hashAt`. */
  hashAtSeq?: number;
  /** Resume here (after a state snapshot) instead of at record 1. */
  start?: ReplayStart;
}

/**
 * Reads every segment in order (from `opts.start` when given), checking framing, hash chain and
 * seq continuity, and calls
 * `onRecord` for each record with its payload's canonical JSON (as stored) and its location.
 * A tombstone (an erased record's line, record-format.ts) is accepted provisionally and handed to
 * `onRecord` with `erased: true` and payload null; the replay fails if the log ends without a later
 * `moderation.erase` record naming its seq and stored hash (the erasure contract's chain rule).
 * Throws LogCorruptError for damage other than a torn final line of the last segment, and for a
 * tombstone nobody vouched for (naming its file and offset).
 */
export function replaySegments(logDir: string, onRecord: RecordVisitor, opts: ReplayOptions = {}): ReplayResult {
  const replay = new Replay(logDir, onRecord, opts);
  const segments = replay.segments;
  for (let i = 0; i < segments.length; i++) replay.segment(segments[i]!, i === segments.length - 1);
  return replay.finish();
}

/**
 * replaySegments with the segments before the last one read, framed and hash-checked on
 * `workers` worker threads (replay-worker.ts), a few segments ahead of the main thread, which
 * links each segment's chain to the one before (by checking its first record against the
 * previous segment's last hash), builds the records and calls `onRecord` in log order. The last
 * segment (where a torn tail can be) is replayed on the main thread. Same calls, result and
 * errors (the same LogCorruptError at the same record, after the same records) as
 * replaySegments; `strict` and `start` are not supported here (use replaySegments).
 */
async function replaySegmentsInWorkers(logDir: string, onRecord: RecordVisitor, opts: ReplayOptions, workers: number): Promise<ReplayResult> {
  const replay = new Replay(logDir, onRecord, opts);
  const segments = replay.segments;
  const checked = segments.slice(0, -1);
  const checker = new SegmentChecker(
    checked.map((seg) => ({ file: join(logDir, seg.name), firstSeq: seg.firstSeq })),
    workers,
    workers + REPLAY_SEGMENTS_AHEAD,
  );
  replay.workers = checker.workerCount;
  try {
    for (let i = 0; i < checked.length; i++) {
      replay.segmentStart(checked[i]!);
      replay.checkedSegment(checked[i]!, await checker.take(i));
    }
    const last = segments[segments.length - 1];
    if (last !== undefined) replay.segment(last, true);
  } finally {
    await checker.close();
  }
  return replay.finish();
}

/**
 * Whether a whole replay of the segments in `logDir` pays for worker threads: at least
 * `bytesMin` bytes lie in segments before the last one (the ones workers check).
 */
function replayWorthWorkers(logDir: string, bytesMin: number): boolean {
  const segments = listSegments(logDir);
  let bytes = 0;
  for (let i = 0; i < segments.length - 1; i++) bytes += segments[i]!.sizeBytes;
  return segments.length >= 2 && bytes >= bytesMin;
}

/**
 * The default number of replay worker threads: the cores beside the main thread, at most
 * REPLAY_WORKERS_MAX (0 on one core, where a worker would only compete with the main thread).
 */
function defaultReplayWorkers(): number {
  return Math.max(0, Math.min(REPLAY_WORKERS_MAX, availableParallelism() - 1));
}

/**
 * One replay in progress: the chain's state (next seq, previous hash), the tombstones seen and
 * the erase targets that vouch for them, and the result fields. Segments are handed to it in
 * order, either as raw bytes (`segment`, parsed and checked here) or as checked by a worker
 * (`checkedSegment`).
 */
class Replay {
  readonly segments: SegmentInfo[];
  private readonly strict: boolean;
  private readonly start: ReplayStart | undefined;
  private expectedSeq: number;
  private prevHash: string;
  private torn: ReplayResult['torn'] = null;
  private zeroTail: ReplayResult['zeroTail'] = null;
  private hashAt: string | null = null;
  private readonly vouched = new Map<number, string>();
  /** Tombstones seen and not yet vouched for (seq → stored hash and where the line is). */
  private readonly unvouched = new Map<number, { hash: string; file: string; offset: number }>();
  /** Worker threads checking segments for this replay (set by replaySegmentsInWorkers). */
  workers = 0;

  constructor(
    private readonly logDir: string,
    private readonly onRecord: RecordVisitor,
    private readonly opts: ReplayOptions,
  ) {
    const start = opts.start;
    this.start = start;
    this.segments = listSegments(logDir).filter((seg) => start === undefined || seg.firstSeq >= start.segmentFirstSeq);
    this.strict = opts.strict === true;
    this.expectedSeq = start?.seq ?? 1;
    this.prevHash = start?.prevHash ?? GENESIS_HASH;
  }

  /** Whether replay resumes inside `seg` (after a state snapshot). */
  private resumes(seg: SegmentInfo): boolean {
    return this.start !== undefined && seg.firstSeq === this.start.segmentFirstSeq;
  }

  /** Checks that `seg` starts where the chain is (no segment missing or overlapping). Throws LogCorruptError. */
  segmentStart(seg: SegmentInfo): void {
    const expectedSeq = this.expectedSeq;
    if (!this.resumes(seg) && seg.firstSeq !== expectedSeq && seg.sizeBytes > 0) {
      throw new LogCorruptError(
        join(this.logDir, seg.name),
        0,
        seg.firstSeq > expectedSeq
          ? `records ${expectedSeq}..${seg.firstSeq - 1} are missing (a segment file was removed?)`
          : `segment starts at seq ${seg.firstSeq} but seq ${expectedSeq} was expected (overlapping segment)`,
      );
    }
  }

  /** Reads, checks and replays segment `seg` (`isLast`: the log's last, where a torn tail may be). */
  segment(seg: SegmentInfo, isLast: boolean): void {
    this.segmentStart(seg);
    const file = join(this.logDir, seg.name);
    const buf = readSegment(this.logDir, seg);
    let pos = this.resumes(seg) ? this.start!.offset : 0;
    while (pos < buf.length) {
      // No record line starts with a NUL byte: in the last segment, one is where the zeroed space
      // begins (or a torn write into it: see zeroedSpaceTail).
      if (isLast && buf[pos] === 0) {
        this.zeroedSpaceTail(file, buf, pos);
        break;
      }
      const nl = buf.indexOf(10, pos);
      if (nl === -1) {
        if (!isLast) throw new LogCorruptError(file, pos, 'incomplete line in a segment that is not the last one');
        let end = buf.length;
        while (buf[end - 1] === 0) end--;
        if (end < buf.length) this.zeroTail = { file, offset: end, bytes: buf.length - end };
        const tail = unterminatedTail(end < buf.length ? buf.subarray(0, end) : buf, pos, this.prevHash, this.expectedSeq, file, this.strict);
        this.torn = { file, offset: pos, bytes: end - pos, complete: tail !== null };
        if (tail === null) break;
        this.emit(tail.record, tail.payloadJson, tail.hash, tail.erased, seg.firstSeq, file, pos, end - HASH_SUFFIX_LENGTH - pos);
        break;
      }
      let parsed: ParsedLine;
      try {
        parsed = parseLine(buf, pos, nl, this.prevHash, this.expectedSeq, file, this.strict, stableStringify);
      } catch (err) {
        // A line of the last segment with a NUL byte inside: a torn write into the zeroed space.
        const nul = isLast ? buf.indexOf(0, pos) : -1;
        if (nul === -1 || nul > nl) throw err;
        this.torn = { file, offset: pos, bytes: buf.length - pos, complete: false };
        break;
      }
      this.emit(parsed.record, parsed.payloadJson, parsed.hash, parsed.erased, seg.firstSeq, file, pos, nl - HASH_SUFFIX_LENGTH - pos);
      pos = nl + 1;
    }
  }

  /**
   * The last segment's bytes from `pos`, a line start holding a NUL byte, to its end. The log
   * writes into space it zeroed ahead (issue 56), and every acknowledged byte was fdatasync'd
   * before the answer, so the records end here: all NUL is that space (`zeroTail`, kept quietly);
   * anything else after it is a later page of an unacknowledged write that reached the disk
   * before an earlier one (a power loss), a torn write (`torn`, truncated and reported at open).
   */
  private zeroedSpaceTail(file: string, buf: Buffer, pos: number): void {
    let end = buf.length;
    while (end > pos && buf[end - 1] === 0) end--;
    if (end === pos) this.zeroTail = { file, offset: pos, bytes: buf.length - pos };
    else this.torn = { file, offset: pos, bytes: buf.length - pos, complete: false };
  }

  /**
   * Replays segment `seg` (not the last, checked by segmentStart) as a worker checked it: its first
   * line is checked here against the previous segment's last hash (the link between segments),
   * exactly as `segment` would; the lines after it were checked by the worker, which chained them
   * from the first line's stored hash. Then the worker's damage, if any, is thrown where it lies.
   */
  checkedSegment(seg: SegmentInfo, checked: CheckedSegment): void {
    const file = join(this.logDir, seg.name);
    const buf = checked.bytes;
    if (buf.length === 0) return;
    const { count, fields, damage } = checked;
    const nl = buf.indexOf(10, 0);
    if (nl === -1) throw new LogCorruptError(file, 0, 'incomplete line in a segment that is not the last one');
    const first = parseLine(buf, 0, nl, this.prevHash, this.expectedSeq, file, false, stableStringify);
    this.emit(first.record, first.payloadJson, first.hash, first.erased, seg.firstSeq, file, 0, nl - HASH_SUFFIX_LENGTH);
    const f = scratchFields;
    for (let i = 1; i < count; i++) {
      const at = i * CHECKED_FIELDS;
      const pos = fields[at]!;
      f.erased = fields[at + 1] === 1;
      f.cut = fields[at + 2]!;
      f.payloadStart = fields[at + 3]!;
      f.payloadEnd = fields[at + 4]!;
      f.timeStart = fields[at + 5]!;
      f.timeEnd = fields[at + 6]!;
      f.typeStart = fields[at + 7]!;
      f.typeEnd = fields[at + 8]!;
      f.seq = this.expectedSeq;
      const { record, payloadJson } = lineRecord(buf, pos, f, file);
      // A checked line's stored hash is its chained hash; the string is only built where it is used.
      const hash = f.erased || i === count - 1 || this.expectedSeq === this.opts.hashAtSeq ? storedHashAt(buf, f.cut) : '';
      this.emit(record, payloadJson, hash, f.erased, seg.firstSeq, file, pos, f.cut - pos);
    }
    if (damage !== null) throw new LogCorruptError(file, damage.offset, damage.reason);
  }

  /** Follows one record: the erasure bookkeeping, `onRecord`, and the chain's head. */
  private emit(record: LogRecord, payloadJson: string, hash: string, erased: boolean, segmentFirstSeq: number, file: string, offset: number, length: number): void {
    if (erased) this.unvouched.set(record.seq, { hash, file, offset });
    else if (record.type === ERASE_RECORD_TYPE) {
      for (const t of eraseTargetsOf(record.payload)) {
        this.vouched.set(t.seq, t.hash);
        if (this.unvouched.get(t.seq)?.hash === t.hash) this.unvouched.delete(t.seq);
      }
    }
    this.onRecord(record, payloadJson, segmentFirstSeq, offset, length);
    if (this.expectedSeq === this.opts.hashAtSeq) this.hashAt = hash;
    this.prevHash = hash;
    this.expectedSeq++;
  }

  /** The result, once every segment is replayed. Throws LogCorruptError for a tombstone nobody vouched for. */
  finish(): ReplayResult {
    for (const [seq, t] of this.unvouched) {
      throw new LogCorruptError(
        t.file,
        t.offset,
        `record ${seq} is a tombstone (an erased record) but no later ${ERASE_RECORD_TYPE} record names it with its hash: an erasure nobody vouched for is damage`,
      );
    }
    const last = this.expectedSeq - 1;
    return { lastSeq: last, lastHash: this.prevHash, records: last, torn: this.torn, zeroTail: this.zeroTail, hashAt: this.hashAt, vouched: this.vouched, workers: this.workers };
  }
}

/** Fields of one worker-checked line, reused record after record (checkedSegment copies into it). */
const scratchFields: LineFields = { erased: false, cut: 0, payloadStart: 0, payloadEnd: 0, fieldsEnd: 0, seq: 0, timeStart: 0, timeEnd: 0, typeStart: 0, typeEnd: 0 };

/**
 * Whether `buf[pos..]` could be what a write cut short by a crash left behind: the start of a
 * record line we wrote — it begins with `{"payload":` or is a proper prefix of those bytes — or
 * only NUL bytes. A file system may extend a file's size before the new data blocks reach the
 * disk; after a power loss those blocks read as zeros (ext4 and XFS can leave such zero-fill), so
 * a zero-filled tail is the same unacknowledged write, lost on the way down. Anything else
 * cannot come from our writes: it is damage.
 */
function couldBeTornWrite(buf: Buffer, pos: number): boolean {
  if (startsLikeRecord(buf, pos)) return true;
  for (let i = pos; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}

/**
 * Classifies the bytes `buf[pos..]` after the last newline of the last segment. A write is cut
 * short by a crash at any byte, so a torn write is a prefix of a record line (or zero-fill, see
 * couldBeTornWrite): returns null then, and open() truncates it. A whole valid record without its
 * newline (cut exactly before it) is returned, to be kept: it may have been in doubt, never lost.
 * Throws LogCorruptError (file, offset) for bytes that no write of ours can have left: a tail that
 * does not start like a record line (garbage appended), or a whole record followed by a stray
 * byte (the newline byte was overwritten).
 */
function unterminatedTail(
  buf: Buffer,
  pos: number,
  prevHash: string,
  expectedSeq: number,
  file: string,
  strict: boolean,
): ParsedLine | null {
  if (!couldBeTornWrite(buf, pos)) {
    throw new LogCorruptError(
      file,
      pos,
      `the ${buf.length - pos} bytes after the last newline (first byte 0x${buf[pos]!.toString(16).padStart(2, '0')}) neither start like ` +
        `a record line ({"payload":...) nor are they zero-fill, so they are not a torn write of record ${expectedSeq} ` +
        '(damage, or bytes appended by something other than this server)',
    );
  }
  try {
    return parseLine(buf, pos, buf.length, prevHash, expectedSeq, file, strict, stableStringify);
  } catch {
    // not a whole record: a torn write, unless it is a whole record and one more byte (below)
  }
  try {
    parseLine(buf, pos, buf.length - 1, prevHash, expectedSeq, file, strict, stableStringify);
  } catch {
    return null;
  }
  throw new LogCorruptError(
    file,
    buf.length - 1,
    `record ${expectedSeq} is whole but ends in byte 0x${buf[buf.length - 1]!.toString(16).padStart(2, '0')} instead of a newline (damage, not a torn write)`,
  );
}

/** What to do when the server's data folder ends before, or differs at, its checkpoint. */
const CHECKPOINT_REMEDY =
  'Nothing was changed. Put the missing segment files back (from a copy of this folder), or install a backup ' +
  'with node dist/cli.js restore DIR, or accept the shorter log with node dist/cli.js repair --truncate (it keeps ' +
  'what is there under a new originId, so every client rereads). If this folder is a cp -r copy made while the ' +
  'server ran, a segment was closed during the copy: copy again with node dist/cli.js backup DIR.';

/**
 * Checks a replayed log against its metadata's checkpoint (see meta.ts): the log must reach the
 * checkpoint's seq, and that record must have the checkpoint's hash. `replay` must have been
 * run with `hashAtSeq: meta.checkpoint.seq`. Throws StoreStateError naming the folder, what is
 * wrong and what the operator can do (`remedy`; the default fits the server's data folder);
 * nothing is changed.
 */
export function assertReachesCheckpoint(dataDir: string, meta: LogMeta, replay: ReplayResult, remedy: string = CHECKPOINT_REMEDY): void {
  const cp = meta.checkpoint;
  if (!cp) return;
  const logDir = join(dataDir, LOG_DIR);
  if (replay.lastSeq < cp.seq) {
    throw new StoreStateError(
      `${logDir} ends at record ${replay.lastSeq}, but ${join(dataDir, 'meta.json')} records that this log reached record ` +
        `${cp.seq}: records ${replay.lastSeq + 1}..${cp.seq} (or more) are missing (segment files removed or truncated). ${remedy}`,
    );
  }
  if (replay.hashAt !== cp.hash) {
    throw new StoreStateError(
      `record ${cp.seq} in ${logDir} is not the one ${join(dataDir, 'meta.json')} recorded (its chained hash differs): ` +
        `this log was replaced by another archive's log. ${remedy}`,
    );
  }
}

/** What `recoverLog` needs beside the folder: the open options that steer replay and repair. */
export interface RecoverOptions {
  readOnly?: boolean;
  strict?: boolean;
  resume?: { seq: number; hash: string };
  replayWorkers?: number;
  replayWorkersBytesMin?: number;
  onTruncate?: (file: string, offset: number, bytes: number) => void;
  onComplete?: (file: string, offset: number) => void;
}

/**
 * Replays the log of `dataDir` for opening it (Log.open) and repairs its torn tail: resumes after
 * a state snapshot when `opts.resume` is given (its record must be where `records` located it,
 * with that hash), replays on worker threads when the log is large enough, checks the result
 * against `meta`'s checkpoint, then truncates a torn final line (or gives a whole final record
 * its newline) and reports it. Every replayed record is located in `records` and handed to
 * `onRecord`. Output: the replay's result. Throws SnapshotMismatchError (nothing replayed yet),
 * LogCorruptError (damage; also a torn tail of a read-only log) or StoreStateError (the log ends
 * before, or differs at, its checkpoint).
 */
export async function recoverLog(dataDir: string, meta: LogMeta, records: SegmentRecords, onRecord: RecordVisitor, opts: RecoverOptions): Promise<ReplayResult> {
  const logDir = join(dataDir, LOG_DIR);
  const visit: RecordVisitor = (record, payloadJson, segmentFirstSeq, offset, length) => {
    records.located(record.seq, segmentFirstSeq, offset, length);
    onRecord(record, payloadJson, segmentFirstSeq, offset, length);
  };
  let start: ReplayStart | undefined;
  if (opts.resume !== undefined) {
    const { seq, hash } = opts.resume;
    const loc = records.locations.locate(seq);
    let stored: string | null = null;
    try {
      stored = loc === undefined ? null : records.storedHashOf(seq);
    } catch {
      // An unreadable segment is a mismatch too: the whole replay then names the damage.
    }
    if (loc === undefined || stored !== hash) {
      throw new SnapshotMismatchError(
        `record ${seq} ${stored === null ? 'is not in the log' : 'carries another hash'} than the state snapshot recorded`,
      );
    }
    start = { seq: seq + 1, segmentFirstSeq: loc.segmentFirstSeq, offset: loc.offset + loc.length + HASH_SUFFIX_LENGTH + 1, prevHash: hash };
  }
  const replayOpts: ReplayOptions = { strict: opts.strict === true, hashAtSeq: meta.checkpoint?.seq, start };
  const workers = opts.replayWorkers ?? defaultReplayWorkers();
  const parallel = start === undefined && opts.strict !== true && workers > 0 && replayWorthWorkers(logDir, opts.replayWorkersBytesMin ?? REPLAY_WORKERS_BYTES_MIN);
  const replay = parallel ? await replaySegmentsInWorkers(logDir, visit, replayOpts, workers) : replaySegments(logDir, visit, replayOpts);
  const cp = meta.checkpoint;
  if (start !== undefined && cp !== undefined && cp.seq < start.seq) {
    // The checkpoint lies inside the snapshot's part of the log: its record's stored hash field.
    try {
      replay.hashAt = cp.seq === start.seq - 1 ? start.prevHash : records.locations.locate(cp.seq) ? records.storedHashOf(cp.seq) : null;
    } catch (err) {
      if (err instanceof RecordDamagedError) throw new LogCorruptError(err.file, err.offset, `record ${err.seq} (the checkpoint's) ${err.reason}`);
      throw err;
    }
  }
  assertReachesCheckpoint(dataDir, meta, replay);
  if (replay.torn) {
    if (opts.readOnly) {
      throw new LogCorruptError(replay.torn.file, replay.torn.offset, `incomplete final line (${replay.torn.bytes} bytes)`);
    }
    const h = await fsp.open(replay.torn.file, 'r+');
    try {
      const end = replay.torn.offset + replay.torn.bytes;
      if (replay.torn.complete) {
        await h.write('\n', end);
        if (replay.zeroTail) await h.truncate(end + 1);
      } else await h.truncate(replay.torn.offset);
      await h.sync();
    } finally {
      await h.close();
    }
    if (replay.torn.complete) opts.onComplete?.(replay.torn.file, replay.torn.offset + replay.torn.bytes);
    else opts.onTruncate?.(replay.torn.file, replay.torn.offset, replay.torn.bytes);
  } else if (replay.zeroTail && !opts.readOnly) {
    // Space zeroed ahead of the appends (issue 56): the active segment starts at its last record again.
    const h = await fsp.open(replay.zeroTail.file, 'r+');
    try {
      await h.truncate(replay.zeroTail.offset);
      await h.sync();
    } finally {
      await h.close();
    }
  }
  return replay;
}

/**
 * The bytes of segment `seg` that a replay of its log (`replay`) found to hold records: all of
 * them, except in the last segment, which ends before a torn write (left out: never
 * acknowledged; a whole record lacking only its newline stays) and before the space zeroed
 * ahead of the appends (issue 56). What backup and restore copy of a stopped server's log.
 */
export function segmentDataBytes(replay: Pick<ReplayResult, 'torn' | 'zeroTail'>, logDir: string, seg: SegmentInfo): number {
  const file = join(logDir, seg.name);
  if (replay.torn && !replay.torn.complete && replay.torn.file === file) return replay.torn.offset;
  if (replay.zeroTail && replay.zeroTail.file === file) return replay.zeroTail.offset;
  return seg.sizeBytes;
}
