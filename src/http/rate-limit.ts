/**
 * The rate limits of part 8 (issue 7), as `Guards` for the pipeline in src/http/server.ts (the
 * order of all guards: src/http/guards.ts):
 *
 *   onRequest: a client address's fair share of the public total (FORUM_CLIENT_SHARE_PERCENT,
 *              default 25 %: 150/min; 429), then 600/min in total (429)
 *   afterAuth: an operator's request gives back its public slots (operators are not counted
 *              against the public total; issue 38)
 *              registrations, 5/hour per client IP (429), before the body is read
 *              → writes, 30/min per agent (429) or change reads, 60/min per agent (429)
 *
 * What counts: a request takes a slot of a limit once it reaches that limit's check; a refusal
 * later in the pipeline (401 after the global check, 400/403/404/409/413/415/507 after the
 * per-agent check) does not give the slot back, because the service did the work of looking at
 * it. A request refused with 429 takes no slot of the limit that refused it, so Retry-After is
 * exact: it is the time until the oldest counted request leaves the window. A POST refused with
 * 423 (write stop) takes no write or registration slot: the write stop is checked first.
 *
 * The limiter is a sliding-window log (exact "at most N in any window"), pure: every call takes
 * the current time, so tests move an injected clock instead of sleeping. Its memory is bounded:
 * N timestamps per key in a ring buffer, keys forgotten when their window has passed, and a hard
 * cap on keys (RATE_LIMIT_KEYS_MAX).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LRUCache } from 'lru-cache';
import {
  CHANGE_READS_PER_TOKEN_PER_MINUTE,
  CLIENT_SHARE_PERCENT_DEFAULT,
  PUBLIC_REQUESTS_PER_MINUTE,
  RATE_LIMIT_KEYS_MAX,
  RATE_WINDOW_HOUR_MS,
  RATE_WINDOW_MINUTE_MS,
  REGISTRATIONS_PER_IP_PER_HOUR,
  WRITES_PER_TOKEN_PER_MINUTE,
} from '../constants.js';
import { ipRateKey, isLoopbackAddress } from './client-ip.js';
import { tooManyRequests } from './errors.js';
import type { RequestContext, Route } from './router.js';
import type { Guards } from './server.js';

// ---------------------------------------------------------------------------------------------
// The limiter


/** The outcome of one `take`. */
export interface LimitDecision {
  /** True when the request was counted and may proceed. */
  allowed: boolean;
  /** The limit (requests per window). */
  limit: number;
  /** Requests still allowed in the current window after this one (0 when refused). */
  remaining: number;
  /**
   * Ms until the oldest counted request leaves the window, i.e. until one more request would be
   * allowed. When refused this is the exact wait; when allowed it is > 0 (this request counts).
   */
  resetMs: number;
}

/** One key's counted requests: a ring buffer of their times, oldest at `start`. */
interface Entry {
  times: Float64Array;
  start: number;
  count: number;
}

/**
 * Sliding-window-log limiter: at most `limit` counted requests per key in any `windowMs`.
 *
 * Memory: `limit` doubles per key. Keys are kept in an lru-cache in order of their latest
 * counted request, so the least recent end holds the keys idle longest and expired keys are swept
 * from there in O(expired) on every call. When `maxKeys` live keys exist and a new key arrives,
 * the least recently counted key is forgotten (its count restarts); `evictions` counts how often
 * that happened. (lru-cache reorders by relinking typed-array slots; re-inserting into a Map on
 * every count left a deleted entry in the hot key's hash chain each time, so with thousands of
 * keys one busy key's lookups walked thousands of them.)
 */
export class SlidingWindowLimiter {
  private readonly entries: LRUCache<string, Entry>;
  /** Time never runs backwards inside the limiter (a system clock may step back). */
  private lastNowMs = Number.NEGATIVE_INFINITY;
  /** Keys forgotten early because the cap was reached. */
  evictions = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    readonly maxKeys: number = RATE_LIMIT_KEYS_MAX,
  ) {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new Error('limit must be an integer >= 1');
    if (!(windowMs > 0)) throw new Error('windowMs must be > 0');
    if (!(Number.isInteger(maxKeys) && maxKeys >= 1)) throw new Error('maxKeys must be an integer >= 1');
    this.entries = new LRUCache<string, Entry>({
      max: maxKeys,
      dispose: (_value, _key, reason) => {
        if (reason === 'evict') this.evictions++;
      },
    });
  }

  /** Keys currently remembered (bounded by `maxKeys`). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Counts one request for `key` at `nowMs` if the limit allows it.
   * Input: key (agent id, IP, ...), current time in ms. Output: the decision; a refused request
   * is not counted.
   */
  take(key: string, nowMs: number): LimitDecision {
    const now = (this.lastNowMs = Math.max(this.lastNowMs, nowMs));
    this.sweep(now);
    let e = this.entries.peek(key);
    if (e) this.dropExpired(e, now);
    if (e && e.count >= this.limit) {
      return { allowed: false, limit: this.limit, remaining: 0, resetMs: e.times[e.start]! + this.windowMs - now };
    }
    if (!e) {
      e = { times: new Float64Array(this.limit), start: 0, count: 0 };
      this.entries.set(key, e); // At maxKeys this forgets the least recently counted key.
    } else {
      this.entries.get(key); // Now the most recently counted key.
    }
    e.times[(e.start + e.count) % this.limit] = now;
    e.count++;
    return { allowed: true, limit: this.limit, remaining: this.limit - e.count, resetMs: e.times[e.start]! + this.windowMs - now };
  }

  /**
   * Gives back the newest counted request of `key` (a request that was counted and then turned
   * out not to count: refused by a later limit, or an operator's). No-op for an unknown key.
   */
  refund(key: string): void {
    const e = this.entries.peek(key);
    if (e && e.count > 0) e.count--;
  }

  /** Forgets every key whose latest counted request has left the window. */
  sweep(nowMs: number): void {
    for (;;) {
      const key = this.entries.rkeys().next().value;
      if (key === undefined) return;
      const e = this.entries.peek(key)!;
      const newest = e.times[(e.start + e.count - 1) % this.limit]!;
      if (newest + this.windowMs > nowMs) return; // Recency order: every other key is newer.
      this.entries.delete(key);
    }
  }

  private dropExpired(e: Entry, now: number): void {
    while (e.count > 0 && e.times[e.start]! + this.windowMs <= now) {
      e.start = (e.start + 1) % this.limit;
      e.count--;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The limits as guards


/** The RateLimit-* response headers for a decision (seconds, rounded up). */
export function rateLimitHeaders(d: LimitDecision, windowMs: number): Record<string, string> {
  return {
    'RateLimit-Limit': String(d.limit),
    'RateLimit-Remaining': String(d.remaining),
    'RateLimit-Reset': String(Math.max(1, Math.ceil(d.resetMs / 1000))),
    'RateLimit-Policy': `${d.limit};w=${Math.round(windowMs / 1000)}`,
  };
}

/** A named limit of part 8: its limiter and the words a 429 uses for it. */
interface NamedLimit {
  /** Its name in metrics: `public`, `registration`, `write` or `changeRead`. */
  name: string;
  limiter: SlidingWindowLimiter;
  /** e.g. "30 writes per token per minute". */
  rule: string;
}

/**
 * The four rate limits of part 8 as pipeline guards. `now` is the service clock (ms).
 * Per-agent limits key on the agent id, so every token of one agent would share a budget; a
 * route with a per-agent class but no caller (public) is keyed by client IP instead.
 */
export class RateLimits implements Guards {
  readonly publicRequests: NamedLimit;
  /** One client address's share of the public total (issue 38), or null at 100 %. */
  readonly clientShare: NamedLimit | null;
  readonly registrations: NamedLimit;
  readonly writes: NamedLimit;
  readonly changeReads: NamedLimit;

  /** Called for every 429 with the limit's name (metrics). */
  private readonly onLimited: (limit: string) => void;

  /** Whether a request carries a valid operator token (checked only when a public limit refuses). */
  private readonly isOperator: (req: IncomingMessage) => boolean;
  /** Requests from a loopback client address are not counted against the public limits. */
  private readonly exemptLoopback: boolean;
  /** Responses whose request carried a token and took public slots (so an operator's can give them back). */
  private readonly countedPublic = new WeakMap<ServerResponse, string | null>();

  /**
   * Input: the clock (ms) and options: `maxKeys` (per limit), `onLimited` (metrics),
   * `clientSharePercent` (1..100, default CLIENT_SHARE_PERCENT_DEFAULT), `isOperator` (does the
   * request carry a valid operator token; default none does), `exemptLoopback` (a loopback client
   * address is not counted; only meaningful when client addresses come from a trusted proxy).
   */
  constructor(
    private readonly now: () => number,
    opts: {
      maxKeys?: number;
      onLimited?: (limit: string) => void;
      clientSharePercent?: number;
      isOperator?: (req: IncomingMessage) => boolean;
      exemptLoopback?: boolean;
    } = {},
  ) {
    this.onLimited = opts.onLimited ?? (() => undefined);
    this.isOperator = opts.isOperator ?? (() => false);
    this.exemptLoopback = opts.exemptLoopback ?? false;
    const max = opts.maxKeys ?? RATE_LIMIT_KEYS_MAX;
    const percent = opts.clientSharePercent ?? CLIENT_SHARE_PERCENT_DEFAULT;
    const share = Math.max(1, Math.floor((PUBLIC_REQUESTS_PER_MINUTE * percent) / 100));
    this.clientShare =
      share >= PUBLIC_REQUESTS_PER_MINUTE
        ? null
        : {
            name: 'clientShare',
            limiter: new SlidingWindowLimiter(share, RATE_WINDOW_MINUTE_MS, max),
            rule: `${share} requests per minute from one client address (a ${percent} % share of the ${PUBLIC_REQUESTS_PER_MINUTE} per minute in total, so no one client can take the service from everyone else)`,
          };
    this.publicRequests = {
      name: 'public',
      limiter: new SlidingWindowLimiter(PUBLIC_REQUESTS_PER_MINUTE, RATE_WINDOW_MINUTE_MS, 1),
      rule: `${PUBLIC_REQUESTS_PER_MINUTE} requests per minute in total`,
    };
    this.registrations = {
      name: 'registration',
      limiter: new SlidingWindowLimiter(REGISTRATIONS_PER_IP_PER_HOUR, RATE_WINDOW_HOUR_MS, max),
      rule: `${REGISTRATIONS_PER_IP_PER_HOUR} registrations per IP per hour`,
    };
    this.writes = {
      name: 'write',
      limiter: new SlidingWindowLimiter(WRITES_PER_TOKEN_PER_MINUTE, RATE_WINDOW_MINUTE_MS, max),
      rule: `${WRITES_PER_TOKEN_PER_MINUTE} writes per token per minute`,
    };
    this.changeReads = {
      name: 'changeRead',
      limiter: new SlidingWindowLimiter(CHANGE_READS_PER_TOKEN_PER_MINUTE, RATE_WINDOW_MINUTE_MS, max),
      rule: `${CHANGE_READS_PER_TOKEN_PER_MINUTE} change reads per token per minute (/api/changes, /api/work/changes, /api/exchange, /api/receipts together)`,
    };
  }

  /**
   * The public limits, for every request through the listener before routing: the client
   * address's fair share, then the total (a request the total refuses gives its share slot
   * back). A request from a loopback address (with `exemptLoopback`) is not counted; one a public
   * limit would refuse but that carries an operator token passes uncounted. Sets RateLimit-*
   * headers only when it refuses: on other responses they describe the route's own limit.
   * Throws 429 with Retry-After.
   */
  onRequest(req: IncomingMessage, clientIp: string, res: ServerResponse): void {
    if (this.exemptLoopback && isLoopbackAddress(clientIp)) return;
    const now = this.now();
    const key = this.clientShare === null ? null : ipRateKey(clientIp);
    if (key !== null) {
      const d = this.clientShare!.limiter.take(key, now);
      if (!d.allowed) {
        if (this.isOperator(req)) return;
        refuse(this.clientShare!, d, res, this.onLimited);
      }
    }
    const d = this.publicRequests.limiter.take('public', now);
    if (!d.allowed) {
      if (key !== null) this.clientShare!.limiter.refund(key);
      if (this.isOperator(req)) return;
      refuse(this.publicRequests, d, res, this.onLimited);
    }
    // Only a request with a token can turn out to be an operator's, whose slots go back.
    if (req.headers.authorization !== undefined) this.countedPublic.set(res, key);
  }

  /**
   * The route's own limit once the caller is known: registrations by client IP (before the body
   * is read), writes and change reads by agent (by client IP on a public route). Sets RateLimit-*
   * headers on `res`; throws 429 with Retry-After.
   */
  afterAuth(route: Route, ctx: RequestContext, res: ServerResponse): void {
    if (this.countedPublic.has(res) && (ctx.agent !== null ? ctx.agent.profile.role === 'operator' : ctx.req.headers.authorization !== undefined && this.isOperator(ctx.req))) {
      // Operators are not counted against the public total (issue 38): their slots go back.
      const key = this.countedPublic.get(res)!;
      this.countedPublic.delete(res);
      this.publicRequests.limiter.refund('public');
      if (key !== null) this.clientShare!.limiter.refund(key);
    }
    if (route.rateLimit === 'registration') {
      check(this.registrations, ipRateKey(ctx.clientIp), this.now(), res, true, this.onLimited);
      return;
    }
    const limit = route.rateLimit === 'write' ? this.writes : route.rateLimit === 'changeRead' ? this.changeReads : null;
    if (!limit) return;
    const key = ctx.agent ? `agent:${ctx.agent.profile.id}` : `ip:${ipRateKey(ctx.clientIp)}`;
    check(limit, key, this.now(), res, true, this.onLimited);
  }

  /**
   * Counts one change read of agent `agentId` outside a request: a page of an open feed stream
   * after its first (issue 37, src/api/feeds/stream.ts), keyed as the agent's requests are.
   * Output: 0 when counted, else the ms until the window lets one more through (nothing counted,
   * no 429: the stream waits).
   */
  takeChangeRead(agentId: string): number {
    const d = this.changeReads.limiter.take(`agent:${agentId}`, this.now());
    return d.allowed ? 0 : Math.max(1, d.resetMs);
  }

  /** Keys dropped at the key cap so far, by limit name (metrics). */
  evictions(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const l of [this.publicRequests, this.clientShare, this.registrations, this.writes, this.changeReads]) if (l !== null) out[l.name] = l.limiter.evictions;
    return out;
  }
}

/**
 * Counts one request against `limit`; sets RateLimit-* headers on `res` (always when
 * `headers`, else only on refusal) and throws 429 with Retry-After when refused.
 */
function check(limit: NamedLimit, key: string, now: number, res: ServerResponse, headers: boolean, onLimited: (limit: string) => void): void {
  const d = limit.limiter.take(key, now);
  if (!headers && d.allowed) return;
  if (!d.allowed) refuse(limit, d, res, onLimited);
  for (const [name, value] of Object.entries(rateLimitHeaders(d, limit.limiter.windowMs))) res.setHeader(name, value);
}

/** Sets the RateLimit-* headers of a refusal on `res` and throws its 429 with Retry-After. */
function refuse(limit: NamedLimit, d: LimitDecision, res: ServerResponse, onLimited: (limit: string) => void): never {
  const h = rateLimitHeaders(d, limit.limiter.windowMs);
  for (const [name, value] of Object.entries(h)) res.setHeader(name, value);
  onLimited(limit.name);
  const retryAfterSeconds = Math.max(1, Math.ceil(d.resetMs / 1000));
  const err = tooManyRequests(`rate limit exceeded: at most ${limit.rule}; retry after ${retryAfterSeconds} s`, retryAfterSeconds);
  // Also carried by the error itself, so the 429 has them whoever renders it.
  Object.assign(err.headers, h);
  throw err;
}
