/**
 * The application core: the open log, the in-memory state, the clock and the configuration.
 * `commit` is the only way state changes: append (seq assigned, record chained) → apply. The
 * HTTP layer awaits `log.sync()` before it sends any response, so nothing is acknowledged (and
 * nothing appended by others is shown) before it is on disk.
 */
import { Log, type LogOptions, type LogRecord } from './store/log.js';
import { lockDataDir } from './store/lock.js';
import { removeStaleTempFiles } from './store/fsutil.js';
import { logger } from './logger.js';
import { assertNoRestoreInProgress } from './store/archive.js';
import { apply, createState, ErasedRecordError, type State } from './domain/state.js';
import type { ErasedRecord, ModerationPayload } from './domain/moderation/moderation.js';
import { defaultRoom } from './domain/forum/forum.js';
import type { RecordType } from './domain/record-types.js';
import { OffsetClock, systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SegmentRecords } from './store/records.js';
import { segmentName } from './store/segment.js';
import { readMeta } from './store/meta.js';
import { INDEX_DIR, SEARCH_INDEX_DIR, readSnapshot, removeSnapshot, segmentStamps, segmentsChangedSince, snapshotPath, writeSnapshot, type SnapshotHeader } from './store/snapshot.js';
import { SnapshotMismatchError } from './store/errors.js';
import type { ServiceError } from './errors.js';
import { packState, unpackState } from './domain/snapshot.js';
import { DERIVED_KEY_BYTES, SNAPSHOT_AFTER_REPLAY_RECORDS_MIN } from './constants.js';
import { LOG_DIR } from './store/log.js';
import { scanEraseRecordPayloads } from './store/erase.js';
import { SearchIndexer, openSearchIndexes } from './domain/search-indexer.js';
import { randomBytes } from 'node:crypto';
import { loadDerivedKey } from './store/derived-key.js';
import { Integrity } from './integrity.js';
import { Scrub, type ScrubCounters } from './store/scrub.js';
import { Checkpoints, loadCheckpointKey } from './tlog/checkpoints.js';

/**
 * Opens the log and builds its index: from the state snapshot when it matches the log (replaying
 * only the records after it), else by replaying the whole log. A snapshot that does not match —
 * its MAC under `key`, any header field, or the log — is reported as a warning and removed; it is
 * never a reason to refuse to start, and nothing of it is served or written into the next one.
 * Output: the log, the state, the record source, the last record's time, and the seq the replay
 * resumed at (0 for a whole replay). Throws what Log.open throws for a damaged log.
 */
async function openIndexed(
  config: Config,
  logOptions: LogOptions,
  key: Buffer,
): Promise<{ log: Log; state: State; records: SegmentRecords; lastTime: string | null; resumedAt: number }> {
  const dataDir = config.dataDir;
  const fresh = () => {
    const records = new SegmentRecords(join(dataDir, LOG_DIR), config.recordCacheBytes);
    return { records, state: createState(records) };
  };
  let { records, state } = fresh();
  let resume: { seq: number; hash: string } | undefined;
  let lastTime: string | null = null;
  const meta = readMeta(dataDir);
  const snap = meta === null ? null : readSnapshot(dataDir, key);
  const discard = (reason: string) => {
    logger.warn('snapshot_not_used', `state snapshot ${snapshotPath(dataDir)} not used: it ${reason}; replaying the whole log`);
    removeSnapshot(dataDir);
  };
  if (snap !== null && 'reason' in snap) discard(snap.reason);
  else if (snap !== null && meta !== null) {
    const { header } = snap;
    const changed = segmentsChangedSince(join(dataDir, LOG_DIR), header.segments);
    if (header.originId !== meta.originId) discard(`belongs to archive ${header.originId}, not ${meta.originId}`);
    else if (changed !== null) discard(changed);
    else {
      let unpacked = false;
      try {
        state = unpackState(snap.body, records, records.locations);
        unpacked = true;
        const mismatch = snapshotMismatch(header, records);
        if (mismatch !== null) throw new Error(mismatch);
        resume = { seq: header.seq, hash: header.hash };
        lastTime = header.lastTime;
      } catch (err) {
        discard(`${unpacked ? 'does not match the log' : 'does not unpack'} (${(err as Error).message})`);
        records.close();
        ({ records, state } = fresh());
      }
    }
  }
  const visit = (record: LogRecord, payloadJson: string) => {
    apply(state, record, payloadJson);
    lastTime = record.time;
  };
  /**
   * A whole replay that knows every erased record's emptied payload before it meets its tombstone:
   * the payloads come from a byte scan of the log for erasure records (store/erase.ts
   * `scanEraseRecordPayloads`, one read instead of a parsing and hashing pass), then the replay
   * confirms them: the chained erasure records it applies overwrite each seed (an entry they do
   * not name was never used: every tombstone needs a chained erasure record naming it), and one
   * that differs means the log holds an erasure line outside the chain, which is damage.
   */
  const replayKnowingErasures = async () => {
    const erased = scannedErasedPayloads(join(dataDir, LOG_DIR));
    ({ records, state } = fresh());
    for (const e of erased) state.moderation.erased.set(e.seq, e);
    lastTime = null;
    const log = await Log.open(dataDir, visit, { ...logOptions, records });
    for (const e of erased) {
      const chained = state.moderation.erased.get(e.seq);
      if (chained === e) state.moderation.erased.delete(e.seq);
      else if (JSON.stringify(chained) !== JSON.stringify(e)) {
        await log.close();
        records.close();
        throw new Error(`record ${e.seq}: an erasure line outside the hash chain holds another emptied payload than the chained erasure record (run \`verify\`, then \`repair\`)`);
      }
    }
    return { log, state, records, lastTime, resumedAt: 0 };
  };
  try {
    const log = await Log.open(dataDir, visit, { ...logOptions, records, resume });
    return { log, state, records, lastTime, resumedAt: resume?.seq ?? 0 };
  } catch (err) {
    if (err instanceof ErasedRecordError) {
      // A tombstone came before the erasure record that holds its emptied payload (issue 25).
      records.close();
      return replayKnowingErasures();
    }
    if (!(err instanceof SnapshotMismatchError)) throw err;
    discard(`does not match the log (${err.message})`);
    records.close();
    ({ records, state } = fresh());
    lastTime = null;
    try {
      const log = await Log.open(dataDir, visit, { ...logOptions, records });
      return { log, state, records, lastTime, resumedAt: 0 };
    } catch (again) {
      if (!(again instanceof ErasedRecordError)) throw again;
      records.close();
      return replayKnowingErasures();
    }
  }
}

/**
 * Why an unpacked snapshot's header disagrees with its body or with the log, or null when it
 * agrees: its body must locate exactly records 1..seq, in a segment its `segments` stamps cover,
 * and record `seq`, read back from the log, must carry the header's `lastTime` (its chained hash
 * is checked by Log.open when it resumes). Reads one record; throws what reading it throws.
 */
function snapshotMismatch(header: SnapshotHeader, records: SegmentRecords): string | null {
  if (records.locations.count !== header.seq) return `its body locates ${records.locations.count} records, its header says ${header.seq}`;
  const loc = records.locations.locate(header.seq);
  if (loc === undefined || !header.segments.some((st) => st.name === segmentName(loc.segmentFirstSeq))) {
    return `record ${header.seq} lies outside the segments it recorded`;
  }
  const time = records.read(header.seq, false).time;
  if (time !== header.lastTime) return `record ${header.seq} was written at ${time}, its header says ${header.lastTime}`;
  return null;
}

/**
 * The emptied payloads named by the `moderation.erase` lines of the log in `logDir`, unproven
 * (see `scanEraseRecordPayloads`): seeds for a whole replay that meets a tombstone before the
 * record that vouches for it.
 */
function scannedErasedPayloads(logDir: string): ErasedRecord[] {
  const out: ErasedRecord[] = [];
  for (const payload of scanEraseRecordPayloads(logDir)) {
    const list = (payload as Partial<ModerationPayload>).erased;
    if (Array.isArray(list)) out.push(...list);
  }
  return out;
}

/** The open archive and its index; one per data folder (it holds the folder's lock). */
export class App {
  /** Time of the last record, ms; record times never go backwards, so log order is time order. */
  private lastTimeMs = 0;

  private constructor(
    readonly config: Config,
    readonly log: Log,
    readonly state: State,
    readonly clock: Clock,
    private readonly releaseLock: () => Promise<void>,
    /** Record text read back from the log's segment files (bounded cache, FORUM_RECORD_CACHE_MB). */
    readonly records: SegmentRecords,
    /** The key whose HMAC authenticates derived files (store/derived-key.ts). */
    private readonly derivedKey: Buffer,
  ) {}

  /**
   * HTTP requests begun since start (the request listener counts them, src/http/server.ts): the
   * log's lone-write rule reads it (Log#requestsBegun, issue 56).
   */
  requestsBegun = 0;

  /** Damage found in the archive (scrub, proven reads); `/api/status` reports it (src/integrity.ts). */
  readonly integrity = new Integrity();

  /** The background scrub of sealed segments, once started (startScrub), else null. */
  private scrub: Scrub | null = null;

  /**
   * The n-gram search index kept in step with the log, or null when it could not be opened: what
   * every `q` search (messages and knowledge) is handed (domain/indexed-scan.ts; null scans).
   */
  indexer: SearchIndexer | null = null;

  /**
   * The replication leader (issue 35, store/replica/leader.ts), or null when FORUM_REPLICA_URL is
   * unset: `replication status` reads it. Set by startService.
   */
  replication: { status(): unknown; promote(): Promise<unknown>; following(): boolean } | null = null;

  /** True on a read-only follower (issue 36): a feed cursor ahead of its head is lag, answered "not yet" (issue 50). */
  get following(): boolean {
    return this.replication?.following() ?? false;
  }

  /**
   * On a read-only follower (issue 36): the 503 every write gets (FOLLOWER_READ_ONLY, naming the
   * leader), thrown by `commit` before anything is appended, so REST, A2A and MCP writes all meet
   * it. Null on a leader or a server without replication.
   */
  writeRefusal: (() => ServiceError) | null = null;

  /**
   * Applies a record proven from the leader's chain (a follower; store/replica/follower.ts) to the
   * state and the search index, as `commit` does after its append; the caller appended its line
   * with Log#appendProven.
   */
  applyProven(record: LogRecord, payloadJson: string): void {
    apply(this.state, record, payloadJson);
    const t = Date.parse(record.time);
    if (t > this.lastTimeMs) this.lastTimeMs = t;
    // An erased record's text is gone: nothing of it is indexed.
    if (record.erased !== true) this.indexer?.committed(record, payloadJson);
  }

  /** Seeds the emptied payloads a `moderation.erase` record carries, before its tombstones are applied (a follower reading ahead). */
  seedErased(payload: unknown): void {
    const list = (payload as Partial<ModerationPayload> | null)?.erased;
    if (Array.isArray(list)) for (const e of list) this.state.moderation.erased.set(e.seq, e);
  }

  /**
   * Called after every group commit, once the records are durable (after the search index's
   * `durable`): what waits for new records, such as held feed requests (issue 37), follows it. A
   * listener must not throw (the log logs it and goes on).
   */
  readonly afterGroupCommit = new Set<() => void>();

  /**
   * Locks the data folder, replays the log and returns the app. A new log gets the `commons` room.
   * `searchIndex: false` opens no search index (bulk tools; searches then scan).
   * Throws StoreStateError (folder locked, metadata missing) or LogCorruptError (damaged log).
   */
  static async open(config: Config, opts: { clock?: Clock; log?: LogOptions; searchIndex?: boolean } = {}): Promise<App> {
    mkdirSync(config.dataDir, { recursive: true });
    const release = await lockDataDir(config.dataDir);
    try {
      assertNoRestoreInProgress(config.dataDir);
      // Holding the lock, no other process writes here: temporary files are a dead writer's.
      for (const dir of [config.dataDir, join(config.dataDir, INDEX_DIR)]) {
        for (const name of removeStaleTempFiles(dir)) logger.warn('temp_file_removed', `removed ${join(dir, name)}, a temporary file left by an interrupted write`);
      }
      const logOptions: LogOptions = {
        segmentBytesMax: config.segmentBytes,
        loneWriteSyncMaxMs: config.loneWriteSyncMaxUs / 1000,
        segmentZeroAheadBytes: config.segmentZeroAheadBytes,
        minFreeBytes: config.minFreeBytes,
        replayWorkersBytesMin: config.replayWorkersBytesMin,
        onCheckpointNoSpace: (err) =>
          logger.warn('checkpoint_not_written', `the disk is full: the checkpoint in meta.json was not updated (${err.message}); it is written again once space is free`),
        onTruncate: (file, offset, bytes) =>
          logger.warn('recovered', `recovered: dropped an incomplete final line (${bytes} bytes) at ${file}:${offset}; it was never acknowledged`),
        onComplete: (file, offset) =>
          logger.warn('recovered', `recovered: the final record at ${file} was whole but lacked its newline; kept it and wrote the newline at offset ${offset}`),
        ...opts.log,
      };
      let key: Buffer;
      try {
        key = loadDerivedKey(join(config.dataDir, INDEX_DIR), (line) => logger.warn('derived_key', line));
      } catch (err) {
        // Without its key no derived file can be trusted: a key of this run only rebuilds them.
        logger.warn('derived_key', `the derived-file key could not be read or written (${(err as Error).message}); the snapshot and search index are rebuilt from the log`);
        key = randomBytes(DERIVED_KEY_BYTES);
      }
      const opened = await openIndexed(config, logOptions, key);
      const { log, state, records } = opened;
      if (log.replayWorkers > 0) logger.info('replay_workers', `whole replay: segments checked on ${log.replayWorkers} worker thread(s)`, { workers: log.replayWorkers });
      const clock = opts.clock ?? (config.testClock ? new OffsetClock() : systemClock);
      const app = new App(config, log, state, clock, release, records, key);
      log.requestsBegun = () => app.requestsBegun;
      log.onDurable = (seq, hash) => {
        app.indexer?.durable(seq, hash);
        for (const listener of app.afterGroupCommit) listener();
      };
      app.lastTimeMs = opened.lastTime === null ? 0 : Date.parse(opened.lastTime);
      if (log.headSeq === 0) {
        app.commit('room.create', defaultRoom(app.nowIso()));
        await log.sync();
      }
      if (opts.searchIndex !== false) app.openSearchIndex();
      // A long replay is not repeated at the next start (a crash included).
      if (!logOptions.readOnly && log.headSeq - opened.resumedAt >= SNAPSHOT_AFTER_REPLAY_RECORDS_MIN) app.saveSnapshot();
      return app;
    } catch (err) {
      await release().catch(() => undefined);
      throw err;
    }
  }

  /** Current time in ms, never earlier than the last record's time. */
  now(): number {
    const t = this.clock.now();
    return t > this.lastTimeMs ? t : this.lastTimeMs;
  }

  /** now() as an ISO 8601 UTC timestamp ending in `Z` (part 2). */
  nowIso(): string {
    return new Date(this.now()).toISOString();
  }

  /** The seq the next committed record will get (ids derive from it). */
  nextSeq(): number {
    return this.log.headSeq + 1;
  }

  /** The position the next committed record will get: its seq, offset after a change of writer (domain/positions.ts); ids derive from it. */
  nextPosition(): number {
    return this.state.positions.positionOf(this.log.headSeq + 1);
  }

  /**
   * Appends a record and applies it to the state, synchronously. The caller must let the HTTP
   * layer (or its own code) await `log.sync()` before acknowledging.
   * Input: record type (one of the catalogue, domain/record-types.ts) and payload; `timeMs`
   * defaults to now(). Output: the record.
   */
  commit<P>(type: RecordType, payload: P, timeMs: number = this.now()): LogRecord<P> {
    if (this.writeRefusal !== null) throw this.writeRefusal();
    const { record, payloadJson } = this.log.append(type, payload, timeMs);
    this.lastTimeMs = timeMs;
    apply(this.state, record, payloadJson);
    this.indexer?.committed(record, payloadJson);
    return record;
  }

  /**
   * Opens the n-gram search indexes under data/index/search (messages; knowledge in its knowledge
   * folder), keeps the shards that match the log and
   * starts adding the documents it lacks, in slices, without waiting (store/search,
   * domain/search-indexer.ts). An index that cannot be opened is logged, and searches scan.
   */
  private openSearchIndex(): void {
    try {
      const searchDir = join(this.config.dataDir, INDEX_DIR, SEARCH_INDEX_DIR);
      const indexes = openSearchIndexes(searchDir, {
        shardDocsMax: this.config.searchShardDocs,
        key: this.derivedKey,
        onDrop: (file, reason) => logger.warn('search_index', `search index: dropped ${file}: ${reason}; its documents are added again from the log`),
        mergeFactor: this.config.searchMergeFactor,
        onMergeError: (message) => logger.warn('search_index', `search index: a shard merge failed (${message}); merging stays off until the next start`),
      });
      const log = this.log;
      const indexer = new SearchIndexer(indexes, this.config.searchShardDocs, this.state, this.records, () => ({ seq: log.headSeq, durableSeq: log.durableSeq }), (level, line) =>
        level === 'info' ? logger.info('search_index', line) : logger.warn('search_index', line),
        { logDir: join(this.config.dataDir, LOG_DIR), searchDir, workers: this.config.searchBuildWorkers },
      );
      // Erasure (issue 25): shards holding an erased record are dropped and rebuilt without it.
      indexer.validate(log.erasedAtOpen);
      log.onErase = (seqs) => indexer.erased(seqs);
      this.indexer = indexer;
      void indexer.startCatchUp().catch((err: Error) => logger.error('search_index', `search index: catching up failed (${err.message}); searches scan`, { err }));
    } catch (err) {
      logger.error('search_index', `search index not opened (${(err as Error).message}); searches scan the messages`, { err });
    }
  }

  /**
   * Writes the state snapshot at the log head (store/snapshot.ts), when every record is durable
   * and located. A failure is logged, not thrown: without a snapshot the next start replays more.
   * Synchronous (one `v8.serialize` and a file write): called at startup and shutdown only.
   */
  saveSnapshot(): void {
    const seq = this.log.headSeq;
    if (seq === 0 || seq !== this.log.durableSeq || seq !== this.records.locations.count) return;
    try {
      const body = packState(this.state, this.records.locations);
      writeSnapshot(this.config.dataDir, {
        originId: this.log.originId,
        seq,
        hash: this.log.headHash,
        lastTime: this.lastTimeMs === 0 ? null : new Date(this.lastTimeMs).toISOString(),
        created: new Date().toISOString(),
        segments: segmentStamps(join(this.config.dataDir, LOG_DIR)),
      }, body, this.derivedKey);
    } catch (err) {
      logger.warn('snapshot_not_written', `state snapshot not written (the next start replays the whole log): ${(err as Error).message}`);
    }
  }

  /**
   * Starts the background scrub of sealed segments at FORUM_SCRUB_MB_PER_MINUTE, its first pass
   * FORUM_SCRUB_START_DELAY_S from now (store/scrub.ts), unless the pace is 0 or it is already
   * running. Called by the service once it serves; offline tools never scrub.
   */
  startScrub(): void {
    if (this.scrub !== null || this.config.scrubMbPerMinute <= 0) return;
    this.scrub = new Scrub(join(this.config.dataDir, LOG_DIR), this.config.scrubMbPerMinute, this.integrity, this.config.scrubStartDelayS * 1000);
  }

  /**
   * Signed checkpoints and proofs (issue 53, src/tlog/checkpoints.ts), once started
   * (startCheckpoints), else null: the routes answer 503 then.
   */
  checkpoints: Checkpoints | null = null;

  /**
   * Loads or creates the checkpoint key (FORUM_CHECKPOINT_KEY, default `<data>/checkpoint-key.pem`) and starts the Merkle tree,
   * which catches up with the log in the background and follows every group commit (fed its
   * records' chained hashes by Log#onDurableHashes). Called by the
   * service; offline tools never start it. Throws Error when the key file cannot be read or made.
   */
  startCheckpoints(): void {
    if (this.checkpoints !== null) return;
    const key = loadCheckpointKey(this.config.dataDir, this.config.checkpointKeyPath);
    const indexDir = join(this.config.dataDir, INDEX_DIR);
    mkdirSync(indexDir, { recursive: true });
    const checkpoints = Checkpoints.open(indexDir, this.log, key, this.log.originId, () => this.now());
    // Each group commit's chained hashes go to the tree from memory (no read-back of what was just written).
    this.log.onDurableHashes = (firstSeq, hashes) => checkpoints.tree.feed(firstSeq, hashes);
    this.checkpoints = checkpoints;
  }

  /** The scrub's counters (all 0 while it is off). */
  scrubCounters(): ScrubCounters {
    return this.scrub?.counters ?? { bytes: 0, passes: 0, damage: 0 };
  }

  /**
   * Removes the bytes of erased records from the store (issue 25, the erasure contract): called
   * once the `moderation.erase` record naming `targets` is appended. Readers already see those
   * records as placeholders (domain/moderation); `Log#erase` waits until that record is durable,
   * then replaces each target's line by a same-length tombstone (temp → fsync → rename), drops
   * their cached copies and the search shards that held them. The state snapshot on disk is
   * removed first: it may hold erased fields (an agent's profile, a flag's note, a work item's
   * tags; issue 34), and the next shutdown writes one without them (a crash before that removal
   * leaves a snapshot the next start discards, as the log changed after it). A crash before it
   * completes is finished at the next start. Throws what the rewrite throws (a 500; the start
   * completes it).
   */
  async eraseRecords(targets: ReadonlyArray<{ seq: number; hash: string }>): Promise<void> {
    await this.log.sync();
    removeSnapshot(this.config.dataDir);
    await this.log.erase(targets);
    for (const listener of this.afterErase) listener();
  }

  /**
   * Called after each erasure's local rewrite (`eraseRecords`): copies elsewhere, such as the
   * replica bucket's objects (issue 35), follow it. A listener must not throw.
   */
  readonly afterErase = new Set<() => void>();

  /** Flushes and closes the log, writes the state snapshot, then releases the lock. */
  async close(): Promise<void> {
    await this.scrub?.stop();
    this.checkpoints?.close();
    await this.indexer?.close();
    await this.log.close();
    if (this.log.writable) this.saveSnapshot();
    this.records.close();
    await this.releaseLock();
  }
}
