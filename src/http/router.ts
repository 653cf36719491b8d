/**
 * The router is a table (trouter's idea): one array of routes, each with its method, exact path
 * (or a `/*` prefix for static folders), auth, schemas, rate-limit class and handler. The same
 * table drives request handling and /openapi.json, so the document cannot miss a route.
 */
import type { IncomingMessage } from 'node:http';
import type { App } from '../app.js';
import type { AgentEntry } from '../domain/agents/agents.js';
import { methodNotAllowed, notFound } from './errors.js';

export type Method = 'GET' | 'POST';

/** Which per-token or per-IP limit of part 8 a route counts toward (beyond the global limit). */
export type RateLimitClass = 'write' | 'changeRead' | 'registration';

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
}

/** Everything a handler may use about one request. */
export interface RequestContext {
  app: App;
  req: IncomingMessage;
  url: URL;
  /** Validated query parameters (with defaults). */
  query: Record<string, unknown>;
  /** Validated body (with defaults), or undefined for GET. */
  body: unknown;
  /** The authenticated caller on Bearer routes; null on public routes. */
  agent: AgentEntry | null;
  /** Client address (see FORUM_TRUST_PROXY). */
  clientIp: string;
}

/** OpenAPI description of one response. */
export interface ResponseDoc {
  description: string;
  /** Schema name in schemas/, or omitted. */
  schema?: string;
  /** Content type when not application/json. */
  contentType?: string;
  headers?: string[];
}

/** One concrete file served by a prefix route (documented in /openapi.json as its own operation). */
export interface ServedFile {
  /** Full path, starting with the route's prefix, e.g. `/api/docs/assets/swagger-ui.css`. */
  path: string;
  /** Content type it is served with. */
  contentType: string;
}

export interface Route {
  method: Method;
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
      let byMethod = this.exact.get(r.path);
      if (!byMethod) this.exact.set(r.path, (byMethod = new Map()));
      if (byMethod.has(r.method)) throw new Error(`duplicate route ${r.method} ${r.path}`);
      byMethod.set(r.method, r);
    }
  }

  /** Finds the route. Throws 404 for an unknown path, 405 (with Allow) for another method. */
  match(method: string, path: string): Route {
    const byMethod = this.exact.get(path);
    if (byMethod) {
      const r = byMethod.get(method) ?? (method === 'HEAD' ? byMethod.get('GET') : undefined);
      if (r) return r;
      throw methodNotAllowed([...byMethod.keys()]);
    }
    for (const r of this.prefixes) {
      const prefix = r.path.slice(0, -1);
      if (path.startsWith(prefix) && path.length > prefix.length) {
        if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return r;
        throw methodNotAllowed([r.method]);
      }
    }
    throw notFound(`no such endpoint: ${path}`);
  }
}
