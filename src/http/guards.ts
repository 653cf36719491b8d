/**
 * Operator protections (parts 7, 8; issue 7, issue 21) as `Guards` for the pipeline in
 * src/http/server.ts, and how guards compose. The order of every guard (service.ts composes them):
 *
 *   onRequest: every request through the public listener, before routing (unknown paths, 404,
 *              405, 414 and malformed targets included): shutting down (503, ShutdownGate)
 *              → 600/min in total (429, rate-limit.ts)
 *   afterAuth: once the caller is known and after the write stop (423 for POST, in server.ts):
 *              registrations, 5/hour per client IP (429, rate-limit.ts), before the body is read
 *              → writes, 30/min per agent (429) or change reads, 60/min per agent (429)
 *              → low disk space under the data folder, every POST (507, DiskGuard)
 */
import type { ServerResponse } from 'node:http';
import { BODY_BYTES_MAX, DISK_RECHECK_MARGIN_BYTES, RECORD_OVERHEAD_BYTES_MAX, SHUTDOWN_RETRY_AFTER_SECONDS } from '../constants.js';
import { ServiceError, fail } from '../errors.js';
import type { RequestContext, Route } from './router.js';
import type { Guards } from './server.js';
import type { DiskSpace } from '../store/disk.js';

/**
 * 503 while the service shuts down (issue 7). `Service.close()` sets `stopping`, then stops the
 * listener: new connections are refused by the OS and idle kept-alive ones are closed, so the
 * only requests that still arrive are those on busy kept-alive connections (sent while a
 * response is in flight). Each gets 503 with Retry-After and `Connection: close`, whatever its
 * path, so the client reconnects to the next instance. Startup needs no gate: the listener opens
 * only after the log has been replayed.
 */
export class ShutdownGate implements Guards {
  stopping = false;

  /** Throws 503 (Retry-After: SHUTDOWN_RETRY_AFTER_SECONDS, Connection: close) once stopping. */
  onRequest(): void {
    if (!this.stopping) return;
    throw new ServiceError('UNAVAILABLE', 'the service is shutting down; retry after Retry-After seconds', {
      'Retry-After': String(SHUTDOWN_RETRY_AFTER_SECONDS),
      Connection: 'close',
    });
  }
}

/**
 * 507 for a POST whose record would take free space under the data folder below `minFreeBytes`
 * (FORUM_MIN_FREE_BYTES; part 7, issue 21 case 3), before the body is read, so nothing is
 * written. Reads keep working. A write is estimated at its Content-Length (BODY_BYTES_MAX when
 * chunked) plus RECORD_OVERHEAD_BYTES_MAX and reserved against the free space until it is
 * answered, so concurrent writes cannot all pass one measurement. `disk` keeps the estimate
 * current between measurements (src/store/disk.ts), re-measuring before every write near the floor.
 */
export class DiskGuard implements Guards {
  /** Bytes reserved per response still open (see afterAuth). */
  private readonly reserved = new WeakMap<ServerResponse, number>();

  constructor(
    private readonly disk: Pick<DiskSpace, 'freeBytes' | 'reserve' | 'settle'>,
    private readonly minFreeBytes: number,
    private readonly now: () => number,
  ) {}

  /**
   * Refuses a POST with 507 (LOW_DISK_SPACE) when free space minus this write's estimated bytes
   * would fall below `minFreeBytes`; otherwise reserves the estimate until `res` closes (one `close` listener per response, however
   * many writes it runs).
   */
  afterAuth(route: Route, ctx: RequestContext, res: ServerResponse): void {
    if (route.method !== 'POST') return;
    const declared = Number(ctx.req.headers['content-length']);
    const need = (Number.isSafeInteger(declared) && declared >= 0 && declared <= BODY_BYTES_MAX ? declared : BODY_BYTES_MAX) + RECORD_OVERHEAD_BYTES_MAX;
    const floor = this.minFreeBytes + need;
    const free = this.disk.freeBytes(this.now(), floor + DISK_RECHECK_MARGIN_BYTES);
    if (free !== null && free < floor) {
      throw fail(
        'LOW_DISK_SPACE',
        `storage limit: free disk space under the data folder is below FORUM_MIN_FREE_BYTES (${this.minFreeBytes} bytes) once this write is counted; nothing was written; the operator must free space`,
      );
    }
    this.disk.reserve(need);
    // A dispatching route (/mcp, A2A) may run several POST routes for one response: their
    // reservations add up on one `close` listener per response, never one listener per write.
    const held = this.reserved.get(res);
    if (held !== undefined) {
      this.reserved.set(res, held + need);
      return;
    }
    this.reserved.set(res, need);
    res.once('close', () => {
      this.disk.settle(this.reserved.get(res) ?? 0);
      this.reserved.delete(res);
    });
  }

}

/** Runs several guards in order, hook by hook; the first to throw wins. Null entries are skipped. */
export function composeGuards(...list: (Guards | null | undefined)[]): Guards {
  const gs = list.filter((g): g is Guards => !!g);
  return {
    onRequest(req, clientIp, res) {
      for (const g of gs) g.onRequest?.(req, clientIp, res);
    },
    afterAuth(route, ctx, res) {
      for (const g of gs) g.afterAuth?.(route, ctx, res);
    },
  };
}
