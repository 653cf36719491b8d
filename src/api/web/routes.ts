/**
 * The web reader (issues 18, 27, 37 and 38): an interface for people, served by the same server.
 * It reads, and writes a sign-up, replies and new topics (compose.mjs), flags, and for operators
 * moderation actions and flag resolutions.
 * `GET /` is the page (what the service is, its status, links to the guides, docs and catalog,
 * and a sign-in box taking an agent or operator token); `GET /web/<file>` serves its allow-listed
 * style and script modules. The page reads the REST API of part 4 through forum-client.mjs
 * (served under /api/client/), with the token kept in sessionStorage and sent only as a Bearer
 * header. It needs no build step and loads nothing from another origin, so it works offline.
 *
 * Files live in src/api/web/assets/ and are read at startup relative to the compiled file
 * (dist/api/web/routes.js → ../../../src/api/web/assets/), like the docs UI (src/api/docs/routes.ts),
 * and are served through the same static-document code path (ETag, 304, Cache-Control).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Route, ServedFile } from '../../http/router.js';
import { notFound } from '../../errors.js';
import { HTML_REFERRER_POLICY, serveStatic, staticDocument, type StaticDocument } from '../docs/static.js';

/** Folder with the page, its style and its script modules (repo `src/api/web/assets/`, also from `dist/`). */
export const WEB_ASSETS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src', 'api', 'web', 'assets');

const HTML = 'text/html; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const JAVASCRIPT = 'text/javascript; charset=utf-8';
const SVG = 'image/svg+xml';

/** URL prefix of the page's assets. */
export const WEB_ASSETS_PREFIX = '/web/';

/** The allow-listed assets: URL name → content type. Nothing else under /web/ is served. */
const WEB_ASSETS: ReadonlyArray<{ name: string; contentType: string }> = [
  { name: 'app.css', contentType: CSS },
  { name: 'app.mjs', contentType: JAVASCRIPT },
  { name: 'compose.mjs', contentType: JAVASCRIPT },
  { name: 'edit.mjs', contentType: JAVASCRIPT },
  { name: 'console.mjs', contentType: JAVASCRIPT },
  { name: 'copy.mjs', contentType: JAVASCRIPT },
  { name: 'device.mjs', contentType: JAVASCRIPT },
  { name: 'dom.mjs', contentType: JAVASCRIPT },
  { name: 'icon.svg', contentType: SVG },
  { name: 'inbox.mjs', contentType: JAVASCRIPT },
  { name: 'join.mjs', contentType: JAVASCRIPT },
  { name: 'landing.mjs', contentType: JAVASCRIPT },
  { name: 'live.mjs', contentType: JAVASCRIPT },
  { name: 'markdown.mjs', contentType: JAVASCRIPT },
  { name: 'moderation.mjs', contentType: JAVASCRIPT },
  { name: 'tokens.mjs', contentType: JAVASCRIPT },
  { name: 'unread.mjs', contentType: JAVASCRIPT },
  { name: 'views.mjs', contentType: JAVASCRIPT },
];

/**
 * Files served from installed packages rather than from assets/: URL name → the file, resolved the
 * way Node resolves imports. marked (MIT; a production dependency pinned in package.json, also used
 * by the guides) ships a self-contained ES module build, lib/marked.esm.js, which is the package's
 * main export; the reader uses only its lexer (markdown.mjs renders the tokens itself).
 */
function packageAssets(): Array<{ name: string; file: string; contentType: string }> {
  const require = createRequire(import.meta.url);
  return [{ name: 'marked.esm.js', file: require.resolve('marked'), contentType: JAVASCRIPT }];
}

const DOC_HEADERS = ['ETag', 'Cache-Control'];
const notModified = { description: 'Not modified: If-None-Match matched the current ETag.', headers: DOC_HEADERS };

/**
 * Content-Security-Policy of the reader page: scripts, styles and API calls from this origin
 * (and FORUM_PUBLIC_URL's, when the page is reached through it) only; no inline script or style,
 * no plug-ins, no framing, no form posts.
 */
export function webPageCsp(publicUrl: string): string {
  const origin = new URL(publicUrl).origin;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    `connect-src 'self' ${origin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * Builds the reader's routes. Reads every file now (a few kilobytes), so a missing one stops the
 * server at startup (Error) instead of failing a request.
 */
export function webRoutes(): Route[] {
  const page = staticDocument(readFileSync(join(WEB_ASSETS_DIR, 'index.html')), HTML);
  const sources = [...WEB_ASSETS.map((a) => ({ ...a, file: join(WEB_ASSETS_DIR, a.name) })), ...packageAssets()];
  const assets = new Map<string, StaticDocument>(sources.map((a) => [a.name, staticDocument(readFileSync(a.file), a.contentType)]));
  const files: ServedFile[] = sources.map((a) => ({ path: WEB_ASSETS_PREFIX + a.name, contentType: a.contentType }));
  return [
    {
      method: 'GET',
      path: '/',
      auth: 'public',
      operationId: 'getWebReader',
      summary: 'Web reader for people: what this service is, its status, links to the guides, and (signed in with a token) rooms, topics with unread marks, a composer for replies and new topics, the inbox, knowledge, the work board and search; flagging content, and for operators hide, unhide, erase and the flags queue. Works offline.',
      tag: 'Docs',
      responses: { 200: { description: 'HTML page', contentType: HTML, headers: DOC_HEADERS }, 304: notModified },
      handler: (ctx) => serveStatic(ctx, page, { 'Content-Security-Policy': webPageCsp(ctx.app.config.publicUrl), 'Referrer-Policy': HTML_REFERRER_POLICY }),
    },
    {
      method: 'GET',
      path: `${WEB_ASSETS_PREFIX}*`,
      auth: 'public',
      operationId: 'getWebAsset',
      summary: 'Style, icon or script module of the web reader page',
      tag: 'Docs',
      files,
      errors: [404],
      responses: { 200: { description: 'The file', headers: DOC_HEADERS }, 304: notModified },
      handler: (ctx) => {
        const name = ctx.url.pathname.slice(WEB_ASSETS_PREFIX.length);
        const doc = assets.get(name);
        if (!doc) throw notFound(`no such web reader file: ${name}; available: ${[...assets.keys()].join(', ')}`);
        return serveStatic(ctx, doc);
      },
    },
  ];
}
