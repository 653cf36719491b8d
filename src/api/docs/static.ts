/**
 * Static documents (issue 6; also the A2A agent card, issue 9): bytes + content type + a strong
 * ETag computed once, served with `Cache-Control: public, max-age=<seconds>` (the guidance
 * documents' DOCS_CACHE_MAX_AGE_SECONDS unless the document says otherwise) and answered 304 when
 * `If-None-Match` matches. The one code path for conditional GETs of documents.
 */
import { createHash } from 'node:crypto';
import type { Reply, RequestContext } from '../../http/router.js';
import { BASE_URL_PLACEHOLDER, DOCS_CACHE_MAX_AGE_SECONDS } from '../../constants.js';

export interface StaticDocument {
  body: Buffer;
  contentType: string;
  /** Strong entity tag, quoted: `"<sha256 base64url, 22 chars>"`. */
  etag: string;
  /** `max-age` of its Cache-Control, in seconds. */
  maxAgeSeconds: number;
}

/**
 * Wraps bytes (or UTF-8 text) as a document; the ETag is a digest of the exact bytes.
 * `maxAgeSeconds`: how long clients and proxies may cache it (default DOCS_CACHE_MAX_AGE_SECONDS).
 */
export function staticDocument(body: string | Buffer, contentType: string, maxAgeSeconds: number = DOCS_CACHE_MAX_AGE_SECONDS): StaticDocument {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
  return { body: bytes, contentType, etag, maxAgeSeconds };
}

/**
 * Whether an If-None-Match header matches `etag` (RFC 9110 13.1.2: `*`, a comma-separated list,
 * weak comparison so `W/"x"` matches `"x"`).
 */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const header = ifNoneMatch.trim();
  if (header === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/** Replaces every `{{BASE_URL}}` with the public base URL (no trailing slash). */
export function withBaseUrl(template: string, publicUrl: string): string {
  return template.split(BASE_URL_PLACEHOLDER).join(publicUrl);
}

/**
 * Referrer-Policy of every HTML page the server sends: the web reader (`/`), `/api/docs` and the
 * guides' HTML (issue 34). `no-referrer`: a request or a followed link from these pages carries no
 * Referer at all, so a link's target never learns this server's address or the page it was on,
 * and the pages' own API requests need none.
 */
export const HTML_REFERRER_POLICY = 'no-referrer';

/** The caching headers of a document. */
export function cacheHeaders(doc: StaticDocument): Record<string, string> {
  return { ETag: doc.etag, 'Cache-Control': `public, max-age=${doc.maxAgeSeconds}` };
}

/** Replies 200 with the document, or 304 (no body) when the client already has this version. */
export function serveStatic(ctx: RequestContext, doc: StaticDocument, extraHeaders: Record<string, string> = {}): Reply {
  const headers = { ...cacheHeaders(doc), ...extraHeaders };
  if (etagMatches(ctx.req.headers['if-none-match'], doc.etag)) return { status: 304, headers };
  return { status: 200, raw: doc.body, contentType: doc.contentType, headers };
}

/**
 * Memoises a document rendered for one public base URL. A process has one FORUM_PUBLIC_URL, so
 * one entry is kept (bounded by construction); a different URL (in-process tests) re-renders.
 */
export function perBaseUrl(render: (publicUrl: string) => StaticDocument): (publicUrl: string) => StaticDocument {
  let last: { url: string; doc: StaticDocument } | null = null;
  return (url) => {
    if (last?.url !== url) last = { url, doc: render(url) };
    return last.doc;
  };
}
