/**
 * Bounded slices for work whose cost grows with the archive (issues 17 and 21: no request holds
 * the event loop). A long scan runs SEARCH_SLICE_MS at a time and then awaits `nextSlice()`.
 *
 * One slice runs per turn of the event loop, whatever the number of scans under way: waiting
 * scans queue here and a single `setImmediate` resumes the first of them, so between two slices
 * the loop always passes through its poll phase and serves the requests that arrived. The delay
 * a scan adds to any other request is then one slice, not one slice per concurrent scan, and
 * concurrent scans take turns in arrival order.
 */
import { SEARCH_SLICE_MS } from '../constants.js';

const waiting: Array<() => void> = [];
let scheduled = false;

function runTurn(): void {
  scheduled = false;
  waiting.shift()?.();
  if (waiting.length > 0) {
    scheduled = true;
    setImmediate(runTurn);
  }
}

/** Resolves when this scan's next slice may run (a later turn of the event loop). */
export function nextSlice(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!scheduled) {
      scheduled = true;
      setImmediate(runTurn);
    }
  });
}

/**
 * A slice clock for one scan: `due()` is true once the current slice has run SEARCH_SLICE_MS;
 * then `await next()` waits for a later turn and starts a new slice. A scan starts with
 * `await SliceTimer.start()`, so its first slice waits its turn too: scans that arrive together
 * (several search requests read in one poll phase) do not run their first slices back to back.
 */
export class SliceTimer {
  private end = performance.now() + SEARCH_SLICE_MS;

  /** Waits for this scan's first turn, then starts its clock. */
  static async start(): Promise<SliceTimer> {
    await nextSlice();
    return new SliceTimer();
  }

  /** True when the current slice has used up its time (ms). */
  due(): boolean {
    return performance.now() > this.end;
  }

  /** Waits for the next slice and starts its clock. */
  async next(): Promise<void> {
    await nextSlice();
    this.end = performance.now() + SEARCH_SLICE_MS;
  }
}
