/**
 * Content negotiation of the A2A binding (A2A 1.0.1 §11.1, issue 54): the HTTP+JSON binding
 * SHOULD use `application/a2a+json` for requests and responses; clients written for 1.0 send and
 * expect `application/json`. Both are accepted on requests (the route's `contentTypes`), and every
 * /a2a/* answer — results and google.rpc.Status errors alike — is sent as the one the client
 * prefers (RFC 9110 §12.5.1 `Accept`, with `Vary: Accept`):
 *
 * - the media type whose q-value in Accept is higher wins; each type's q-value is that of the most
 *   specific range that matches it (`application/a2a+json` > `application/*` > `*\/*`), 0 when none
 *   does;
 * - on a tie (no Accept, `*\/*`, or both listed with the same q) the answer mirrors the request:
 *   `application/a2a+json` when the request body was sent as it and the client accepts it, else
 *   `application/json` — so a 1.0 client that never names the new type sees no change;
 * - when Accept accepts neither, the answer is `application/json` all the same (the server may
 *   disregard Accept rather than answer 406, RFC 9110 §12.5.1; A2A errors are JSON either way).
 *
 * The two media types carry the same JSON (A2A's ProtoJSON objects): only Content-Type differs.
 */
import type { IncomingMessage } from 'node:http';
import { A2A_MEDIA_TYPE } from '../../constants.js';
import { JSON_CONTENT_TYPE } from '../../http/router.js';

/** The media types an A2A answer may be sent as, in the order OpenAPI lists them. */
export const A2A_RESPONSE_MEDIA_TYPES: readonly string[] = ['application/json', A2A_MEDIA_TYPE];

/** One media range of an Accept header: `type`/`subtype` (lower case, `*` for a wildcard) and its q-value. */
interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

/** Longest Accept header value looked at (ours): a longer one is cut there before it is parsed. */
const ACCEPT_CHARS_MAX = 1024;

/** Parses an Accept header into media ranges; malformed ranges are skipped, a malformed q counts as 1 (RFC 9110 §12.4.2: qvalue). */
function parseAccept(header: string): MediaRange[] {
  const out: MediaRange[] = [];
  for (const item of header.slice(0, ACCEPT_CHARS_MAX).split(',')) {
    const [range, ...params] = item.split(';');
    const m = /^\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\/([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*$/.exec(range ?? '');
    if (!m) continue;
    let q = 1;
    for (const p of params) {
      const qm = /^\s*q\s*=\s*(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)\s*$/i.exec(p);
      if (qm) q = Number(qm[1]);
    }
    out.push({ type: m[1]!.toLowerCase(), subtype: m[2]!.toLowerCase(), q });
  }
  return out;
}

/** The q-value Accept gives `type/subtype`: that of the most specific matching range, 0 when none matches. */
function quality(ranges: readonly MediaRange[], type: string, subtype: string): number {
  let best = -1;
  let q = 0;
  for (const r of ranges) {
    const specificity = r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === '*' ? 1 : r.type === '*' && r.subtype === '*' ? 0 : -1;
    if (specificity > best) {
      best = specificity;
      q = r.q;
    }
  }
  return q;
}

/** True when the request's Content-Type is application/a2a+json (parameters ignored). */
function sentAsA2A(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() === A2A_MEDIA_TYPE;
}

/**
 * The Content-Type of an A2A answer to `req` (see the module comment): `application/a2a+json`
 * or JSON_CONTENT_TYPE (`application/json; charset=utf-8`).
 */
export function a2aContentType(req: IncomingMessage): string {
  const accept = req.headers.accept;
  const ranges = accept === undefined || accept.trim() === '' ? [{ type: '*', subtype: '*', q: 1 }] : parseAccept(accept);
  const a2a = quality(ranges, 'application', 'a2a+json');
  const json = quality(ranges, 'application', 'json');
  if (a2a > json) return A2A_MEDIA_TYPE;
  if (json > a2a) return JSON_CONTENT_TYPE;
  return a2a > 0 && sentAsA2A(req) ? A2A_MEDIA_TYPE : JSON_CONTENT_TYPE;
}
