/**
 * Group commit for the append-only log (store/log.ts): the queue of lines appended and not yet
 * written, the callers waiting for durability, and the flush loop that writes every queued line
 * as one batch with one fdatasync.
 *
 * `enqueue` takes one line (its seq assigned by the log, synchronously; its chained hash rides
 * along to the batch, for the Merkle tree) and, when no flush runs,
 * starts one in a microtask, so every append of the current turn joins that batch; appends that
 * arrive while a flush runs go into the next one. A batch the lone-write rule picks
 * (`isLoneWrite`, issue 56) is marked `lone`: the log syncs it on the main thread. `waitFor(seq)`
 * resolves once a batch reaching `seq` was made durable by the log's `writeBatch` (which calls
 * `release`). Callers acknowledge a write only after that (durability: ack after fsync).
 *
 * A failed batch fails the log: `fail` rejects every waiter (the one `rejectWaiters`) and every
 * later append. A ServiceError (replication lost the leadership, 503 REPLICA_FENCED) only refuses;
 * any other error is a failed write or fsync, reported to `onFatal` (the file's contents are
 * unknown then: fsyncgate).
 */
import { performance } from 'node:perf_hooks';
import { LONE_WRITE_IDLE_MS } from '../constants.js';
import { ServiceError } from '../errors.js';

/** The lines of one batch, in seq order, the seq of the first, each line's byte length and chained hash (64 hex). */
export interface Batch {
  lines: Buffer[];
  lineBytes: number[];
  hashes: string[];
  firstSeq: number;
  /** Whether the log syncs this batch on the main thread (a lone write: `isLoneWrite`). */
  lone: boolean;
}

/** What the lone-write rule looks at for one batch (`isLoneWrite`). */
export interface LoneWriteFacts {
  /** Lines in the batch. */
  lineCount: number;
  /** The batch begins its flush (no batch was being written when its lines were queued). */
  fresh: boolean;
  /** A replication gate waits for the bucket beside the fdatasync (Log#replicate). */
  replicating: boolean;
  /** How long the last batch's fdatasync took, ms. */
  lastFsyncMs: number;
  /** The longest last fdatasync (ms) after which a lone write may still sync on the main thread (LogOptions.loneWriteSyncMaxMs; 0: never). */
  syncMaxMs: number;
  /** Requests the server began since the last batch became durable (this write's own included); null where no server runs. */
  requestsSince: number | null;
  /** How long the event loop waited for work since the last batch became durable, ms (performance.eventLoopUtilization idle). */
  idleSinceMs: number;
}

/**
 * The lone-write rule (issue 56): whether a batch calls fdatasync on the main thread instead of
 * the thread pool. The event loop then waits for the disk, but the thread pool's hand-off and its
 * two thread wake-ups (about 0.1 ms here) are saved. Only when the server had nothing else to do:
 * one line that begins its flush, no replication gate, a quick last fdatasync (at most
 * `syncMaxMs`, default LONE_WRITE_SYNC_MAX_US_DEFAULT: a slow disk never blocks the loop), no
 * request but its own since the last batch became durable, and the loop waited at least
 * LONE_WRITE_IDLE_MS for work meanwhile. Under load or beside reads, batches go to the thread
 * pool: the loop goes on serving requests during the disk's wait, and concurrent writers share
 * one fdatasync. Pure.
 */
export function isLoneWrite(f: LoneWriteFacts): boolean {
  if (f.lineCount !== 1 || !f.fresh || f.replicating || f.syncMaxMs <= 0 || f.lastFsyncMs > f.syncMaxMs) return false;
  if (f.requestsSince !== null && f.requestsSince > 1) return false;
  return f.idleSinceMs >= LONE_WRITE_IDLE_MS;
}

interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (err: Error) => void;
  /** performance.now() when it began waiting (the acknowledgement timeout, see `ackTimeout`). */
  since: number;
}

/**
 * One log's group commit. Input: `writeBatch`, which writes a batch, makes it durable and calls
 * `release` with the durable seq (it runs one batch at a time, started synchronously by the loop
 * so the log's head still describes the batch's last line), and `onFatal` for a failed write.
 */
export class GroupCommit {
  /** Lines (UTF-8, newline included) waiting for the next batch, in seq order. */
  private pending: Buffer[] = [];
  /** Byte length of each pending line (same order), so a flush can locate every record it writes. */
  private pendingBytes: number[] = [];
  /** Chained hash of each pending line (same order), handed on once durable (the Merkle tree's leaves). */
  private pendingHashes: string[] = [];
  private pendingFirstSeq = 0;
  private flushingValue = false;
  private waiters: Waiter[] = [];
  private failedValue: Error | null = null;
  private ackSweep: NodeJS.Timeout | null = null;

  /**
   * Bounded waiting (issue 35, `sync` mode): a waiter still waiting after `ms` rejects with
   * `error()`, while its batch stays queued and may still become durable. Null: no bound.
   */
  ackTimeout: { ms: number; error: () => Error } | null = null;

  /** Requests the server has begun so far (Log#requestsBegun), or null without a server. */
  requestsBegun: (() => number) | null = null;

  /** The last fdatasync's ms, and `requestsBegun()` and the event loop's idle ms when the last batch became durable (`isLoneWrite`'s facts). */
  private lastFsyncMs = 0;
  private requestsAtDurable = 0;
  private idleAtDurableMs = 0;

  constructor(
    private readonly writeBatch: (batch: Batch) => Promise<void>,
    private readonly onFatal: (err: Error) => void,
    private readonly lone: { syncMaxMs: number; replicating: () => boolean } = { syncMaxMs: 0, replicating: () => false },
  ) {}

  /** The error every append and wait is refused with after a failure (null while healthy). */
  get failed(): Error | null {
    return this.failedValue;
  }

  /** Whether lines are queued for the next batch. */
  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Whether a flush loop runs (a batch is being written or more are queued). */
  get flushing(): boolean {
    return this.flushingValue;
  }

  /** Queues line `seq` (the log assigns seqs in order) with its chained hash and starts a flush when none runs. */
  enqueue(seq: number, line: Buffer, hash: string): void {
    if (this.pending.length === 0) this.pendingFirstSeq = seq;
    this.pending.push(line);
    this.pendingBytes.push(line.length);
    this.pendingHashes.push(hash);
    if (!this.flushingValue) {
      this.flushingValue = true;
      // Let every append of the current turn join this batch before writing.
      queueMicrotask(() => void this.flushLoop());
    }
  }

  /** Resolves once `release` reached `seq`; rejects on a failure or the ack timeout. */
  waitFor(seq: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ seq, resolve, reject, since: performance.now() });
      if (this.ackTimeout !== null && this.ackSweep === null) this.startAckSweep(this.ackTimeout.ms);
    });
  }

  /** Resolves every waiter up to the durable seq `durable`, whose batch's fdatasync took `fsyncMs`. */
  release(durable: number, fsyncMs: number): void {
    this.lastFsyncMs = fsyncMs;
    if (this.requestsBegun !== null) this.requestsAtDurable = this.requestsBegun();
    this.idleAtDurableMs = performance.eventLoopUtilization().idle;
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) (w.seq <= durable ? w.resolve() : still.push(w));
    this.waiters = still;
  }

  /** Refuses every later append and wait with `err` and rejects the waiters; no effect after an earlier failure. */
  fail(err: Error): void {
    if (this.failedValue) return;
    this.failedValue = err;
    this.rejectWaiters(err);
  }

  private rejectWaiters(err: Error): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(err);
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

  private async flushLoop(): Promise<void> {
    try {
      let fresh = true;
      while (this.pending.length > 0) {
        // Only a first batch of one line can be lone: no facts are gathered for the others.
        const lone = fresh && this.pending.length === 1 && isLoneWrite({
          lineCount: this.pending.length,
          fresh,
          replicating: this.lone.replicating(),
          lastFsyncMs: this.lastFsyncMs,
          syncMaxMs: this.lone.syncMaxMs,
          requestsSince: this.requestsBegun === null ? null : this.requestsBegun() - this.requestsAtDurable,
          idleSinceMs: performance.eventLoopUtilization().idle - this.idleAtDurableMs,
        });
        const batch: Batch = { lines: this.pending, lineBytes: this.pendingBytes, hashes: this.pendingHashes, firstSeq: this.pendingFirstSeq, lone };
        fresh = false;
        this.pending = [];
        this.pendingBytes = [];
        this.pendingHashes = [];
        await this.writeBatch(batch);
      }
    } catch (err) {
      if (err instanceof ServiceError) {
        // Replication lost the leadership (Log#replicate): nothing more is acknowledged or shown.
        this.fail(err);
        return;
      }
      // After a failed write or fsync the file's contents are unknown (fsyncgate): refuse every
      // further write and let the process restart and recover from what is really on disk.
      const failed = new Error(`log write failed: ${(err as Error).message}`);
      this.fail(failed);
      this.onFatal(failed);
    } finally {
      this.flushingValue = false;
    }
  }
}
