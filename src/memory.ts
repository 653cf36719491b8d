/**
 * Returning a start's transient memory to the operating system (issue 17: RSS ≤ 1.5 GiB after
 * start at 10M records).
 *
 * Loading the state — deserializing the snapshot, or replaying the log — leaves garbage behind:
 * at 10M records a few hundred MB in V8's old space, plus the snapshot's object part, a ~170 MB
 * Buffer outside the heap that is freed only when a full GC collects its wrapper. V8 runs that GC
 * only once the heap grows again, so the resident size after start depended on when it happened:
 * 1,481–1,568 MiB over five starts of one archive. One full GC before the server listens brings
 * it to 1,262–1,318 MiB (measured in the same session), costing ~0.5 s at 10M records and ~60 ms
 * at 1M, before any request is served.
 *
 * Node 20 has no API for a full GC without the `--expose-gc` flag, and the operator starts us
 * with plain `node dist/server.js`. Setting that flag at run time exposes `gc` to contexts created
 * afterwards; a fresh `vm` context hands it to us. Nothing else in the service creates contexts.
 * Node's documentation warns that changing V8 flags after start may behave unpredictably; this
 * one flag only installs a `gc` function in new contexts, and it is the pattern Jest's
 * `--logHeapUsage` has used for years. Should a future V8 refuse it, `gc` is not found and the
 * start goes on without the collection (only the RSS after start is higher).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';

let gc: (() => void) | null | undefined;

/**
 * Runs one full (mark-compact) garbage collection, synchronously, on the calling thread.
 * Output: its duration in ms, or null when this V8 does not provide `gc` (nothing was done).
 * Never throws. Call it only where a pause is harmless (startup, before listening).
 */
export function collectGarbageNow(): number | null {
  if (gc === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const exposed: unknown = runInNewContext('gc');
      gc = typeof exposed === 'function' ? (exposed as () => void) : null;
    } catch {
      gc = null;
    }
  }
  if (gc === null) return null;
  const started = performance.now();
  gc();
  return performance.now() - started;
}
