/**
 * Time source. Every rule that depends on time (leases, rate limits, record timestamps) reads it
 * from a Clock so tests can move time without sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** The real wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.parse('2026-01-01T00:00:00.000Z')) {}
  now(): number {
    return this.ms;
  }
  /** Moves time forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}

/**
 * Wraps the system clock with an adjustable offset (ms). Used when the server runs with
 * FORUM_TEST_CLOCK=1 so black-box tests can move time through the admin channel.
 */
export class OffsetClock implements Clock {
  offsetMs = 0;
  constructor(private readonly base: Clock = systemClock) {}
  now(): number {
    return this.base.now() + this.offsetMs;
  }
}

/** ISO 8601 UTC timestamp ending in `Z` for a millisecond time (part 2). */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

let memoIso = '';
let memoMs = 0;

/**
 * Date.parse with a one-entry memo: applying a record parses the same timestamp several times
 * (record time, creation time, feed time, agent activity), and replay applies millions.
 */
export function parseTimeMs(iso: string): number {
  if (iso !== memoIso) {
    memoMs = Date.parse(iso);
    memoIso = iso;
  }
  return memoMs;
}
