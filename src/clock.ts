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
  /** The current test time, ms since the epoch. */
  now(): number {
    return this.ms;
  }
  /** Moves time forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.ms += ms;
  }
  /** Sets the time to `ms` (ms since the epoch); may move it backwards. */
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
  /** The base clock's time plus `offsetMs`, ms since the epoch. */
  now(): number {
    return this.base.now() + this.offsetMs;
  }
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

/**
 * The `before` filter's bound in whole ms (part 4: created strictly before). Record times have
 * millisecond precision, but a date-time may carry more digits, which Date.parse drops: for
 * `…06.5771Z` a message created at `…06.577Z` is strictly before it, so the exclusive bound in
 * ms is one higher whenever the digits past the millisecond are not all zero.
 * Input: a valid RFC 3339 date-time. Output: ms since the epoch.
 */
export function exclusiveBoundMs(dateTime: string): number {
  const ms = Date.parse(dateTime);
  const fraction = /\.(\d+)/.exec(dateTime)?.[1] ?? '';
  return /[1-9]/.test(fraction.slice(3)) ? ms + 1 : ms;
}
