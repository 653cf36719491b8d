/**
 * The router is a table (trouter's idea): one array of routes, each with its method, exact path
 * (or a `/*` prefix for static folders and catch-alls), auth, schemas, rate-limit class and
 * handler. The same table drives request handling and /openapi.json, so the document cannot miss
 * a route.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { App } from '../app.js';
import type { AgentEntry } from '../domain/agents/agents.js';
import type { AgentToken } from '../domain/agents/tokens.js';
import { type ServiceError, fail, notFound } from '../errors.js';
import { methodNotAllowed } from './errors.js';

export type Method = 'GET' | 'POST';

/** Which per-token or per-IP limit of part 8 a route counts toward (beyond the global limit). */
export type RateLimitClass = 'write' | 'changeRead' | 'registration';

/** The Content-Type of every JSON reply (a `body` or `json`, and raw JSON a handler sends). */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** What a handler returns; the server serialises and sends it. */
export interface Reply {
  status: number;
  /** A value to JSON.stringify, or... */
  body?: unknown;
  /** ...pre-serialised JSON (hot paths), or... */
  json?: string;
  /** ...raw text/bytes with `contentType`. */
  raw?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  /**
   * ...or a stream (issue 37, Server-Sent Events): the server writes the head (`status`,
   * EVENT_STREAM_CONTENT_TYPE, no Content-Length) and hands the response to this function, which
   * writes to it and ends it later.
   */
  stream?: (res: ServerResponse) => void;
}

/** The Content-Type of a Server-Sent Events stream (WHATWG HTML "Server-sent events"; UTF-8 always). */
export const EVENT_STREAM_CONTENT_TYPE = 'text/event-stream';

/** A parsed request target: the path as sent (not decoded) and the query parameters. */
export interface RequestTarget {
  pathname: string;
  searchParams: URLSearchParams;
}

/**
 * Splits a request target into path and query without a full URL parse (a hot path: every
 * request). Absolute-form targets (`http://host/path`, sent to proxies) fall back to URL.
 * Throws 400 `BAD_TARGET` naming the request target when it cannot be parsed (e.g.
 * `http://[zz/api/status`), and when its path or query string holds a malformed percent-escape
 * (`assertEscapes`).
 */
export function parseTarget(target: string): RequestTarget {
  if (!target.startsWith('/')) {
    let u: URL;
    try {
      u = new URL(target, 'http://localhost');
    } catch {
      throw fail('BAD_TARGET', `malformed request target ${JSON.stringify(target.slice(0, 200))}: send a path such as /api/status (origin-form) or an absolute http(s) URL`);
    }
    return { pathname: u.pathname, searchParams: u.searchParams };
  }
  const q = target.indexOf('?');
  const pathname = q === -1 ? target : target.slice(0, q);
  if (pathname.includes('%')) assertEscapes(pathname, 'path');
  if (q === -1) return { pathname, searchParams: new URLSearchParams() };
  const query = target.slice(q + 1);
  if (query.includes('%')) assertEscapes(query, 'query string');
  return { pathname, searchParams: new URLSearchParams(query) };
}

/** The path of an origin-form target (`/a/b?x` → `/a/b`), unchecked: to pick a route's error format. */
export function rawPathOf(target: string): string | undefined {
  if (!target.startsWith('/')) return undefined;
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
}

const ESCAPE_RUN = /(?:%[0-9a-fA-F]{2})+/g;
/** A `%` that does not start an escape of two hex digits (RFC 3986 section 2.1). */
const BARE_PERCENT = /%(?![0-9a-fA-F]{2})/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Throws 400 `BAD_TARGET` when the path or query string `part` holds a malformed escape (issue 28
 * item 7): a `%` not followed by two hex digits (RFC 3986 section 2.1; a literal % is sent as
 * %25), or a run of escapes that is not UTF-8. Decoding such text either throws (a handler's
 * decodeURIComponent, once a 500) or turns it into U+FFFD (URLSearchParams: `q=%FF` would search
 * for a character the client never sent).
 */
function assertEscapes(part: string, where: 'path' | 'query string'): void {
  const bare = BARE_PERCENT.exec(part);
  if (bare) {
    const shown = part.slice(bare.index, bare.index + 3);
    throw fail('BAD_TARGET', `${where} holds ${JSON.stringify(shown)}, a % that does not start a percent-escape of two hex digits; send a literal % as %25`);
  }
  for (const run of part.match(ESCAPE_RUN) ?? []) {
    const bytes = Buffer.from(run.replace(/%/g, ''), 'hex');
    try {
      strictUtf8.decode(bytes);
    } catch {
      throw fail('BAD_TARGET', `${where} holds ${JSON.stringify(run.slice(0, 60))}, which is not percent-encoded UTF-8`);
    }
  }
}

/** Everything a handler may use about one request. */
export interface RequestContext {
  app: App;
  req: IncomingMessage;
  /** The request target: path and query parameters. */
  url: RequestTarget;
  /** Validated query parameters (with defaults). */
  query: Record<string, unknown>;
  /** Validated body (with defaults), or undefined for GET. */
  body: unknown;
  /** The authenticated caller on Bearer routes; null on public routes. */
  agent: AgentEntry | null;
  /**
   * The token the caller authenticated with (issue 53: its id and scopes), set with `agent` on
   * Bearer routes; unset on public routes.
   */
  token?: AgentToken;
  /** Client address (see FORUM_TRUST_PROXY and src/http/client-ip.ts `clientIpResolver`). */
  clientIp: string;
  /**
   * When the request's handling began (performance.now(), ms; its head parsed): a long-polled
   * feed request charges the main-thread time from here to its hold to the delivery round whose
   * followers it belongs to (issue 37, src/api/feeds/long-poll.ts). Unset on dispatched routes.
   */
  startedMs?: number;
  /**
   * Set by a handler whose reply a delivery round sends (a held long-poll request, issue 37):
   * called with the main-thread time, in ms, that sending the reply took (its head and body
   * written to the socket), which the rounds' share counts.
   */
  onSent?: (ms: number) => void;
  /** Set on dispatching routes only (`dispatch: true`): runs other routes of the table. */
  runner?: RouteRunner;
  /**
   * Set on dispatching routes only: registers `fn` to run once the response has been handed to
   * the socket or the connection closed (a handler that holds a slot releases it there); runs
   * `fn` at once when the connection closed already.
   */
  onResponseClosed?: (fn: () => void) => void;
}

/** The input of one route run: its query parameters and, for POST, its raw JSON body. */
export interface RouteInput {
  query: URLSearchParams;
  /** Returns the unvalidated JSON body; called only for POST routes, after the write stop. */
  body: () => unknown;
}

/**
 * Runs a route of the table through the same steps as a REST request of the same caller
 * (src/http/server.ts `runRoute`): its guards.afterAuth (its rate-limit class), the write stop for
 * POST, its compiled query/body validator, its handler and the durability wait.
 */
export interface RouteRunner {
  /** The route registered for exactly this method and path, or undefined. */
  find(method: Method, path: string): Route | undefined;
  /** Runs `route` for the current caller; throws the ServiceError the route would answer. */
  run(route: Route, input: RouteInput): Promise<Reply>;
}

/**
 * How a route renders its errors when not as part 7's `{"error": "..."}` (e.g. the A2A binding's
 * google.rpc.Status). Applies to every error of a request routed to it, including 401, 413, 415
 * and 429 raised before its handler.
 */
export interface ErrorFormat {
  /** Schema name in schemas/ of the error body, for OpenAPI. */
  schema: string;
  /** Renders the error body (JSON text). */
  render(err: ServiceError, app: App): string;
  /**
   * The Content-Type of the error body for `req` (content negotiation, e.g. A2A's
   * application/a2a+json; sent with `Vary: Accept`); default JSON_CONTENT_TYPE.
   */
  contentType?(req: IncomingMessage): string;
  /** Every media type `contentType` may answer, for OpenAPI (default application/json only). */
  contentTypes?: readonly string[];
}

/** OpenAPI description of one response. */
export interface ResponseDoc {
  description: string;
  /** Schema name in schemas/, or omitted. */
  schema?: string;
  /** Content type when not application/json. */
  contentType?: string;
  /** Further media types the same body is sent as when the client prefers one (content negotiation), for OpenAPI. */
  alsoAs?: readonly string[];
  headers?: string[];
  /**
   * The same status may instead be a stream of Server-Sent Events (issue 37; asked for with
   * `Accept: text/event-stream`): what its events carry. OpenAPI lists it as a second content,
   * `text/event-stream`.
   */
  eventStream?: string;
}

/**
 * One concrete operation answered by a catch-all route (`method: '*'`), documented in
 * /openapi.json as its own operation: OpenAPI has neither wildcard paths nor wildcard methods.
 */
export interface CatchAllOperation {
  method: 'GET' | 'POST' | 'DELETE';
  /** Full path; may use OpenAPI templates, e.g. `/a2a/tasks/{id}:cancel`. */
  path: string;
  /** Appended to the route's operationId (e.g. `GetTask`). */
  operationIdSuffix: string;
  summary: string;
  /** The error statuses it answers besides 401 (bearer), 429, 500 and 503. */
  errors: number[];
}

/**
 * A request header or query parameter a route's handler reads itself (the pipeline does not
 * validate it, and it is not part of a query schema), for OpenAPI: documented as an `in: header`
 * or `in: query` parameter of the route's operation.
 */
export interface ParameterDoc {
  name: string;
  in: 'header' | 'query';
  required: boolean;
  description: string;
  /** JSON Schema of the value (type string, with its pattern). */
  schema: Record<string, unknown>;
  /** A working value (renderers pre-fill "Try it out" with it). */
  example?: string;
}

/** One action of a dispatching route and the route of the table it runs (for OpenAPI). */
export interface DispatchedAction {
  /** The action's name, e.g. `post`. */
  name: string;
  method: Method;
  path: string;
}

/** One concrete file served by a prefix route (documented in /openapi.json as its own operation). */
export interface ServedFile {
  /** Full path, starting with the route's prefix, e.g. `/api/docs/assets/swagger-ui.css`. */
  path: string;
  /** Content type it is served with. */
  contentType: string;
}

/** One row of the route table: everything the pipeline and /openapi.json need about an operation. */
export interface Route {
  /**
   * The method; `'*'` (prefix routes only) accepts every method, and also receives requests to
   * an exact path under its prefix that has no route for their method (so a catch-all can answer
   * 405 in its own error format).
   */
  method: Method | '*';
  /** Exact path, or a prefix ending in `/*`. */
  path: string;
  auth: 'bearer' | 'public';
  operationId: string;
  summary: string;
  tag: string;
  /** Query schema name (GET), validated before the handler. */
  query?: string;
  /** Body schema name (POST), validated before the handler. */
  body?: string;
  /** Request headers and query parameters the handler reads itself, for OpenAPI (not validated by the pipeline). */
  parameters?: ParameterDoc[];
  /** Accepted request media types for POST (default application/json). */
  contentTypes?: string[];
  rateLimit?: RateLimitClass;
  /** Successful responses by status, for OpenAPI. Error responses are added from part 7. */
  responses: Record<number, ResponseDoc>;
  /** Statuses of part 7 this operation may answer besides the defaults for its method. */
  errors?: number[];
  /**
   * Prefix routes (`/x/*`) only: every concrete file the route serves. OpenAPI has no wildcard
   * paths, so /openapi.json documents each file as its own GET operation; a prefix route
   * without `files` is refused when the document is generated.
   */
  files?: ServedFile[];
  /** Catch-all routes (`method: '*'`) only: the operations it answers, for OpenAPI. */
  operations?: CatchAllOperation[];
  /** Error rendering other than `{"error": "..."}` (default). */
  errorFormat?: ErrorFormat;
  /**
   * Operator-only admin routes (issue 38): answered during a write stop, so an operator can end
   * it (and act on agents) from the console. Every other POST answers 423 WRITE_STOP then.
   */
  duringWriteStop?: boolean;
  /**
   * A dispatching route (the A2A binding) hands each request to another route of the table via
   * `ctx.runner`, and that route runs the per-route steps (guards.afterAuth with its rate-limit
   * class, write stop, validation). For the dispatching route itself the pipeline only
   * authenticates and reads the body with `contentTypes`; `body` then names the envelope's schema,
   * which the handler validates itself (to map failures to its own errors), not the pipeline.
   */
  dispatch?: boolean;
  /**
   * A check of the request head that comes before everything else of the route (right after
   * authentication, before write stop, limits, body and query): the A2A version (A2A 1.0.1
   * §3.6.2), so a request in an unsupported version learns that first, whatever else is wrong.
   * Throws the ServiceError to render.
   */
  checkHead?: (req: IncomingMessage, url: RequestTarget) => void;
  /**
   * Dispatching routes only: the actions and the routes they run. /openapi.json derives from the
   * targets' rate-limit classes which limits the dispatching route's successes report
   * (RateLimit-* headers) and says which actions count toward which limit.
   */
  dispatches?: DispatchedAction[];
  /**
   * Dispatching routes only: the handler reads the body itself from `ctx.req` (its own size bound
   * and its own error for malformed JSON, e.g. JSON-RPC -32700 on /mcp); the pipeline reads none.
   */
  readsBody?: boolean;
  /**
   * The shortest path (issue 56), for a public GET whose answer depends on nothing in the request
   * (no header, query, body or caller): the reply `handler` would return, from a memo — the same
   * Reply object while its bytes stand, a new one when they change. The listener answers
   * `GET`/`HEAD` of exactly `path` (no query string) from it with a head prepared once per memoised
   * reply, skipping the target parse, route lookup, request context and `runRoute`
   * (src/http/server.ts `createRequestListener`); every other request to the route runs `handler`.
   * Only an exact-path GET route with `auth: 'public'` and no query schema, rate-limit class,
   * checkHead or dispatch may have one (checked when the listener is built).
   */
  memo?: (app: App) => Reply;
  handler: (ctx: RequestContext) => Reply | Promise<Reply>;
}

/** Route lookup by method and path. */
export class Router {
  private readonly exact = new Map<string, Map<string, Route>>();
  private readonly prefixes: Route[] = [];

  constructor(readonly routes: readonly Route[]) {
    for (const r of routes) {
      if (r.path.endsWith('/*')) {
        this.prefixes.push(r);
        continue;
      }
      if (r.method === '*') throw new Error(`route ${r.path}: method '*' is for prefix routes only`);
      let byMethod = this.exact.get(r.path);
      if (!byMethod) this.exact.set(r.path, (byMethod = new Map()));
      if (byMethod.has(r.method)) throw new Error(`duplicate route ${r.method} ${r.path}`);
      byMethod.set(r.method, r);
    }
  }

  /** The exact-path route for this method and path, or undefined (no HEAD mapping, no prefixes). */
  find(method: Method, path: string): Route | undefined {
    return this.exact.get(path)?.get(method);
  }

  /** Finds the route. Throws 404 for an unknown path, 405 (with Allow) for another method. */
  match(method: string, path: string): Route {
    const byMethod = this.exact.get(path);
    if (byMethod) {
      const r = byMethod.get(method) ?? (method === 'HEAD' ? byMethod.get('GET') : undefined);
      if (r) return r;
      const catchAll = this.prefixes.find((p) => p.method === '*' && underPrefix(p, path));
      if (catchAll) return catchAll;
      throw methodNotAllowed([...byMethod.keys()]);
    }
    for (const r of this.prefixes) {
      if (underPrefix(r, path)) {
        if (r.method === '*' || r.method === method || (method === 'HEAD' && r.method === 'GET')) return r;
        throw methodNotAllowed([r.method]);
      }
    }
    throw notFound(`no such endpoint: ${path}`);
  }
}

/** Whether `path` lies strictly under prefix route `r` (`/x/*` matches `/x/a`, not `/x/`). */
function underPrefix(r: Route, path: string): boolean {
  const prefix = r.path.slice(0, -1);
  return path.startsWith(prefix) && path.length > prefix.length;
}
