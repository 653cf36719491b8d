/**
 * The client's address as the rate limits see it (parts 7, 8; issue 7; FORUM_TRUST_PROXY):
 * which proxy headers are trusted, which addresses can only be the operator's own proxies, and
 * the key an address is rate-limited under (IPv6 by network).
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { IPV6_RATE_PREFIX_BITS } from '../constants.js';
import type { TrustProxyMode } from '../config.js';


/**
 * Returns the client-IP resolver for the pipeline (FORUM_TRUST_PROXY, docs/api/limits.md).
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

/** Whether an address is loopback: 127.0.0.0/8 (also IPv4-mapped) or ::1. */
export function isLoopbackAddress(ip: string): boolean {
  const v4 = isIP(ip) === 4 ? ip : /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip)?.[1];
  if (v4) return v4.startsWith('127.');
  const groups = ipv6Groups(ip);
  return groups !== null && groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1;
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
