/**
 * The append-only log: the hash chain over JSONL segment files under `<dataDir>/log/` (one
 * record per line; the files themselves are segment.ts's), replay, the checkpoint and group
 * commit.
 *
 * Record line (the on-disk format, `agent-forum-log-v1`; record-format.ts is the one module that
 * builds, splits and proves lines):
 *
 *     {"payload":{...},"seq":7,"time":"2026-01-01T00:00:00.000Z","type":"message.create","hash":"<64 hex>"}
 *
 * Everything before `,"hash"` is the record's canonical JSON (sorted keys, no whitespace;
 * fast-json-stable-stringify). `hash` is SHA-256 over the previous record's hash (hex; 64 zeros
 * for the first record) followed by that canonical JSON, so every record carries both a checksum
 * and a link in a hash chain that `verify` walks end to end. The hash fields are private: they
 * never appear in feeds or exports (part 6 rule 6).
 *
 * An erased record's line is a tombstone of the same length keeping the original hash (issue 25,
 * erase.ts, `Log#erase`): replay accepts it only when a later `moderation.erase` record names its
 * seq and hash (the vouched map, kept in `records`), and hands it on with `erased: true`.
 *
 * Segments (segment.ts) are named by the zero-padded `seq` of their first record
 * (`0000000000000001.jsonl`) and roll over at SEGMENT_BYTES_MAX; a record never spans two segments.
 *
 * Writes use group commit: `append` assigns the next `seq` synchronously and queues the line;
 * one flush writes every queued line and calls fdatasync once; appends that arrive while a flush
 * runs go into the next one. `sync()` resolves when everything appended so far is durable, and
 * callers acknowledge a write only after it resolves.
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
import { existsSync, mkdirSync, writeSync } from 'node:fs';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import stableStringify from 'fast-json-stable-stringify';
import { REPLAY_SEGMENTS_AHEAD, REPLAY_WORKERS_BYTES_MIN, REPLAY_WORKERS_MAX, SEGMENT_BYTES_MAX } from '../constants.js';
import { LogCorruptError, RecordDamagedError, SnapshotMismatchError, StoreStateError } from './errors.js';
import { performance } from 'node:perf_hooks';
import { fsyncDirSync, isNoSpaceError, removeStaleTempFiles } from './fsutil.js';
import { ActiveSegment, listSegments, readSegment, segmentName, type SegmentInfo } from './segment.js';
import { ServiceError } from '../errors.js';
import { eraseRecords, type EraseHost } from './erase.js';
import { logger } from '../logger.js';
import { readMeta, writeMetaAsync, writeNewMeta, type LogMeta } from './meta.js';
import { SegmentRecords } from './records.js';
import { availableParallelism } from 'node:os';
import { CHECKED_FIELDS, SegmentChecker, type CheckedSegment } from './replay-worker.js';
import {
  ERASE_RECORD_TYPE,
  GENESIS_HASH,
  HASH_SUFFIX_LENGTH,
  encodeRecordLine,
  eraseTargetsOf,
  lineRecord,
  parseLine,
  recordJson,
  startsLikeRecord,
  storedHashAt,
  storedHashOfTail,
  type EraseTarget,
  type LineFields,
  type LogRecord,
  type ParsedLine,
} from './record-format.js';

export const LOG_DIR = 'log';

/** Options of `Log.open`. */
export interface LogOptions {
  /** Segment roll-over size in bytes (default SEGMENT_BYTES_MAX). */
  segmentBytesMax?: number;
  /**
   * Called once per group commit, after its fdatasync: the batch's records and bytes and how long
   * the fdatasync took (ms). Instrumentation for metrics, tests and benchmarks.
   */
  onFsync?: (records: number, bytes: number, fsyncMs: number) => void;
  /** Called when a write or fsync fails; the log refuses further appends after that. */
  onFatal?: (err: Error) => void;
  /** Called for each torn tail truncated at open (file, offset, bytes dropped). */
  onTruncate?: (file: string, offset: number, bytes: number) => void;
  /** Called when open gave a whole final record its missing newline (file, offset of the newline). */
  onComplete?: (file: string, offset: number) => void;
  /** Do not modify anything: report a torn tail as damage instead of truncating it. */
  readOnly?: boolean;
  /**
   * Called when the checkpoint in meta.json could not be written at open or close because the
   * disk is full (ENOSPC/EDQUOT). The checkpoint only lags then (it is written again when a
   * segment closes or at the next close); the log itself is intact.
   */
  onCheckpointNoSpace?: (err: Error) => void;
  /** Also check that every record is in canonical form (verify). */
  strict?: boolean;
  /**
   * Where the records' locations are kept, so they can be read back (records.ts): located at
   * replay and after each flush; appended records are held there until their flush.
   */
  records?: SegmentRecords;
  /**
   * Resume after a state snapshot that includes records 1..seq, whose record `seq` has chained
   * hash `hash` (store/snapshot.ts): `records` already holds their locations. Open checks that
   * record `seq` is in its segment where located and carries that hash, then replays only the
   * records after it. Throws SnapshotMismatchError (nothing replayed yet) when it does not.
   */
  resume?: { seq: number; hash: string };
  /**
   * Worker threads for a whole replay (replay-worker.ts): 0 replays on the main thread only.
   * Default: the cores beside the main thread, at most REPLAY_WORKERS_MAX.
   */
  replayWorkers?: number;
  /**
   * A whole replay uses workers only when at least this many bytes lie in segments before the
   * last one (default REPLAY_WORKERS_BYTES_MIN; below it starting workers costs more than it saves).
   */
  replayWorkersBytesMin?: number;
}

export type { LogRecord };

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
interface ReplayOptions {
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
      const nl = buf.indexOf(10, pos);
      if (nl === -1) {
        if (!isLast) throw new LogCorruptError(file, pos, 'incomplete line in a segment that is not the last one');
        const tail = unterminatedTail(buf, pos, this.prevHash, this.expectedSeq, file, this.strict);
        this.torn = { file, offset: pos, bytes: buf.length - pos, complete: tail !== null };
        if (tail === null) break;
        this.emit(tail.record, tail.payloadJson, tail.hash, tail.erased, seg.firstSeq, file, pos, buf.length - HASH_SUFFIX_LENGTH - pos);
        break;
      }
      const parsed = parseLine(buf, pos, nl, this.prevHash, this.expectedSeq, file, this.strict, stableStringify);
      this.emit(parsed.record, parsed.payloadJson, parsed.hash, parsed.erased, seg.firstSeq, file, pos, nl - HASH_SUFFIX_LENGTH - pos);
      pos = nl + 1;
    }
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
    return { lastSeq: last, lastHash: this.prevHash, records: last, torn: this.torn, hashAt: this.hashAt, vouched: this.vouched, workers: this.workers };
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

/** Record types are lower-case tokens such as `message.create` (checked on append). */
const RECORD_TYPE = /^[a-z0-9_.-]{1,60}$/;

interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (err: Error) => void;
  /** performance.now() when it began waiting (the acknowledgement timeout, see `ackTimeout`). */
  since: number;
}

/**
 * One group commit's batch, written (its fdatasync under way) but not yet marked durable: what
 * `Log#replicate` is handed (issue 35). `data` is exactly the bytes written, starting at byte
 * `offset` of the segment whose first record is `segmentFirstSeq`.
 */
export interface WrittenBatch {
  firstSeq: number;
  lastSeq: number;
  /** Chained hash of record lastSeq, and of record firstSeq - 1. */
  lastHash: string;
  prevHash: string;
  segmentFirstSeq: number;
  offset: number;
  data: Buffer;
}

/** A run of whole log lines read back from one segment file (`Log#readLines`). */
export interface LineRun {
  firstSeq: number;
  lastSeq: number;
  /** Chained hash of record firstSeq - 1 and of record lastSeq. */
  prevHash: string;
  lastHash: string;
  segmentFirstSeq: number;
  /** Byte offset of the first line in its segment. */
  offset: number;
  bytes: Buffer;
}

/**
 * An open, writable log. Create with `Log.open`; one instance per data folder (hold the lock).
 */
export class Log {
  private headSeqValue: number;
  private durableSeqValue: number;
  private lastHash: string;
  /** Chained hash of record durableSeq (the checkpoint candidate). */
  private durableHash: string;
  private metaValue: LogMeta;
  /** Lines (UTF-8, newline included) waiting for the next group commit, in seq order. */
  private pending: Buffer[] = [];
  /** Byte length of each pending line (same order), so a flush can locate every record it writes. */
  private pendingBytes: number[] = [];
  private pendingFirstSeq = 0;
  private flushing = false;
  private waiters: Waiter[] = [];
  private failed: Error | null = null;
  /** The segment file taking appends (segment.ts). */
  private readonly segment: ActiveSegment;
  private readonly logDir: string;
  /** Counters for tests and benchmarks. */
  readonly stats = { fsyncs: 0, batches: 0, records: 0 };
  /**
   * Called after every group commit with the durable head's seq and chained hash: derived
   * indexes that may only persist what is on disk (the search index's shards) follow it.
   */
  onDurable: ((seq: number, hash: string) => void) | null = null;

  /**
   * Replication's gate (issue 35, `sync` mode): called for each batch right after it is written,
   * while its fdatasync runs, and before it is marked durable; when it returns a promise, the
   * batch becomes durable (readable, acknowledged) only once both it and the fdatasync resolved,
   * and appends meanwhile gather into the next batch. So the bucket may hold a batch that a crash
   * took from the local disk (its fdatasync unfinished): the leader's start pulls it back
   * (leader.ts). A
   * rejection with a ServiceError (the leadership was lost: 503 REPLICA_FENCED) refuses every
   * later write and read past the durable head with that error; the process goes on serving
   * what is durable. Any other rejection is a failed write (onFatal).
   */
  replicate: ((batch: WrittenBatch) => Promise<void> | undefined) | null = null;

  /**
   * Bounded waiting (issue 35, `sync` mode): a `sync()` still waiting after `ms` rejects with
   * `error()` (503 REPLICA_UNAVAILABLE: the object store did not confirm it), while the batch
   * itself stays queued and may still become durable. Null: wait as long as the disk takes.
   */
  ackTimeout: { ms: number; error: () => Error } | null = null;
  private ackSweep: NodeJS.Timeout | null = null;

  private constructor(
    readonly dataDir: string,
    meta: LogMeta,
    replay: ReplayResult,
    private readonly opts: LogOptions,
    /** Record locations (and the vouched map), kept for read-back and erasure. */
    readonly records: SegmentRecords,
  ) {
    this.logDir = join(dataDir, LOG_DIR);
    this.segment = new ActiveSegment(this.logDir, opts.segmentBytesMax ?? SEGMENT_BYTES_MAX);
    this.metaValue = meta;
    this.headSeqValue = replay.lastSeq;
    this.durableSeqValue = replay.lastSeq;
    this.lastHash = replay.lastHash;
    this.durableHash = replay.lastHash;
    this.replayWorkers = replay.workers;
  }

  /** Worker threads the opening replay checked segments on (0: it ran on the main thread only). */
  readonly replayWorkers: number;

  /** The active segment's append handle (null before the first batch and after close). */
  private get handle(): fsp.FileHandle | null {
    return this.segment.handle;
  }

  /** Seq of the active segment's first record. */
  private get segmentFirstSeq(): number {
    return this.segment.firstSeq;
  }

  /** Bytes written to the active segment; the flush adds each batch it wrote. */
  private get segmentBytes(): number {
    return this.segment.bytes;
  }

  private set segmentBytes(bytes: number) {
    this.segment.bytes = bytes;
  }

  /**
   * Opens (creating when absent) the log in `dataDir` and replays it through `onRecord`.
   * Input: the data folder; `onRecord(record, payloadJson)` is called for each record in seq
   * order before the promise resolves. Output: the open Log.
   * Throws LogCorruptError (damage other than a torn tail) or StoreStateError (metadata missing
   * while segments exist, unreadable metadata, a log that ends before its checkpoint or was
   * replaced, or a folder made by `backup`, which is installed with `restore`).
   */
  static async open(dataDir: string, onRecord: RecordVisitor, opts: LogOptions = {}): Promise<Log> {
    const logDir = join(dataDir, LOG_DIR);
    let meta = readMeta(dataDir);
    const hasSegments = listSegments(logDir).some((s) => s.sizeBytes > 0);
    if (!meta) {
      if (hasSegments) {
        throw new StoreStateError(
          `${join(dataDir, 'meta.json')} is missing but the log has records. Restore meta.json from a ` +
            'backup of this folder, or give the log a new lineage with node dist/cli.js repair --new-lineage ' +
            '(every client cursor will then get 409 and reread).',
        );
      }
      if (opts.readOnly) throw new StoreStateError(`${dataDir} holds no Agent Forum log`);
      mkdirSync(logDir, { recursive: true });
      fsyncDirSync(dataDir);
      meta = writeNewMeta(dataDir, new Date().toISOString());
    }
    if (meta.backup) {
      throw new StoreStateError(
        `${dataDir} is a copy made by "backup" (${meta.backup.created}, records 1..${meta.backup.lastSeq}). Serving it as it is ` +
          `would reuse record positions of the live archive ${meta.originId}. Install it into a data folder with ` +
          `node dist/cli.js --data-dir DATA_DIR restore ${dataDir} (it gets a new originId, so every client rereads).`,
      );
    }
    mkdirSync(logDir, { recursive: true });
    if (!opts.readOnly) {
      // Holding the lock, no other process writes here: a temporary file is an interrupted erasure's.
      for (const name of removeStaleTempFiles(logDir)) logger.warn('temp_file_removed', `removed ${join(logDir, name)}, a temporary file left by an interrupted erasure`);
    }
    // Without a caller's record store the log keeps one of its own (no cache): erasure and
    // proven reads need every record's location.
    const records = opts.records ?? new SegmentRecords(logDir, 0);
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
        if (replay.torn.complete) await h.write('\n', replay.torn.offset + replay.torn.bytes);
        else await h.truncate(replay.torn.offset);
        await h.sync();
      } finally {
        await h.close();
      }
      if (replay.torn.complete) opts.onComplete?.(replay.torn.file, replay.torn.offset + replay.torn.bytes);
      else opts.onTruncate?.(replay.torn.file, replay.torn.offset, replay.torn.bytes);
    }
    for (const [seq, hash] of replay.vouched) records.vouch(seq, hash);
    const log = new Log(dataDir, meta, replay, opts, records);
    if (!opts.readOnly) {
      await log.writeCheckpointUnlessNoSpace();
      await log.completePendingErasures();
    }
    return log;
  }

  /**
   * Finishes erasures a crash interrupted (the erasure contract): every target an erase record
   * names (the vouched map: from the state snapshot and this replay) whose line is still the
   * original is erased now, before serving. Costs one 14-byte read per erased record. A target
   * that cannot be erased (its line does not carry the named hash) is logged, not thrown: the
   * record stays as it is and the start goes on.
   */
  private async completePendingErasures(): Promise<void> {
    const pending: EraseTarget[] = [];
    for (const [seq, hash] of this.records.locations.vouched) if (seq <= this.durableSeqValue && !this.records.isTombstone(seq)) pending.push({ seq, hash });
    for (const t of pending) {
      try {
        this.erasedAtOpenValue.push(...(await eraseRecords(this.eraseHost(), [t])));
      } catch (err) {
        logger.error('erase_not_completed', `an interrupted erasure of record ${t.seq} could not be completed: ${(err as Error).message}`, { seq: t.seq });
      }
    }
    if (this.erasedAtOpenValue.length > 0) logger.warn('recovered', `recovered: completed an interrupted erasure of records ${this.erasedAtOpenValue.join(', ')}`);
  }

  /** Seqs whose erasure an earlier crash interrupted and this open completed (derived indexes drop them). */
  get erasedAtOpen(): readonly number[] {
    return this.erasedAtOpenValue;
  }
  private readonly erasedAtOpenValue: number[] = [];

  /**
   * Called with the seqs about to be erased, before any segment is rewritten: derived files that
   * hold their text (the search index's shards) drop them here (the erasure contract).
   */
  onErase: ((seqs: readonly number[]) => void) | null = null;

  /** The next batch rolls over to a new segment (set while erasure seals the active one). */
  private sealRequested = false;
  private erasing: Promise<unknown> = Promise.resolve();

  /**
   * Erases records (issue 25; the erasure contract, store/erase.ts): replaces each target's line
   * by a tombstone of the same length carrying the same hash. Precondition: the
   * `moderation.erase` record naming exactly these `{seq, hash}` targets was appended and is
   * durable (`await sync()`). Erasures run one at a time. Rejects with Error (nothing changed)
   * for a target that is not vouched for or does not carry that hash; on a file-system error the
   * segment is the old or the new file, and the next start completes the erasure.
   */
  erase(targets: ReadonlyArray<EraseTarget>): Promise<void> {
    const run = this.erasing.then(async () => {
      await this.sync();
      await eraseRecords(this.eraseHost(), targets);
    });
    this.erasing = run.catch(() => undefined);
    return run;
  }

  private eraseHost(): EraseHost {
    return {
      logDir: this.logDir,
      records: this.records,
      durableSeq: this.durableSeqValue,
      sealSegment: (first) => this.sealSegment(first),
      beforeRewrite: (seqs) => {
        try {
          this.onErase?.(seqs);
        } catch (err) {
          logger.error('erase_hook', `dropping derived copies of erased records failed: ${(err as Error).message}`);
        }
      },
    };
  }

  /**
   * Resolves once the segment starting at `segmentFirstSeq` takes no more writes: a sealed
   * segment at once; the active one after the next batch is made to roll over to a new segment
   * and any write to it in progress has finished.
   */
  private async sealSegment(segmentFirstSeq: number): Promise<void> {
    if (segmentFirstSeq !== this.segmentFirstSeq) return;
    this.sealRequested = true;
    while (this.flushing && this.segmentFirstSeq === segmentFirstSeq) await new Promise((r) => setImmediate(r));
  }

  /** The log's metadata (originId, checkpoint); replaced, never mutated, when it changes. */
  get meta(): LogMeta {
    return this.metaValue;
  }

  /** The log's creation UUID (part 2 Cursor `originId`). */
  get originId(): string {
    return this.metaValue.originId;
  }

  /**
   * Records the durable head as meta.json's checkpoint (see meta.ts), when it moved. Called at
   * open, after the first durable batch of a new log, when a segment is closed (from the flush
   * loop, so only the next batch waits for it), and at close. One small atomic file write that
   * does not block the event loop; rejects on a file-system error.
   */
  private async writeCheckpoint(): Promise<void> {
    const seq = this.durableSeqValue;
    if (seq === 0 || this.metaValue.checkpoint?.seq === seq) return;
    const meta: LogMeta = { ...this.metaValue, checkpoint: { seq, hash: this.durableHash } };
    await writeMetaAsync(this.dataDir, meta);
    this.metaValue = meta;
  }

  /** writeCheckpoint, where a full disk is reported to `onCheckpointNoSpace` instead of thrown. */
  private async writeCheckpointUnlessNoSpace(): Promise<void> {
    try {
      await this.writeCheckpoint();
    } catch (err) {
      if (!isNoSpaceError(err)) throw err;
      this.opts.onCheckpointNoSpace?.(err as Error);
    }
  }

  /** False after a write failed or for a read-only log: nothing may be derived from its head then. */
  get writable(): boolean {
    return this.failed === null && this.opts.readOnly !== true;
  }

  /** Chained hash of the last record appended (64 hex; zeros for an empty log). */
  get headHash(): string {
    return this.lastHash;
  }

  /** Highest seq appended (possibly not yet durable). */
  get headSeq(): number {
    return this.headSeqValue;
  }

  /** Highest seq known to be on disk (fdatasync'd). Reads and feeds never go past it. */
  get durableSeq(): number {
    return this.durableSeqValue;
  }

  /**
   * Appends one record. Synchronous: assigns `seq`, serialises and chains the record, and queues
   * it for the next group commit. The caller must `await sync()` before acknowledging.
   * Input: type (`area.verb`), a JSON-serialisable payload, time in ms. Output: the record and
   * its payload's canonical JSON as written (the text the line is built around).
   * Throws when a previous write failed (the process is expected to exit then).
   */
  append<P>(type: string, payload: P, timeMs: number): { record: LogRecord<P>; payloadJson: string } {
    if (this.failed) throw this.failed;
    const { record, payloadJson, line, hash } = this.encodeNext(type, payload, timeMs);
    const seq = record.seq;
    if (this.pending.length === 0) this.pendingFirstSeq = seq;
    this.pending.push(line);
    this.pendingBytes.push(line.length);
    this.records.appended(seq, { payloadJson, time: record.time, type });
    // The erasure contract: an erase record vouches for the tombstones it will leave.
    if (type === ERASE_RECORD_TYPE) for (const t of eraseTargetsOf(payload)) this.records.vouch(t.seq, t.hash);
    this.lastHash = hash;
    this.headSeqValue = seq;
    if (!this.flushing) {
      this.flushing = true;
      // Let every append of the current tick join this batch before writing.
      queueMicrotask(() => void this.flushLoop());
    }
    return { record, payloadJson };
  }

  /**
   * Encodes the record that `append` would write next (seq headSeq + 1, chained to the head),
   * without appending it: a leader's start places its `replication.epoch` record in the bucket
   * first and appends the same bytes with `appendProven` only once the bucket took them
   * (replica/leader.ts). Input as `append`. Output: the record, its payload's canonical JSON, the
   * line's bytes (newline included) and its chained hash. Throws Error for an invalid type.
   */
  encodeNext<P>(type: string, payload: P, timeMs: number): { record: LogRecord<P>; payloadJson: string; line: Buffer; hash: string } {
    if (!RECORD_TYPE.test(type)) throw new Error(`invalid record type ${JSON.stringify(type)}`);
    const seq = this.headSeqValue + 1;
    const record: LogRecord<P> = { seq, time: new Date(timeMs).toISOString(), type, payload };
    // The payload's text stands alone (the index keeps it); the record text is built around it.
    const payloadJson = stableStringify(payload);
    const body = recordJson(payloadJson, seq, record.time, type);
    // Encoded to UTF-8 once: the hash is taken over the bytes that are written (issue 39).
    const { line, hash } = encodeRecordLine(this.lastHash, body);
    return { record, payloadJson, line, hash };
  }

  /**
   * Where a batch of `bytes` appended now would lie: its segment's first seq and its byte offset
   * there, by the same rule the group commit applies (a full or sealed segment rolls over to a new
   * one named by the batch's first seq). Exact only while nothing else is pending and no erasure
   * runs (`quiesce` first, writes held): a leader's start names the epoch record's place in the
   * chunk header before appending it.
   */
  nextPosition(bytes: number): { segmentFirstSeq: number; offset: number } {
    const seq = this.headSeqValue + 1;
    if (this.pending.length > 0) throw new Error('nextPosition: records are pending');
    if (this.segment.bytes === 0 || this.segment.isFull(bytes, this.sealRequested)) return { segmentFirstSeq: seq, offset: 0 };
    return { segmentFirstSeq: this.segment.firstSeq, offset: this.segment.bytes };
  }

  /** Resolves once no erasure runs and every record appended so far is durable (see `nextPosition`). */
  async quiesce(): Promise<void> {
    await this.erasing.catch(() => undefined);
    await this.sync();
  }

  /**
   * Appends a line proven elsewhere (a follower applying the leader's chunks; issue 36): the bytes
   * are taken as they are — the caller proved them (format.ts `proveLines`: framing, seq, hash
   * chain from this log's head). Input: the whole line (newline included), the record, its
   * payload's canonical JSON and the line's chained hash. Throws Error when the record is not the
   * next seq or the line does not link (a programming error), or when a previous write failed.
   */
  appendProven(line: Buffer, record: LogRecord, payloadJson: string, hash: string): void {
    if (this.failed) throw this.failed;
    if (record.seq !== this.headSeqValue + 1) throw new Error(`record ${record.seq} does not follow the log's head ${this.headSeqValue}`);
    if (this.pending.length === 0) this.pendingFirstSeq = record.seq;
    this.pending.push(line);
    this.pendingBytes.push(line.length);
    this.records.appended(record.seq, record.erased === true ? { payloadJson: 'null', time: record.time, type: record.type, erased: true } : { payloadJson, time: record.time, type: record.type });
    if (record.type === ERASE_RECORD_TYPE && record.erased !== true) for (const t of eraseTargetsOf(record.payload)) this.records.vouch(t.seq, t.hash);
    this.lastHash = hash;
    this.headSeqValue = record.seq;
    if (!this.flushing) {
      this.flushing = true;
      queueMicrotask(() => void this.flushLoop());
    }
  }

  /** Resolves once every record appended so far is durable; rejects if a flush failed. */
  sync(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const seq = this.headSeqValue;
    if (seq <= this.durableSeqValue) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push({ seq, resolve, reject, since: performance.now() });
      if (this.ackTimeout !== null && this.ackSweep === null) this.startAckSweep(this.ackTimeout.ms);
    });
  }

  /** Rejects the waiters older than `ms` (see `ackTimeout`), every ms/4, while there are waiters. */
  private startAckSweep(ms: number): void {
    this.ackSweep = setInterval(() => {
      const timeout = this.ackTimeout;
      if (this.waiters.length === 0 || timeout === null) {
        clearInterval(this.ackSweep!);
        this.ackSweep = null;
        return;
      }
      const oldest = performance.now() - timeout.ms;
      if (this.waiters[0]!.since > oldest) return;
      const still: Waiter[] = [];
      for (const w of this.waiters) (w.since <= oldest ? w.reject(timeout.error()) : still.push(w));
      this.waiters = still;
    }, Math.max(10, Math.floor(ms / 4)));
    this.ackSweep.unref();
  }

  /**
   * Reads back the lines of records `fromSeq`..`toSeq` (durable ones) that lie in the segment of
   * `fromSeq`, at most about `maxBytes` (always at least one line): what replication ships
   * (issue 35). Output: the run, or null when `fromSeq` is not durable. Throws Error when a
   * segment file cannot be read.
   */
  async readLines(fromSeq: number, toSeq: number, maxBytes: number): Promise<LineRun | null> {
    const last = Math.min(toSeq, this.durableSeqValue);
    const locations = this.records.locations;
    const first = locations.locate(fromSeq);
    if (first === undefined || fromSeq > last) return null;
    let end = fromSeq;
    let endLoc = first;
    for (let s = fromSeq + 1; s <= last; s++) {
      const loc = locations.locate(s)!;
      if (loc.segmentFirstSeq !== first.segmentFirstSeq || loc.offset + loc.length + HASH_SUFFIX_LENGTH + 1 - first.offset > maxBytes) break;
      end = s;
      endLoc = loc;
    }
    const size = endLoc.offset + endLoc.length + HASH_SUFFIX_LENGTH + 1 - first.offset;
    const bytes = Buffer.allocUnsafe(size);
    const h = await fsp.open(join(this.logDir, segmentName(first.segmentFirstSeq)), 'r');
    try {
      let got = 0;
      while (got < size) {
        const { bytesRead } = await h.read(bytes, got, size - got, first.offset + got);
        if (bytesRead === 0) throw new Error(`${segmentName(first.segmentFirstSeq)} ends before record ${end}`);
        got += bytesRead;
      }
    } finally {
      await h.close();
    }
    const prevHash = fromSeq === 1 ? GENESIS_HASH : this.records.storedHashOf(fromSeq - 1)!;
    const lastHash = storedHashOfTail(bytes, size - 1);
    if (lastHash === null) throw new Error(`record ${end} does not end where it was located`);
    return { firstSeq: fromSeq, lastSeq: end, prevHash, lastHash, segmentFirstSeq: first.segmentFirstSeq, offset: first.offset, bytes };
  }

  /**
   * Refuses every later append, and every read or acknowledgement past the durable head, with
   * `err` (a ServiceError: 503 REPLICA_FENCED once another server leads the replica bucket; issue
   * 35). What is durable stays readable. No effect after an earlier failure.
   */
  refuse(err: ServiceError): void {
    if (this.failed) return;
    this.failed = err;
    for (const w of this.waiters) w.reject(err);
    this.waiters = [];
  }

  /** Segments and their durable sizes; a consistent backup copies exactly these prefixes. */
  durableSegments(): SegmentInfo[] {
    return listSegments(this.logDir).map((s) =>
      s.firstSeq === this.segmentFirstSeq ? { ...s, sizeBytes: this.segmentBytes } : s,
    );
  }

  private async flushLoop(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const lines = this.pending;
        const lineBytes = this.pendingBytes;
        const firstSeq = this.pendingFirstSeq;
        const batchHash = this.lastHash; // appends are synchronous: the hash of the batch's last line
        this.pending = [];
        this.pendingBytes = [];
        const data = lines.length === 1 ? lines[0]! : Buffer.concat(lines);
        await this.ensureSegment(firstSeq, data.length);
        const handle = this.handle!;
        const prevHash = this.durableHash;
        const segmentFirstSeq = this.segmentFirstSeq;
        const segmentOffset = this.segmentBytes;
        // The write only copies into the page cache (microseconds), so it is done synchronously;
        // only fdatasync, which waits for the disk, goes to the thread pool. This saves a
        // thread-pool round trip per batch, which is most of the latency at low disk load.
        let written = 0;
        while (written < data.length) written += writeSync(handle.fd, data, written, data.length - written);
        const syncStarted = performance.now();
        const synced = handle.datasync().then(() => performance.now() - syncStarted);
        // sync replication: the chunk PUT runs alongside the fdatasync (issue 35); the batch is
        // durable (readable, acknowledged) only once both are done.
        const gate = this.replicate?.({ firstSeq, lastSeq: firstSeq + lines.length - 1, lastHash: batchHash, prevHash, segmentFirstSeq, offset: segmentOffset, data });
        const [fsyncMs] = await Promise.all([synced, gate]);
        let offset = this.segmentBytes;
        for (let i = 0; i < lineBytes.length; i++) {
          this.records.located(firstSeq + i, this.segmentFirstSeq, offset, lineBytes[i]! - HASH_SUFFIX_LENGTH - 1);
          offset += lineBytes[i]!;
        }
        this.segmentBytes += data.length;
        this.durableSeqValue = firstSeq + lines.length - 1;
        this.durableHash = batchHash;
        this.stats.fsyncs++;
        this.stats.batches++;
        this.stats.records += lines.length;
        this.opts.onFsync?.(lines.length, data.length, fsyncMs);
        this.releaseWaiters();
        try {
          this.onDurable?.(this.durableSeqValue, this.durableHash);
        } catch (err) {
          // A derived index failing must never fail the log (it is rebuilt from the log).
          logger.error('after_group_commit', `after a group commit: ${(err as Error).message}`);
        }
        // A new log gets its first checkpoint as soon as it has a durable record.
        if (!this.metaValue.checkpoint) await this.writeCheckpoint();
      }
    } catch (err) {
      if (err instanceof ServiceError) {
        // Replication lost the leadership (Log#replicate): nothing more is acknowledged or shown.
        this.failed = err;
        for (const w of this.waiters) w.reject(err);
        this.waiters = [];
        return;
      }
      // After a failed write or fsync the file's contents are unknown (fsyncgate): refuse every
      // further write and let the process restart and recover from what is really on disk.
      this.failed = new Error(`log write failed: ${(err as Error).message}`);
      for (const w of this.waiters) w.reject(this.failed);
      this.waiters = [];
      this.opts.onFatal?.(this.failed);
    } finally {
      this.flushing = false;
    }
  }

  private releaseWaiters(): void {
    if (this.waiters.length === 0) return;
    const durable = this.durableSeqValue;
    const still: Waiter[] = [];
    for (const w of this.waiters) (w.seq <= durable ? w.resolve() : still.push(w));
    this.waiters = still;
  }

  /** Opens the current segment, or rolls over to a new one named by `firstSeq` when full. */
  private async ensureSegment(firstSeq: number, batchBytes: number): Promise<void> {
    const full = this.segment.isFull(batchBytes, this.sealRequested);
    if (this.segment.handle && !full) return;
    this.sealRequested = false;
    // Closing a full segment: record that the log reaches its last record, so a later loss of
    // the segments after it cannot go unnoticed at startup.
    if (full) await this.writeCheckpoint();
    await this.segment.open(firstSeq, full);
  }

  /**
   * Waits for pending writes, records the checkpoint (unless read-only, failed, or the data folder
   * was removed under us: then there is no log left to protect), then closes the segment.
   */
  async close(): Promise<void> {
    await this.erasing;
    if (!this.failed) await this.sync().catch(() => undefined);
    while (this.flushing) await new Promise((r) => setImmediate(r));
    try {
      if (!this.failed && !this.opts.readOnly && existsSync(this.dataDir)) await this.writeCheckpointUnlessNoSpace();
    } finally {
      await this.segment.close();
      // The record store the log made for itself (no caller's) has read descriptors to close.
      if (this.opts.records === undefined) this.records.close();
    }
  }
}
