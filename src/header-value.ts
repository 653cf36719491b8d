/**
 * Header values built from URLs (issue 50 High item 4): a URL that came from configuration or
 * from the replica bucket (a manifest's `leaderUrl`) is put into a response header only through
 * `urlHeaderValue`, so no request can make node:http throw ERR_INVALID_CHAR while it writes the
 * head — an internationalised host would, and so would a CR/LF planted in the bucket.
 */
import { validateHeaderName, validateHeaderValue, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { logger } from './logger.js';

/** Control characters (C0, DEL, C1): never part of a header value built here. */
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The header form of an absolute http(s) URL: parsed with WHATWG `URL`, which turns an IDN host
 * into punycode (`https://форум.example` → `https://xn--l1adgmc.example`) and percent-encodes
 * the rest, without a trailing slash when the path is the root (as FORUM_PUBLIC_URL is written).
 * Input: any text (untrusted). Output: the ASCII URL, or null when the text is not an absolute
 * http: or https: URL, carries a user name or password, or holds a control character anywhere
 * (the caller then leaves the header out and says the text in the body). Never throws.
 */
export function urlHeaderValue(text: unknown): string | null {
  if (typeof text !== 'string' || text === '' || CONTROL_CHARS.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.host === '' || url.username !== '' || url.password !== '') return null;
  const value = url.pathname === '/' && url.search === '' && url.hash === '' ? url.origin : url.href;
  // A last guard: only visible ASCII (the header grammar's field-vchar minus obs-text).
  return /^[\x21-\x7e]+$/.test(value) ? value : null;
}

/** `{'X-Forum-Leader': value}` for a leader URL that makes a valid header, else `{}` (see urlHeaderValue). */
export function leaderHeader(leaderUrl: unknown): Record<string, string> {
  const value = urlHeaderValue(leaderUrl);
  return value === null ? {} : { 'X-Forum-Leader': value };
}

/**
 * Text from outside (a URL, a bucket's field) shown inside a message: JSON-quoted when it holds
 * anything but visible ASCII and spaces, so a CR/LF or control character is shown escaped, never
 * written raw into a log line or a terminal.
 */
export function shownText(text: unknown): string {
  const s = String(text);
  return /^[\x20-\x7e]*$/.test(s) ? s : JSON.stringify(s);
}

/** Header names already reported by writeHeadSafely (one log line per name per process). */
const reportedHeaders = new Set<string>();

/**
 * `res.writeHead(status, headers)` that cannot throw for a header (the central reply path,
 * src/http/reply.ts): when node:http refuses a name or value (ERR_INVALID_CHAR,
 * ERR_INVALID_HTTP_TOKEN — text that should have gone through urlHeaderValue), the offending
 * headers are dropped, logged once per name (`invalid_header_dropped`, the value never logged),
 * and the head is written without them. Other errors are thrown as they are.
 */
export function writeHeadSafely(res: ServerResponse, status: number, headers: OutgoingHttpHeaders): void {
  try {
    res.writeHead(status, headers);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ERR_INVALID_CHAR' && code !== 'ERR_INVALID_HTTP_TOKEN' && code !== 'ERR_HTTP_INVALID_HEADER_VALUE') throw err;
  }
  const kept: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    try {
      validateHeaderName(name);
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) validateHeaderValue(name, String(v));
      kept[name] = value;
    } catch {
      if (!reportedHeaders.has(name)) {
        reportedHeaders.add(name);
        logger.warn('invalid_header_dropped', `a reply header was left out: its name or value is not valid HTTP (${shownText(name).slice(0, 64)})`, { header: shownText(name).slice(0, 64) });
      }
    }
  }
  res.writeHead(status, kept);
}
