/**
 * The application core: the open log, the in-memory state, the clock and the configuration.
 * `commit` is the only way state changes: append (seq assigned, record chained) → apply. The
 * HTTP layer awaits `log.sync()` before it sends any response, so nothing is acknowledged (and
 * nothing appended by others is shown) before it is on disk.
 */
import { Log, type LogOptions, type LogRecord } from './store/log.js';
import { lockDataDir } from './store/lock.js';
import { assertNoRestoreInProgress } from './store/archive.js';
import { apply, createState, type State } from './domain/state.js';
import { defaultRoom } from './domain/forum/forum.js';
import { OffsetClock, systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SegmentRecords } from './store/records.js';
import { LOG_DIR } from './store/log.js';
import { scanSearch } from './domain/forum/search.js';
import type { MessageSearch } from './domain/forum/forum.js';

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
  ) {}

  /** How `q` searches messages (store/search or the sliced scan). */
  search: MessageSearch = scanSearch;

  /**
   * Locks the data folder, replays the log and returns the app. A new log gets the `commons` room.
   * Throws StoreStateError (folder locked, metadata missing) or LogCorruptError (damaged log).
   */
  static async open(config: Config, opts: { clock?: Clock; log?: LogOptions } = {}): Promise<App> {
    mkdirSync(config.dataDir, { recursive: true });
    const release = await lockDataDir(config.dataDir);
    try {
      assertNoRestoreInProgress(config.dataDir);
      const records = new SegmentRecords(join(config.dataDir, LOG_DIR), config.recordCacheBytes);
      const state = createState(records);
      // The last record's time: kept as read and parsed once after replay, not per record.
      let lastTime: string | null = null;
      const log = await Log.open(
        config.dataDir,
        (record, payloadJson) => {
          apply(state, record, payloadJson);
          lastTime = record.time;
        },
        {
          records,
          onTruncate: (file, offset, bytes) =>
            console.error(`recovered: dropped an incomplete final line (${bytes} bytes) at ${file}:${offset}; it was never acknowledged`),
          onComplete: (file, offset) =>
            console.error(`recovered: the final record at ${file} was whole but lacked its newline; kept it and wrote the newline at offset ${offset}`),
          ...opts.log,
        },
      );
      const clock = opts.clock ?? (config.testClock ? new OffsetClock() : systemClock);
      const app = new App(config, log, state, clock, release, records);
      app.lastTimeMs = lastTime === null ? 0 : Date.parse(lastTime);
      if (log.headSeq === 0) {
        app.commit('room.create', defaultRoom(app.nowIso()));
        await log.sync();
      }
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

  /**
   * Appends a record and applies it to the state, synchronously. The caller must let the HTTP
   * layer (or its own code) await `log.sync()` before acknowledging.
   * Input: record type and payload; `timeMs` defaults to now(). Output: the record.
   */
  commit<P>(type: string, payload: P, timeMs: number = this.now()): LogRecord<P> {
    const { record, payloadJson } = this.log.append(type, payload, timeMs);
    this.lastTimeMs = timeMs;
    apply(this.state, record, payloadJson);
    return record;
  }

  /** Flushes and closes the log, then releases the lock. */
  async close(): Promise<void> {
    await this.log.close();
    this.records.close();
    await this.releaseLock();
  }
}
