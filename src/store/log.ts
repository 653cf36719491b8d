/**
 * The writable append-only log: the hash chain over JSONL segment files under `<dataDir>/log/`
 * (one record per line; the files themselves are segment.ts's), open, append, read-back,
 * erasure hooks and the checkpoint. Replay and recovery live in replay.ts, the batching of
 * appends into one fdatasync in group-commit.ts.
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
 * A log that follows a replica bucket (`followsSegments`; issue 50) rolls over only where the
 * leader's segments begin (`startSegmentAt`), never by its own size or for an erasure.
 *
 * Writes use group commit (group-commit.ts): `append` assigns the next `seq` synchronously and
 * queues the line; one flush writes every queued line and calls fdatasync once; appends that
 * arrive while a flush runs go into the next one. `sync()` resolves when everything appended so
 * far is durable, and callers acknowledge a write only after it resolves.
 */
import { existsSync, fdatasyncSync, mkdirSync } from 'node:fs';
import type { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import stableStringify from 'fast-json-stable-stringify';
import { LONE_WRITE_SYNC_MAX_US_DEFAULT, SEGMENT_BYTES_MAX, SEGMENT_ZERO_AHEAD_BYTES } from '../constants.js';
import { StoreStateError } from './errors.js';
import { performance } from 'node:perf_hooks';
import { fsyncDirSync, isNoSpaceError, removeStaleTempFiles } from './fsutil.js';
import { ActiveSegment, listSegments, type SegmentInfo } from './segment.js';
import type { ServiceError } from '../errors.js';
import { eraseRecords, type EraseHost } from './erase.js';
import { logger } from '../logger.js';
import { readMeta, writeMetaAsync, writeNewMeta, type LogMeta } from './meta.js';
import { SegmentRecords } from './records.js';
import { GroupCommit, type Batch } from './group-commit.js';
import { readLineRun, type LineRun, type WrittenBatch } from './line-runs.js';
import { TIMELINE_ON, timelineMark } from '../timeline.js';
import { LOG_DIR, recoverLog, type RecordVisitor, type ReplayResult } from './replay.js';
import {
  ERASE_RECORD_TYPE,
  HASH_SUFFIX_LENGTH,
  encodeRecordLine,
  eraseTargetsOf,
  recordJson,
  type EraseTarget,
  type LogRecord,
} from './record-format.js';

export { LOG_DIR, assertReachesCheckpoint, replaySegments, segmentDataBytes, type RecordVisitor, type ReplayResult } from './replay.js';


/** Options of `Log.open`. */
export interface LogOptions {
  /** Segment roll-over size in bytes (default SEGMENT_BYTES_MAX). */
  segmentBytesMax?: number;
  /** Bytes of zeros a write past the active segment's end extends it by (default SEGMENT_ZERO_AHEAD_BYTES; 0: the file grows with each write; segment.ts ActiveSegment). */
  segmentZeroAheadBytes?: number;
  /** Free bytes the zeros written ahead must leave under the data folder (FORUM_MIN_FREE_BYTES; default 0). */
  minFreeBytes?: number;
  /** A lone write syncs on the main thread only after a last fdatasync of at most this many ms (default LONE_WRITE_SYNC_MAX_US_DEFAULT; 0: never; group-commit.ts `isLoneWrite`). */
  loneWriteSyncMaxMs?: number;
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
export type { LineRun, WrittenBatch } from './line-runs.js';

/** Record types are lower-case tokens such as `message.create` (checked on append). */
const RECORD_TYPE = /^[a-z0-9_.-]{1,60}$/;

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
  /** The group commit: queued lines, waiters, failure (group-commit.ts). */
  private readonly commit: GroupCommit;
  /** The segment file taking appends (segment.ts). */
  private readonly segment: ActiveSegment;
  private readonly logDir: string;
  /** Counters for tests and benchmarks. */
  readonly stats = { fsyncs: 0, batches: 0, records: 0, loneFsyncs: 0 };
  /**
   * Called after every group commit with the durable head's seq and chained hash: derived
   * indexes that may only persist what is on disk (the search index's shards) follow it.
   */
  onDurable: ((seq: number, hash: string) => void) | null = null;

  /**
   * Called after every group commit, before `onDurable`, with the seq of the batch's first record
   * and the chained hash (64 hex) of each of its records, in seq order: the hashes the appends
   * computed over the very bytes written (or, for `appendProven`, the hashes the caller proved),
   * so the Merkle tree (merkle-tree.ts `feed`) takes its leaves without reading the lines back.
   * The array is the log's own and is not changed afterwards. Must not throw (logged if it does).
   */
  onDurableHashes: ((firstSeq: number, hashes: readonly string[]) => void) | null = null;

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

  /** Requests the server has begun so far (a growing count, App#requestsBegun), or null without a server: the lone-write rule's input (group-commit.ts `isLoneWrite`). */
  set requestsBegun(count: (() => number) | null) {
    this.commit.requestsBegun = count;
  }

  /**
   * Bounded waiting (issue 35, `sync` mode): a `sync()` still waiting after `ms` rejects with
   * `error()` (503 REPLICA_UNAVAILABLE: the object store did not confirm it), while the batch
   * itself stays queued and may still become durable. Null: wait as long as the disk takes.
   */
  get ackTimeout(): { ms: number; error: () => Error } | null {
    return this.commit.ackTimeout;
  }

  set ackTimeout(timeout: { ms: number; error: () => Error } | null) {
    this.commit.ackTimeout = timeout;
  }

  private constructor(
    readonly dataDir: string,
    meta: LogMeta,
    replay: ReplayResult,
    private readonly opts: LogOptions,
    /** Record locations (and the vouched map), kept for read-back and erasure. */
    readonly records: SegmentRecords,
  ) {
    this.logDir = join(dataDir, LOG_DIR);
    this.segment = new ActiveSegment(this.logDir, opts.segmentBytesMax ?? SEGMENT_BYTES_MAX, opts.segmentZeroAheadBytes ?? SEGMENT_ZERO_AHEAD_BYTES, opts.minFreeBytes);
    // A read-only log leaves the zeroed space past its last record in place (replay.ts zeroTail).
    if (replay.zeroTail && opts.readOnly) this.segment.bytes = replay.zeroTail.offset;
    this.metaValue = meta;
    this.headSeqValue = replay.lastSeq;
    this.durableSeqValue = replay.lastSeq;
    this.lastHash = replay.lastHash;
    this.durableHash = replay.lastHash;
    this.replayWorkers = replay.workers;
    this.commit = new GroupCommit(
      (batch) => this.writeBatch(batch),
      (err) => this.opts.onFatal?.(err),
      { syncMaxMs: opts.loneWriteSyncMaxMs ?? LONE_WRITE_SYNC_MAX_US_DEFAULT / 1000, replicating: () => this.replicate !== null },
    );
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
    const replay = await recoverLog(dataDir, meta, records, onRecord, opts);
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
        this.erasedAtOpenValue.push(...(await this.eraseNow([t])));
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
  /** The log follows a replica bucket's segments (`followsSegments`): no roll-over by size or for an erasure. */
  private following = false;
  /**
   * While an erasure rewrites the active segment in place (its append handle closed; `sealSegment`):
   * resolves when the rewrite is over, and the next batch waits for it before reopening the file.
   */
  private rewritingInPlace: { done: Promise<void>; end: () => void } | null = null;

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
      await this.eraseNow(targets);
    });
    this.erasing = run.catch(() => undefined);
    return run;
  }

  /** eraseRecords on this log; an in-place rewrite of the active segment (`sealSegment`) ends with it. */
  private async eraseNow(targets: ReadonlyArray<EraseTarget>): Promise<number[]> {
    try {
      return await eraseRecords(this.eraseHost(), targets);
    } finally {
      const rewrite = this.rewritingInPlace;
      this.rewritingInPlace = null;
      rewrite?.end();
    }
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
   * and any write to it in progress has finished. A log that follows a replica bucket, or one
   * still opening (no append handle yet: an interrupted erasure completed at open), does not roll
   * over (issue 50: its segments must stay the leader's): once no write is in progress the append
   * handle is closed, and the next batch waits until the erasure has renamed the rewritten file
   * over the segment (`eraseNow`), then reopens it and appends there.
   */
  private async sealSegment(segmentFirstSeq: number): Promise<void> {
    if (segmentFirstSeq !== this.segmentFirstSeq) return;
    if (this.following || this.segment.handle === null) {
      while (this.commit.flushing) await new Promise((r) => setImmediate(r));
      if (segmentFirstSeq !== this.segmentFirstSeq) return; // rolled over meanwhile (startSegmentAt)
      let end!: () => void;
      const done = new Promise<void>((resolve) => (end = resolve));
      this.rewritingInPlace = { done, end };
      await this.segment.close();
      return;
    }
    this.sealRequested = true;
    while (this.commit.flushing && this.segmentFirstSeq === segmentFirstSeq) await new Promise((r) => setImmediate(r));
  }

  /**
   * Makes the next batch roll over to a new segment, so the active one (when it holds anything)
   * is sealed: a replication leader bounds the count of small chunks its bucket holds this way
   * (issue 50; replica/leader.ts compact). Output: the first seq of the segment that will be
   * sealed, or null when the active segment is empty (nothing to seal). Never throws.
   */
  requestSeal(): number | null {
    if (this.segment.bytes === 0) return null;
    this.sealRequested = true;
    return this.segmentFirstSeq;
  }

  /**
   * A replica's next appended record, `seq`, begins a segment on its leader (its chunk header or
   * segment object says so): what is appended so far is made durable, and the next batch rolls
   * over to a new segment named `seq`, so the local segment files stay the leader's (a promoted
   * follower ships chunks naming its own segments). Resolves once that is arranged; rejects when
   * the flush fails. Issue 50: a leader seals segments by chunk count (REPLICA_SEAL_CHUNKS).
   */
  async startSegmentAt(seq: number): Promise<void> {
    await this.sync();
    if (this.segment.bytes > 0 && this.segmentFirstSeq !== seq) this.sealRequested = true;
  }

  /**
   * Issue 50: whether this log follows a replica bucket's segment layout. While on, it never rolls
   * over on its own — not at the size limit (a leader's segment larger than this log's own limit is
   * taken as it is) and not for an erasure (`sealSegment` rewrites the active segment in place) —
   * only where the leader's objects begin a segment (`startSegmentAt`), so its segment files stay
   * the leader's and, once promoted, the chunks it ships name segments the bucket's earlier
   * objects share (a follower that rolled over at its own size, at another record, made every
   * later restore refuse the bucket). A follower turns it on when it starts tailing or takes back
   * records (replica/follower.ts); a leader turns it off once it has taken back what the bucket
   * held, before its first own record (replica/leader.ts placeFence), and rolls over by size
   * again from there. Off by default. Never throws.
   */
  followsSegments(on: boolean): void {
    this.following = on;
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
    return this.commit.failed === null && this.opts.readOnly !== true;
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
    if (this.commit.failed) throw this.commit.failed;
    if (TIMELINE_ON) timelineMark('decided');
    const { record, payloadJson, line, hash } = this.encodeNext(type, payload, timeMs);
    const seq = record.seq;
    this.records.appended(seq, { payloadJson, time: record.time, type });
    // The erasure contract: an erase record vouches for the tombstones it will leave.
    if (type === ERASE_RECORD_TYPE) for (const t of eraseTargetsOf(payload)) this.records.vouch(t.seq, t.hash);
    this.lastHash = hash;
    this.headSeqValue = seq;
    this.commit.enqueue(seq, line, hash);
    if (TIMELINE_ON) timelineMark('appended');
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
    if (this.commit.hasPending) throw new Error('nextPosition: records are pending');
    if (this.segment.bytes === 0 || this.segment.isFull(bytes, this.sealRequested, !this.following)) return { segmentFirstSeq: seq, offset: 0 };
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
    if (this.commit.failed) throw this.commit.failed;
    if (record.seq !== this.headSeqValue + 1) throw new Error(`record ${record.seq} does not follow the log's head ${this.headSeqValue}`);
    this.records.appended(record.seq, record.erased === true ? { payloadJson: 'null', time: record.time, type: record.type, erased: true } : { payloadJson, time: record.time, type: record.type });
    if (record.type === ERASE_RECORD_TYPE && record.erased !== true) for (const t of eraseTargetsOf(record.payload)) this.records.vouch(t.seq, t.hash);
    this.lastHash = hash;
    this.headSeqValue = record.seq;
    this.commit.enqueue(record.seq, line, hash);
  }

  /** Resolves once every record appended so far is durable; rejects if a flush failed. */
  sync(): Promise<void> {
    if (this.commit.failed) return Promise.reject(this.commit.failed);
    const seq = this.headSeqValue;
    if (seq <= this.durableSeqValue) return Promise.resolve();
    return this.commit.waitFor(seq);
  }

  /**
   * Reads back the lines of records `fromSeq`..`toSeq` (durable ones) that lie in the segment of
   * `fromSeq`, at most about `maxBytes` (always at least one line): what replication ships
   * (issue 35). Output: the run, or null when `fromSeq` is not durable. Throws Error when a
   * segment file cannot be read. (line-runs.ts readLineRun.)
   */
  readLines(fromSeq: number, toSeq: number, maxBytes: number): Promise<LineRun | null> {
    return readLineRun(this.logDir, this.records, Math.min(toSeq, this.durableSeqValue), fromSeq, maxBytes);
  }

  /**
   * Refuses every later append, and every read or acknowledgement past the durable head, with
   * `err` (a ServiceError: 503 REPLICA_FENCED once another server leads the replica bucket; issue
   * 35). What is durable stays readable. No effect after an earlier failure.
   */
  refuse(err: ServiceError): void {
    this.commit.fail(err);
  }

  /** Segments and their durable sizes; a consistent backup copies exactly these prefixes. */
  durableSegments(): SegmentInfo[] {
    return listSegments(this.logDir).map((s) =>
      s.firstSeq === this.segmentFirstSeq ? { ...s, sizeBytes: this.segmentBytes } : s,
    );
  }

  /**
   * Writes one group commit's batch (group-commit.ts calls it, one at a time, synchronously when
   * the batch is taken, so `lastHash` is still the hash of its last line), makes it durable —
   * fdatasync and, in sync replication, the bucket's gate — then locates its records, moves the
   * durable head, releases the waiters and notifies `onDurable`. Rejects on a failed write or
   * fdatasync, or with replication's ServiceError.
   */
  private async writeBatch({ lines, lineBytes, hashes, firstSeq, lone }: Batch): Promise<void> {
    const batchHash = this.lastHash; // appends are synchronous: the hash of the batch's last line
    const data = lines.length === 1 ? lines[0]! : Buffer.concat(lines);
    await this.ensureSegment(firstSeq, data.length);
    const handle = this.handle!;
    const prevHash = this.durableHash;
    const segmentFirstSeq = this.segmentFirstSeq;
    const segmentOffset = this.segmentBytes;
    // The write only copies into the page cache (microseconds): done synchronously. fdatasync waits
    // for the disk: on the thread pool, or here for a lone write (issue 56, group-commit.ts `isLoneWrite`).
    this.segment.write(data);
    const syncStarted = performance.now();
    if (TIMELINE_ON) timelineMark('syncIssued');
    if (lone) this.stats.loneFsyncs++;
    const synced = (lone ? Promise.resolve(fdatasyncSync(handle.fd)) : handle.datasync()).then(() => {
      if (TIMELINE_ON) timelineMark('syncDone');
      return performance.now() - syncStarted;
    });
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
    this.commit.release(this.durableSeqValue, fsyncMs);
    try {
      this.onDurableHashes?.(firstSeq, hashes);
    } catch (err) {
      logger.error('after_group_commit', `after a group commit: ${(err as Error).message}`);
    }
    try {
      this.onDurable?.(this.durableSeqValue, this.durableHash);
    } catch (err) {
      // A derived index failing must never fail the log (it is rebuilt from the log).
      logger.error('after_group_commit', `after a group commit: ${(err as Error).message}`);
    }
    // A new log gets its first checkpoint as soon as it has a durable record.
    if (!this.metaValue.checkpoint) await this.writeCheckpoint();
  }

  /**
   * Opens the current segment, or rolls over to a new one named by `firstSeq` when full (by size
   * only while the log does not follow a bucket). Waits first for an erasure rewriting the active
   * segment in place (`sealSegment`).
   */
  private async ensureSegment(firstSeq: number, batchBytes: number): Promise<void> {
    if (this.rewritingInPlace !== null) await this.rewritingInPlace.done;
    const full = this.segment.isFull(batchBytes, this.sealRequested, !this.following);
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
    if (!this.commit.failed) await this.sync().catch(() => undefined);
    while (this.commit.flushing) await new Promise((r) => setImmediate(r));
    try {
      if (!this.commit.failed && !this.opts.readOnly && existsSync(this.dataDir)) await this.writeCheckpointUnlessNoSpace();
    } finally {
      // A segment not cut back to its last record (a failed disk) is cut at the next start.
      await this.segment.close().catch((err: Error) => logger.warn('segment_close', `closing the active segment: ${err.message}`));
      // The record store the log made for itself (no caller's) has read descriptors to close.
      if (this.opts.records === undefined) this.records.close();
    }
  }
}
