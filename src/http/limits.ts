/**
 * Rate limits and operator protections (parts 7, 8; issue 7), as `Guards` for the pipeline in
 * src/http/server.ts:
 *
 *   onRequest: every request through the public listener, before routing (unknown paths, 404,
 *              405, 414 and malformed targets included): shutting down (503)
 *              → 600/min in total (429)
 *   afterAuth: once the caller is known and after the write stop (423 for POST, in server.ts):
 *              registrations, 5/hour per client IP (429), before the body is read
 *              → writes, 30/min per agent (429) or change reads, 60/min per agent (429)
 *              → low disk space under the data folder, every POST (507)
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
import { isIP } from 'node:net';
import { LRUCache } from 'lru-cache';
import {
  BODY_BYTES_MAX,
  CHANGE_READS_PER_TOKEN_PER_MINUTE,
  DISK_RECHECK_MARGIN_BYTES,
  IPV6_RATE_PREFIX_BITS,
  PUBLIC_REQUESTS_PER_MINUTE,
  RATE_LIMIT_KEYS_MAX,
  RATE_WINDOW_HOUR_MS,
  RATE_WINDOW_MINUTE_MS,
  RECORD_OVERHEAD_BYTES_MAX,
  REGISTRATIONS_PER_IP_PER_HOUR,
  SHUTDOWN_RETRY_AFTER_SECONDS,
  WRITES_PER_TOKEN_PER_MINUTE,
} from '../constants.js';
import type { TrustProxyMode } from '../config.js';
import { ServiceError, fail } from '../errors.js';
import { tooManyRequests } from './errors.js';
import type { RequestContext, Route } from './router.js';
import type { Guards } from './server.js';
import type { DiskSpace } from '../store/disk.js';

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
// Client addresses

/**
 * Returns the client-IP resolver for the pipeline (FORUM_TRUST_PROXY, README "Limits").
 * Input: the mode. Output: a function from request to client address (a string; `unknown` when
 * the socket has none).
 * - `off` (default): the socket address; `CF-Connecting-IP` and `X-Forwarded-For` are ignored,
 *   since any client can send them.
 * - `xff`: the right-most untrusted hop of `X-Forwarded-For`. Each proxy appends the address it
 *   received the request from, so reading from the right, the addresses of proxies of the
 *   operator's own (loopback, private, link-local and unique-local addresses: a tunnel client
 *   and a local nginx, say) are skipped and the first other address is the client; entries
 *   further left were written by the client and cannot be trusted. When every hop is such an
 *   address (a client on the operator's network), the left-most one counts. A hop written with
 *   a port (`1.2.3.4:5678`, `[2001:db8::1]:443`) counts without it. `CF-Connecting-IP` is
 *   ignored (a client could set it and the proxy would pass it on).
 * - `cloudflare`: `CF-Connecting-IP`, which Cloudflare overwrites on every request;
 *   `X-Forwarded-For` is ignored.
 * A missing header, or one with no IP address in it, falls back to the socket address.
 * Enable a mode only when every request comes through that proxy.
 */
export function clientIpResolver(mode: TrustProxyMode): (req: IncomingMessage) => string {
  const socketIp = (req: IncomingMessage) => req.socket.remoteAddress ?? 'unknown';
  if (mode === 'off') return socketIp;
  if (mode === 'xff') return (req) => rightmostUntrustedHop(req.headers['x-forwarded-for']) ?? socketIp(req);
  return (req) => {
    const value = req.headers['cf-connecting-ip'];
    const ip = hopAddress(Array.isArray(value) ? value[value.length - 1]! : value ?? '');
    return ip ?? socketIp(req);
  };
}

/** The client address in an `X-Forwarded-For` value (repeated headers arrive joined or as an array). */
function rightmostUntrustedHop(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  const hops = (Array.isArray(value) ? value.join(',') : value).split(',');
  let leftmost: string | null = null;
  for (let i = hops.length - 1; i >= 0; i--) {
    const ip = hopAddress(hops[i]!);
    if (ip === null) return leftmost; // a hop that is no address: nothing left of it can be trusted
    if (!isProxyAddress(ip)) return ip;
    leftmost = ip;
  }
  return leftmost;
}

/** One hop as an IP address without port or brackets, or null when it is none. */
function hopAddress(raw: string): string | null {
  const hop = raw.trim();
  if (isIP(hop)) return hop;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(hop);
  if (bracketed && isIP(bracketed[1]!) === 6) return bracketed[1]!;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(hop);
  if (v4WithPort && isIP(v4WithPort[1]!) === 4) return v4WithPort[1]!;
  return null;
}

/**
 * Whether an address can only be one of the operator's own proxies, never a client reaching the
 * public tunnel: loopback, private (RFC 1918), link-local, carrier-grade NAT and IPv6 unique-local.
 */
export function isProxyAddress(ip: string): boolean {
  const v4 = isIP(ip) === 4 ? ip : /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip)?.[1];
  if (v4) {
    const [a, b] = v4.split('.').map(Number) as [number, number];
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127);
  }
  const groups = ipv6Groups(ip);
  if (!groups) return false;
  const loopback = groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1;
  return loopback || (groups[0]! & 0xfe00) === 0xfc00 || (groups[0]! & 0xffc0) === 0xfe80;
}

/**
 * The key an IP address is rate-limited under: IPv4 as is (also when written IPv4-mapped,
 * `::ffff:a.b.c.d`), IPv6 by its /IPV6_RATE_PREFIX_BITS network, anything else as is.
 */
export function ipRateKey(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const groups = ipv6Groups(ip);
  if (!groups) return ip;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
  }
  let bits = IPV6_RATE_PREFIX_BITS;
  const out: string[] = [];
  for (const g of groups) {
    const keep = Math.max(0, Math.min(16, bits));
    out.push((keep === 0 ? 0 : g & (0xffff << (16 - keep)) & 0xffff).toString(16));
    bits -= 16;
  }
  return `${out.join(':')}/${IPV6_RATE_PREFIX_BITS}`;
}

/** The eight 16-bit groups of a valid IPv6 address (zone id dropped, embedded IPv4 expanded). */
function ipv6Groups(ip: string): number[] | null {
  let s = ip.split('%')[0]!;
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const p = tail.split('.').map(Number);
    s = `${s.slice(0, lastColon + 1)}${(((p[0]! << 8) | p[1]!) >>> 0).toString(16)}:${(((p[2]! << 8) | p[3]!) >>> 0).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const a = head === '' ? [] : head.split(':');
  const b = rest === undefined || rest === '' ? [] : rest.split(':');
  const zeros = rest === undefined ? 0 : 8 - a.length - b.length;
  const groups = [...a, ...Array<string>(zeros).fill('0'), ...b].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

// ---------------------------------------------------------------------------------------------
// Guards

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
  readonly registrations: NamedLimit;
  readonly writes: NamedLimit;
  readonly changeReads: NamedLimit;

  /** Called for every 429 with the limit's name (metrics). */
  private readonly onLimited: (limit: string) => void;

  constructor(
    private readonly now: () => number,
    opts: { maxKeys?: number; onLimited?: (limit: string) => void } = {},
  ) {
    this.onLimited = opts.onLimited ?? (() => undefined);
    const max = opts.maxKeys ?? RATE_LIMIT_KEYS_MAX;
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
   * The global limit, for every request through the listener before routing. Sets RateLimit-*
   * headers only when it refuses: on other responses they describe the route's own limit.
   * Throws 429 with Retry-After.
   */
  onRequest(_req: IncomingMessage, _clientIp: string, res: ServerResponse): void {
    check(this.publicRequests, 'public', this.now(), res, false, this.onLimited);
  }

  /**
   * The route's own limit once the caller is known: registrations by client IP (before the body
   * is read), writes and change reads by agent (by client IP on a public route). Sets RateLimit-*
   * headers on `res`; throws 429 with Retry-After.
   */
  afterAuth(route: Route, ctx: RequestContext, res: ServerResponse): void {
    if (route.rateLimit === 'registration') {
      check(this.registrations, ipRateKey(ctx.clientIp), this.now(), res, true, this.onLimited);
      return;
    }
    const limit = route.rateLimit === 'write' ? this.writes : route.rateLimit === 'changeRead' ? this.changeReads : null;
    if (!limit) return;
    const key = ctx.agent ? `agent:${ctx.agent.profile.id}` : `ip:${ipRateKey(ctx.clientIp)}`;
    check(limit, key, this.now(), res, true, this.onLimited);
  }

  /** Keys dropped at the key cap so far, by limit name (metrics). */
  evictions(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const l of [this.publicRequests, this.registrations, this.writes, this.changeReads]) out[l.name] = l.limiter.evictions;
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
  const h = rateLimitHeaders(d, limit.limiter.windowMs);
  for (const [name, value] of Object.entries(h)) res.setHeader(name, value);
  if (d.allowed) return;
  onLimited(limit.name);
  const retryAfterSeconds = Math.max(1, Math.ceil(d.resetMs / 1000));
  const err = tooManyRequests(`rate limit exceeded: at most ${limit.rule}; retry after ${retryAfterSeconds} s`, retryAfterSeconds);
  // Also carried by the error itself, so the 429 has them whoever renders it.
  Object.assign(err.headers, h);
  throw err;
}

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
  constructor(
    private readonly disk: Pick<DiskSpace, 'freeBytes' | 'reserve' | 'settle'>,
    private readonly minFreeBytes: number,
    private readonly now: () => number,
  ) {}

  /**
   * Refuses a POST with 507 (LOW_DISK_SPACE) when free space minus this write's estimated bytes
   * would fall below `minFreeBytes`; otherwise reserves the estimate until `res` closes.
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
    res.once('close', () => this.disk.settle(need));
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
