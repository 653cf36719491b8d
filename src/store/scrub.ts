/**
 * The background scrub (issue 28 "Background scrub"; docs/internals/storage.md#scrub): like a ZFS scrub, a
 * low-priority pass re-reads every sealed segment (every segment but the one being written) and
 * checks it the way a start does — framing, seq continuity and the hash chain, through the store's
 * replay (log.ts `replaySegments`), so it accepts exactly what the store accepts — in order to
 * find bit rot before a reader meets it.
 *
 * It runs in a worker thread (store/scrub-worker.ts), never on the event loop, at
 * FORUM_SCRUB_MB_PER_MINUTE (0 = off): the worker sleeps whenever it is ahead of that pace. The
 * worker starts FORUM_SCRUB_START_DELAY_S after the server, so it never competes with the start's
 * own work; a pass that ends waits SCRUB_PASS_INTERVAL_MS before the next. Each damaged place is reported once to
 * `Integrity` (one `error` log line naming file, offset and seq; `/api/status` then says the
 * archive is damaged); each pass ends with one `info` line; the counters feed metrics.
 */
import { Worker } from 'node:worker_threads';
import { logger } from '../logger.js';
import type { Integrity } from '../integrity.js';
import { SCRUB_PASS_INTERVAL_MS } from '../constants.js';

/** Counters of the scrub since the server started (metrics). */
export interface ScrubCounters {
  /** Bytes of sealed segments verified. */
  bytes: number;
  /** Passes over every sealed segment completed. */
  passes: number;
  /** Damaged places found (each counted once). */
  damage: number;
}

/** Messages of the worker (see scrub-worker.ts). */
type WorkerMessage =
  | { type: 'progress'; bytes: number }
  | { type: 'damage'; file: string; offset: number; seq: number | null; reason: string }
  | { type: 'pass'; segments: number; bytes: number; ms: number };

/** A running scrub; `stop()` ends it. */
export class Scrub {
  readonly counters: ScrubCounters = { bytes: 0, passes: 0, damage: 0 };
  private worker: Worker | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly control = new Int32Array(new SharedArrayBuffer(4));
  private stopped = false;

  /**
   * Starts scrubbing `logDir` at `mbPerMinute` (MB = 10^6 bytes; > 0) after `startDelayMs`,
   * reporting damage to `integrity`. `passIntervalMs` is the pause between passes (default
   * SCRUB_PASS_INTERVAL_MS). Neither the wait nor the worker keeps the process alive.
   */
  constructor(logDir: string, mbPerMinute: number, private readonly integrity: Integrity, startDelayMs: number, passIntervalMs: number = SCRUB_PASS_INTERVAL_MS) {
    if (!(mbPerMinute > 0)) throw new RangeError('Scrub: mbPerMinute must be positive');
    this.timer = setTimeout(() => this.startWorker(logDir, mbPerMinute, passIntervalMs), startDelayMs);
    this.timer.unref();
  }

  private startWorker(logDir: string, mbPerMinute: number, passIntervalMs: number): void {
    if (this.stopped) return;
    const worker = new Worker(new URL('./scrub-worker.js', import.meta.url), {
      workerData: { logDir, bytesPerMs: (mbPerMinute * 1e6) / 60_000, passIntervalMs, control: this.control },
    });
    this.worker = worker;
    worker.unref();
    worker.on('message', (m: WorkerMessage) => this.onMessage(m));
    worker.on('error', (err) => {
      if (!this.stopped) logger.warn('scrub', `scrub stopped: ${err.message}; sealed segments are checked again at the next start`, { err });
    });
    logger.info('scrub', `scrub: re-verifying sealed segments in the background at ${mbPerMinute} MB per minute`);
  }

  private onMessage(m: WorkerMessage): void {
    if (m.type === 'progress') this.counters.bytes += m.bytes;
    else if (m.type === 'damage') {
      if (this.integrity.reportDamage({ file: m.file, offset: m.offset, seq: m.seq, reason: m.reason, source: 'scrub' })) this.counters.damage++;
    } else {
      this.counters.passes++;
      logger.info(
        'scrub',
        `scrub: pass ${this.counters.passes} verified ${m.segments} sealed segment(s), ${m.bytes} bytes, in ${(m.ms / 1000).toFixed(1)} s; ` +
          (this.integrity.damaged ? `the archive is damaged (${this.integrity.findings.length + this.integrity.omitted} finding(s) so far)` : 'no damage'),
        { segments: m.segments, bytes: m.bytes, ms: m.ms },
      );
    }
  }

  /** Stops the worker (it only reads: nothing to finish). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    Atomics.store(this.control, 0, 1);
    Atomics.notify(this.control, 0);
    await this.worker?.terminate();
  }
}
