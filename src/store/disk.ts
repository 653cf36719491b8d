/**
 * Free disk space under the data folder (issue 7: 507 before the disk is full). Only src/store
 * touches the file system, so the `statfs` call lives here; the HTTP layer asks a `DiskSpace`
 * for a cached number.
 */
import { statfsSync } from 'node:fs';
import { logger } from '../logger.js';

/** Measures the bytes available to this (unprivileged) process on the file system of `dir`. */
export function statfsFreeBytes(dir: string): number {
  const s = statfsSync(dir);
  // bavail, not bfree: blocks reserved for root are not usable by the service.
  return s.bavail * s.bsize;
}

/** A free-space probe: bytes available, or null when it cannot be measured. */
export type FreeBytesProbe = () => number | null;

/**
 * Free space under the data folder as an estimate kept current between measurements (issue 21
 * case 3): the probe (one `statfs`) runs at most once per `intervalMs` of the given clock, or on
 * every call while the estimate is near the caller's floor; between measurements, every write
 * admitted with `reserve` is subtracted by its estimated bytes, first while it is in flight and
 * then, once `settle`d, as written, until the next measurement sees it on disk.
 * A probe that throws (e.g. a file system without statfs) counts as "unknown": writes are not
 * refused for a measurement we could not make, and the error is logged once.
 */
export class DiskSpace {
  private checkedAtMs = Number.NEGATIVE_INFINITY;
  private measured: number | null = null;
  /** Estimated bytes of admitted writes not answered yet. */
  private pendingBytes = 0;
  /** Estimated bytes of writes answered since the last measurement. */
  private writtenBytes = 0;
  private warned = false;
  /** How many times the probe ran (for tests of the cache). */
  probes = 0;

  constructor(
    private readonly probe: FreeBytesProbe,
    private readonly intervalMs: number,
  ) {}

  /** Builds the production probe for a data folder. */
  static forDir(dir: string, intervalMs: number): DiskSpace {
    return new DiskSpace(() => statfsFreeBytes(dir), intervalMs);
  }

  /**
   * Estimated free bytes (last measurement minus admitted writes), or null when unknown.
   * Re-measures when the measurement is `intervalMs` old, or when the estimate is below
   * `recheckBelow` bytes (default: never for that reason). Input: the current time in ms.
   */
  freeBytes(nowMs: number, recheckBelow = Number.NEGATIVE_INFINITY): number | null {
    const stale = nowMs - this.checkedAtMs >= this.intervalMs || nowMs < this.checkedAtMs;
    const estimate = this.estimate();
    if (stale || (estimate !== null && estimate < recheckBelow)) this.measure(nowMs);
    return this.estimate();
  }

  /** Counts `bytes` of an admitted write against the free space until `settle(bytes)`. */
  reserve(bytes: number): void {
    this.pendingBytes += bytes;
  }

  /** The write reserved with `bytes` was answered: its bytes count as written until the next measurement. */
  settle(bytes: number): void {
    this.pendingBytes -= bytes;
    this.writtenBytes += bytes;
  }

  private estimate(): number | null {
    return this.measured === null ? null : this.measured - this.pendingBytes - this.writtenBytes;
  }

  private measure(nowMs: number): void {
    this.checkedAtMs = nowMs;
    this.probes++;
    this.writtenBytes = 0;
    try {
      this.measured = this.probe();
    } catch (err) {
      this.measured = null;
      if (!this.warned) {
        this.warned = true;
        logger.warn('disk_unmeasured', `cannot measure free disk space (${(err as Error).message}); the low-space 507 is not enforced`);
      }
    }
  }
}
