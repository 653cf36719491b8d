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
 * What a client reads (issue 54): every response of a route with a limit class, and every 429,
 * carries the draft-ietf-httpapi-ratelimit-headers structured fields `RateLimit-Policy`
 * (`"write";q=30;w=60`) and `RateLimit` (`"write";r=29;t=60`) of the limit it counted toward or
 * was refused by (`rateLimitHeaders`), and for one release the earlier draft's deprecated
 * RateLimit-Limit/-Remaining/-Reset; GET /api/limits (src/api/limits/routes.ts) lists every limit
 * and what remains of it (`RateLimits.states`), under the same policy names.
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
   * What `key` has left at `nowMs`, without counting anything or changing which keys are kept:
   * `allowed` says whether one more request would pass; `resetMs` is the ms until the oldest
   * counted request leaves the window (0 when none is counted: the whole limit is free).
   */
  peek(key: string, nowMs: number): LimitDecision {
    const now = Math.max(this.lastNowMs, nowMs);
    const e = this.entries.peek(key);
    let count = e?.count ?? 0;
    let start = e?.start ?? 0;
    while (e && count > 0 && e.times[start]! + this.windowMs <= now) {
      start = (start + 1) % this.limit;
      count--;
    }
    return { allowed: count < this.limit, limit: this.limit, remaining: this.limit - count, resetMs: count === 0 ? 0 : e!.times[start]! + this.windowMs - now };
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


/**
 * Who a limit's quota belongs to (GET /api/limits `scope`): one agent's token(s), one client
 * address, or the whole service.
 */
export type LimitScope = 'token' | 'address' | 'service';

/**
 * One limit as an agent can read it (schemas/LimitState.json; GET /api/limits, the `limit`
 * facts of a 429 over A2A and MCP): the draft-ietf-httpapi-ratelimit-headers quota policy
 * (`policy`, `quota` q, `windowSeconds` w, `unit` qu) and service limit (`remaining` r,
 * `resetSeconds` t) in JSON.
 */
export interface LimitState {
  /** The policy identifier, as in the RateLimit and RateLimit-Policy fields. */
  policy: string;
  scope: LimitScope;
  /** The draft's quota unit: `requests` per window, or `concurrent-requests` held at once. */
  unit: 'requests' | 'concurrent-requests';
  /** The quota: requests per window, or requests held at once. */
  quota: number;
  /** The window, in seconds; absent for a concurrency limit. */
  windowSeconds?: number;
  /** What is left now (0 when the next one would be refused). */
  remaining: number;
  /** Seconds until one more is allowed (0 when nothing is counted); absent for a concurrency limit. */
  resetSeconds?: number;
  /** The rule in words, e.g. "30 writes per token per minute" (GET /api/limits; a refusal's message says it). */
  rule?: string;
}

/** The scope of each request-rate policy of part 8 (policy identifiers are the limits' metric names). */
const POLICY_SCOPES: Readonly<Record<string, LimitScope>> = { write: 'token', changeRead: 'token', registration: 'address', clientShare: 'address', public: 'service' };

/** A string as a Structured Field sf-string (RFC 9651 §3.3.3): policy names are plain ASCII, escaped anyway. */
const sfString = (s: string): string => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * The rate-limit response fields for the decision `d` of policy `policy` (window `windowMs`):
 *
 * - `RateLimit-Policy: "<policy>";q=<limit>;w=<window s>` and `RateLimit: "<policy>";r=<remaining>;t=<s>`,
 *   the Structured Fields of draft-ietf-httpapi-ratelimit-headers (-10/-11, sections 4 and 5);
 *   `t` is the seconds until one more request is allowed (at least 1);
 * - for one release, deprecated: the earlier draft's `RateLimit-Limit`, `RateLimit-Remaining` and
 *   `RateLimit-Reset` (the same numbers). The earlier `RateLimit-Policy: <limit>;w=<s>` form cannot
 *   be kept beside the new field of the same name: that name now carries the new form.
 */
export function rateLimitHeaders(policy: string, d: LimitDecision, windowMs: number): Record<string, string> {
  const reset = String(Math.max(1, Math.ceil(d.resetMs / 1000)));
  return {
    RateLimit: `${sfString(policy)};r=${d.remaining};t=${reset}`,
    'RateLimit-Policy': `${sfString(policy)};q=${d.limit};w=${Math.round(windowMs / 1000)}`,
    'RateLimit-Limit': String(d.limit),
    'RateLimit-Remaining': String(d.remaining),
    'RateLimit-Reset': reset,
  };
}

/**
 * The facts of a refusal's RateLimit and RateLimit-Policy fields (as `rateLimitHeaders` writes
 * them) as a LimitState without `rule` (the refusal's message says it), for the A2A and MCP
 * renderings of a 429; null when `headers` has none.
 */
export function limitFromHeaders(headers: Readonly<Record<string, string>>): LimitState | null {
  const policy = /^"([^"\\]*)";q=(\d+);w=(\d+)$/.exec(headers['RateLimit-Policy'] ?? '');
  const now = /^"([^"\\]*)";r=(\d+);t=(\d+)$/.exec(headers.RateLimit ?? '');
  if (!policy || !now || policy[1] !== now[1]) return null;
  const name = policy[1]!;
  return {
    policy: name,
    scope: POLICY_SCOPES[name] ?? 'service',
    unit: 'requests',
    quota: Number(policy[2]),
    windowSeconds: Number(policy[3]),
    remaining: Number(now[2]),
    resetSeconds: Number(now[3]),
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

  /** The limits in force, per token first, then per address, then the total. */
  private all(): NamedLimit[] {
    return [this.writes, this.changeReads, this.registrations, ...(this.clientShare === null ? [] : [this.clientShare]), this.publicRequests];
  }

  /**
   * What the caller has left of every request limit, counting nothing (GET /api/limits): the
   * per-token limits when `agentId` is given (keyed as its requests are), the per-address ones
   * for `clientIp`, and the total. A loopback address exempt from the public limits
   * (`exemptLoopback`) is reported with the whole of its share.
   */
  states(agentId: string | null, clientIp: string): LimitState[] {
    const now = this.now();
    const out: LimitState[] = [];
    for (const l of this.all()) {
      const scope = POLICY_SCOPES[l.name]!;
      if (scope === 'token' && agentId === null) continue;
      const key = scope === 'token' ? `agent:${agentId}` : l === this.publicRequests ? 'public' : ipRateKey(clientIp);
      const d = l.limiter.peek(key, now);
      out.push({
        policy: l.name,
        scope,
        unit: 'requests',
        quota: d.limit,
        windowSeconds: Math.round(l.limiter.windowMs / 1000),
        remaining: d.remaining,
        resetSeconds: Math.ceil(d.resetMs / 1000),
        rule: l.rule,
      });
    }
    return out;
  }

  /**
   * The public limits, for every request through the listener before routing: the client
   * address's fair share, then the total (a request the total refuses gives its share slot
   * back). A request from a loopback address (with `exemptLoopback`) is not counted; one a public
   * limit would refuse but that carries an operator token passes uncounted. Sets the rate-limit
   * fields only when it refuses: on other responses they describe the route's own limit.
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
   * is read), writes and change reads by agent (by client IP on a public route). Sets the
   * rate-limit fields on `res`; throws 429 with Retry-After.
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
 * Counts one request against `limit`; sets the rate-limit fields on `res` (always when
 * `headers`, else only on refusal) and throws 429 with Retry-After when refused.
 */
function check(limit: NamedLimit, key: string, now: number, res: ServerResponse, headers: boolean, onLimited: (limit: string) => void): void {
  const d = limit.limiter.take(key, now);
  if (!headers && d.allowed) return;
  if (!d.allowed) refuse(limit, d, res, onLimited);
  for (const [name, value] of Object.entries(rateLimitHeaders(limit.name, d, limit.limiter.windowMs))) res.setHeader(name, value);
}

/** Sets the rate-limit fields of a refusal on `res` and throws its 429 with Retry-After. */
function refuse(limit: NamedLimit, d: LimitDecision, res: ServerResponse, onLimited: (limit: string) => void): never {
  const h = rateLimitHeaders(limit.name, d, limit.limiter.windowMs);
  for (const [name, value] of Object.entries(h)) res.setHeader(name, value);
  onLimited(limit.name);
  const retryAfterSeconds = Math.max(1, Math.ceil(d.resetMs / 1000));
  const err = tooManyRequests(`rate limit exceeded: at most ${limit.rule}; retry after ${retryAfterSeconds} s`, retryAfterSeconds);
  // Also carried by the error itself, so the 429 has them whoever renders it.
  Object.assign(err.headers, h);
  throw err;
}
