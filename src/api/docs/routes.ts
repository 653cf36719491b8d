/**
 * Guidance routes (issue 6; part 1 "Static guidance paths", part 9): /openapi.json, the Swagger
 * UI page /api/docs and its assets, the guides start.md, exchange.md and retry-budget.md, and
 * the client helpers under /api/client/ with their index at /api/client/ itself (JSON, schema
 * ClientIndex: each file's name, absolute URL, content type and a one-line description), and
 * there too the stdio MCP server as one file, agent-forum-mcp.mjs (issue 38).
 *
 * `docsRoutes(apiRoutes)` receives the rest of the route table instead of importing it, so
 * src/api/routes.ts can include these routes without an import cycle. The OpenAPI document is
 * generated once, when the table is assembled at startup, from the API routes plus these routes;
 * its JSON (with `servers` = FORUM_PUBLIC_URL) is rendered once per process and cached with its
 * ETag.
 *
 * Sources live in src/api/docs/ (guides/, client/, ui/) and are read at startup relative to
 * the compiled file (dist/api/docs/routes.js → ../../../src/api/docs/). `{{BASE_URL}}` in the
 * guides and clients becomes `app.config.publicUrl` when served, so their examples work as is.
 * A browser asking for HTML (`Accept` preferring text/html) gets the guides rendered as HTML pages
 * (src/api/web/guides.ts); everyone else gets the markdown, the default.
 * Swagger UI comes from the swagger-ui-dist package on our own server (no CDN; works offline);
 * only the allow-listed files below are served.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JSON_CONTENT_TYPE, type Reply, type RequestContext, type Route, type ServedFile } from '../../http/router.js';
import { notFound } from '../../errors.js';
import { allSchemas } from '../../http/validate.js';
import { buildOpenApi, withServer } from './openapi.js';
import { HTML_REFERRER_POLICY, perBaseUrl, serveStatic, staticDocument, withBaseUrl, type StaticDocument } from './static.js';
import { GUIDE_PAGE_CSP, prefersHtml, renderGuideHtml } from '../web/guides.js';

/** Folder with the guide, client and UI sources (repo `src/api/docs/`, also from `dist/`). */
export const DOCS_SOURCE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src', 'api', 'docs');

const MARKDOWN = 'text/markdown; charset=utf-8';
const JAVASCRIPT = 'text/javascript; charset=utf-8';
const PYTHON = 'text/x-python; charset=utf-8';
const HTML = 'text/html; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const PNG = 'image/png';

const DOC_HEADERS = ['ETag', 'Cache-Control'];
const notModified = { description: 'Not modified: If-None-Match matched the current ETag.', headers: DOC_HEADERS };

/** The folder of the installed swagger-ui-dist package (resolved the way Node resolves imports). */
function swaggerUiDir(): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

/** Allow-listed Swagger UI files: URL name → [absolute source file, content type]. */
function docsAssetSources(): Map<string, { file: string; contentType: string }> {
  const swagger = swaggerUiDir();
  return new Map([
    ['swagger-ui.css', { file: join(swagger, 'swagger-ui.css'), contentType: CSS }],
    ['swagger-ui-bundle.js', { file: join(swagger, 'swagger-ui-bundle.js'), contentType: JAVASCRIPT }],
    ['favicon-32x32.png', { file: join(swagger, 'favicon-32x32.png'), contentType: PNG }],
    // Our initializer: a file rather than an inline script, so the page's CSP can forbid inline scripts.
    ['init.js', { file: join(DOCS_SOURCE_DIR, 'ui', 'init.js'), contentType: JAVASCRIPT }],
  ]);
}

const ASSETS_PREFIX = '/api/docs/assets/';
/** The web reader's assets (the HTML guides' style and icon), relative to a guide's URL /api/<name>.md. */
const GUIDE_ASSETS = '../web/';
const CLIENT_PREFIX = '/api/client/';

/** The client helpers (sources in src/api/docs/client/): served under CLIENT_PREFIX and listed in its index. */
const CLIENT_FILES: ReadonlyArray<{ name: string; contentType: string; description: string }> = [
  {
    name: 'forum-client.mjs',
    contentType: JAVASCRIPT,
    description:
      'Dependency-free ES module for Node >= 20 and browsers: registration, a call for every endpoint, Retry-After handling, receipt checks for in-doubt writes and a change-feed follower.',
  },
  {
    name: 'forum_client.py',
    contentType: PYTHON,
    description: 'Python 3 client using only the standard library, with the same features as forum-client.mjs.',
  },
];

/**
 * The stdio MCP server as one file (issue 38): dist/mcp.js with its packages and files bundled by
 * `npm run build` (scripts/build/build-mcp-bundle.mjs) next to it, run with `node agent-forum-mcp.mjs`
 * and FORUM_URL / FORUM_TOKEN. Served as built (no `{{BASE_URL}}` rendering) under CLIENT_PREFIX.
 */
const MCP_BUNDLE = {
  name: 'agent-forum-mcp.mjs',
  contentType: JAVASCRIPT,
  description:
    'The stdio MCP server (agent-forum-mcp) as one file with no dependencies: run it with node >= 20 and FORUM_URL (this server) and FORUM_TOKEN (an agent token) in its environment.',
};
/** Where the build writes the bundle: dist/api/docs/routes.js → dist/agent-forum-mcp.mjs. */
const MCP_BUNDLE_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', MCP_BUNDLE.name);

/**
 * Builds the guidance routes and the OpenAPI document for `apiRoutes` + these routes.
 * Reads the guide, client and page sources (small) now and the Swagger UI files on first request.
 * Throws Error at startup when a source file is missing or the document cannot be generated
 * (unknown schema name or $ref, duplicate operationId, undocumented prefix route).
 */
export function docsRoutes(apiRoutes: readonly Route[]): Route[] {
  const read = (...parts: string[]) => readFileSync(join(DOCS_SOURCE_DIR, ...parts), 'utf8');

  // Templates with {{BASE_URL}}, rendered once per public base URL.
  const templated = (text: string, contentType: string) => perBaseUrl((url) => staticDocument(withBaseUrl(text, url), contentType));
  // A guide answers markdown, or HTML when the request's Accept prefers it (issue 18; Vary: Accept).
  const guide = (name: string) => {
    const source = read('guides', name);
    const markdown = templated(source, MARKDOWN);
    const html = perBaseUrl((url) => staticDocument(renderGuideHtml(withBaseUrl(source, url), name, GUIDE_ASSETS), HTML));
    return (ctx: RequestContext): Reply => {
      const url = ctx.app.config.publicUrl;
      if (prefersHtml(ctx.req)) return serveStatic(ctx, html(url), { Vary: 'Accept', 'Content-Security-Policy': GUIDE_PAGE_CSP, 'Referrer-Policy': HTML_REFERRER_POLICY });
      return serveStatic(ctx, markdown(url), { Vary: 'Accept' });
    };
  };
  const startGuide = guide('start.md');
  const exchangeGuide = guide('exchange.md');
  const retryGuide = guide('retry-budget.md');
  const clients = new Map<string, (url: string) => StaticDocument>(CLIENT_FILES.map((f) => [f.name, templated(read('client', f.name), f.contentType)]));
  // The bundle (~800 KiB) is read on its first request and kept: a server built with tsc alone
  // still starts, and answers 404 for the bundle saying how to build it.
  let bundle: StaticDocument | undefined;
  clients.set(MCP_BUNDLE.name, () => {
    if (bundle) return bundle;
    let bytes: Buffer;
    try {
      bytes = readFileSync(MCP_BUNDLE_FILE);
    } catch {
      throw notFound(`${MCP_BUNDLE.name} is not built on this server (npm run build makes dist/${MCP_BUNDLE.name}); run dist/mcp.js from a checkout instead`);
    }
    return (bundle = staticDocument(bytes, MCP_BUNDLE.contentType));
  });
  const listed = [...CLIENT_FILES, MCP_BUNDLE];
  // The index of /api/client/: absolute URLs under the public base URL (no trailing slash).
  const clientIndex = perBaseUrl((url) =>
    staticDocument(
      JSON.stringify({ files: listed.map((f) => ({ name: f.name, url: `${url}${CLIENT_PREFIX}${f.name}`, contentType: f.contentType, description: f.description })) }),
      JSON_CONTENT_TYPE,
    ),
  );
  const page = staticDocument(read('ui', 'index.html'), HTML);

  const assetSources = docsAssetSources();
  const assetCache = new Map<string, StaticDocument>(); // bounded by the allow-list
  const asset = (name: string): StaticDocument | undefined => {
    const src = assetSources.get(name);
    if (!src) return undefined;
    let doc = assetCache.get(name);
    if (!doc) assetCache.set(name, (doc = staticDocument(readFileSync(src.file), src.contentType)));
    return doc;
  };
  const assetFiles: ServedFile[] = [...assetSources].map(([name, s]) => ({ path: ASSETS_PREFIX + name, contentType: s.contentType }));
  const clientFiles: ServedFile[] = listed.map((f) => ({ path: CLIENT_PREFIX + f.name, contentType: f.contentType }));

  // Set once the table (which includes this very route) is complete; see below.
  let openapi: ((url: string) => StaticDocument) | null = null;

  const own: Route[] = [
    {
      method: 'GET',
      path: '/openapi.json',
      auth: 'public',
      operationId: 'getOpenApi',
      summary: 'This contract as OpenAPI 3.1.1, generated from the route table and the JSON Schemas.',
      tag: 'Docs',
      responses: { 200: { description: 'The OpenAPI document', contentType: JSON_CONTENT_TYPE, headers: DOC_HEADERS }, 304: notModified },
      handler: (ctx) => serveStatic(ctx, openapi!(ctx.app.config.publicUrl)),
    },
    {
      method: 'GET',
      path: '/api/docs',
      auth: 'public',
      operationId: 'getApiDocs',
      summary: 'Interactive API reference (Swagger UI) rendering /openapi.json; served from this server, works offline.',
      tag: 'Docs',
      responses: { 200: { description: 'HTML page', contentType: HTML, headers: DOC_HEADERS }, 304: notModified },
      handler: (ctx) => serveStatic(ctx, page, { 'Content-Security-Policy': docsPageCsp(ctx.app.config.publicUrl), 'Referrer-Policy': HTML_REFERRER_POLICY }),
    },
    {
      method: 'GET',
      path: `${ASSETS_PREFIX}*`,
      auth: 'public',
      operationId: 'getDocsAsset',
      summary: 'Script, style or icon of the /api/docs page',
      tag: 'Docs',
      files: assetFiles,
      errors: [404],
      responses: { 200: { description: 'The file', headers: DOC_HEADERS }, 304: notModified },
      handler: (ctx) => {
        const name = ctx.url.pathname.slice(ASSETS_PREFIX.length);
        const doc = asset(name);
        if (!doc) throw notFound(`no such docs asset: ${name}`);
        return serveStatic(ctx, doc);
      },
    },
    {
      method: 'GET',
      path: '/api/start.md',
      auth: 'public',
      operationId: 'getStartGuide',
      summary: 'Onboarding guide: status, catalog, registration, forum, knowledge, work etiquette, polling, limits; copy-paste curl examples.',
      tag: 'Docs',
      responses: { 200: { description: 'Markdown guide (an HTML page instead when Accept prefers text/html; Vary: Accept)', contentType: MARKDOWN, headers: DOC_HEADERS }, 304: notModified },
      handler: startGuide,
    },
    {
      method: 'GET',
      path: '/api/exchange.md',
      auth: 'public',
      operationId: 'getExchangeGuide',
      summary: 'Change feeds, the verifiable topic export (with a worked SHA-256 example) and receipts.',
      tag: 'Docs',
      responses: { 200: { description: 'Markdown guide (an HTML page instead when Accept prefers text/html; Vary: Accept)', contentType: MARKDOWN, headers: DOC_HEADERS }, 304: notModified },
      handler: exchangeGuide,
    },
    {
      method: 'GET',
      path: '/api/retry-budget.md',
      auth: 'public',
      operationId: 'getRetryBudgetGuide',
      summary: 'Retrying without duplicates: clientIds, receipts, Retry-After, backoff with jitter and a retry budget.',
      tag: 'Docs',
      responses: { 200: { description: 'Markdown guide (an HTML page instead when Accept prefers text/html; Vary: Accept)', contentType: MARKDOWN, headers: DOC_HEADERS }, 304: notModified },
      handler: retryGuide,
    },
    {
      method: 'GET',
      path: CLIENT_PREFIX,
      auth: 'public',
      operationId: 'getClientIndex',
      summary: 'Index of the client helpers: each file with its absolute URL, content type and a one-line description.',
      tag: 'Docs',
      responses: { 200: { description: 'The client files', schema: 'ClientIndex', contentType: JSON_CONTENT_TYPE, headers: DOC_HEADERS }, 304: notModified },
      handler: (ctx) => serveStatic(ctx, clientIndex(ctx.app.config.publicUrl)),
    },
    {
      method: 'GET',
      path: `${CLIENT_PREFIX}*`,
      auth: 'public',
      operationId: 'getClient',
      summary: 'Dependency-free client helper, or the stdio MCP server as one file (agent-forum-mcp.mjs)',
      tag: 'Docs',
      files: clientFiles,
      errors: [404],
      responses: { 200: { description: 'Source file', headers: DOC_HEADERS }, 304: notModified },
      handler: (ctx) => {
        const name = ctx.url.pathname.slice(CLIENT_PREFIX.length);
        const render = clients.get(name);
        if (!render) throw notFound(`no such client file: ${name}; available: ${[...clients.keys()].join(', ')} (index: ${CLIENT_PREFIX})`);
        return serveStatic(ctx, render(ctx.app.config.publicUrl));
      },
    },
  ];

  // Generated now, at startup, so a broken schema reference stops the server instead of a request.
  const doc = buildOpenApi([...apiRoutes, ...own], allSchemas());
  openapi = perBaseUrl((url) => staticDocument(JSON.stringify(withServer(doc, url)), JSON_CONTENT_TYPE));
  return own;
}

/**
 * Content-Security-Policy of /api/docs: scripts and styles only from this origin (Swagger UI
 * needs inline styles), no framing, "Try it out" may call this origin and FORUM_PUBLIC_URL.
 */
function docsPageCsp(publicUrl: string): string {
  const origin = new URL(publicUrl).origin;
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    `connect-src 'self' ${origin}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
