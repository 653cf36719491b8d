/**
 * Free disk space under the data folder (issue 7: 507 before the disk is full). Only src/store
 * touches the file system, so the `statfs` call lives here; the HTTP layer asks a `DiskSpace`
 * for a cached number.
 */
import { statfsSync } from 'node:fs';

/** Measures the bytes available to this (unprivileged) process on the file system of `dir`. */
export function statfsFreeBytes(dir: string): number {
  const s = statfsSync(dir);
  // bavail, not bfree: blocks reserved for root are not usable by the service.
  return s.bavail * s.bsize;
}

/** A free-space probe: bytes available, or null when it cannot be measured. */
export type FreeBytesProbe = () => number | null;

/**
 * A time-based cache over a free-space probe: the probe runs at most once per `intervalMs` of the
 * given clock, so a write pays for one `statfs` syscall every few seconds, not one per request.
 * A probe that throws (e.g. a file system without statfs) counts as "unknown": writes are not
 * refused for a measurement we could not make, and the error is logged once.
 */
export class DiskSpace {
  private checkedAtMs = Number.NEGATIVE_INFINITY;
  private lastFreeBytes: number | null = null;
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
   * Free bytes as of at most `intervalMs` ago (re-measured when older), or null when unknown.
   * Input: the current time in ms.
   */
  freeBytes(nowMs: number): number | null {
    if (nowMs - this.checkedAtMs >= this.intervalMs || nowMs < this.checkedAtMs) {
      this.checkedAtMs = nowMs;
      this.probes++;
      try {
        this.lastFreeBytes = this.probe();
      } catch (err) {
        this.lastFreeBytes = null;
        if (!this.warned) {
          this.warned = true;
          console.error(`cannot measure free disk space (${(err as Error).message}); the low-space 507 is not enforced`);
        }
      }
    }
    return this.lastFreeBytes;
  }
}
