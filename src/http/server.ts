/**
 * The request pipeline over node:http (issue 2 "HTTP layer"):
 *
 *   guards.onRequest, for every request whatever its target (503 while shutting down, global
 *   limit 429) → target length (414) and syntax (400) → route (404/405) → runRoute: bearer auth
 *   (401) → write stop for POST (423) → guards.afterAuth (registration limit per IP, per-agent
 *   write and change-read limits 429, low disk 507 for POST) → query/body validation
 *   (400/413/415) → handler → await log durability → send.
 *
 * The write stop comes before the limits so that every POST gets 423 during a write stop (not
 * 429 or 507) and a 423 takes no rate-limit slot. The guards live in src/http/guards.ts and
 * src/http/rate-limit.ts and are wired by src/service.ts.
 *
 * `runRoute` is the per-route part; a dispatching route (the A2A binding, `route.dispatch`) runs
 * other routes of the table through it via `ctx.runner`, so both bindings share one code path.
 *
 * Every error is rendered here and only here: as `{"error": "..."}`, or by the route's
 * `errorFormat` (A2A's google.rpc.Status on /a2a/*); an unexpected exception is logged and answered
 * 500 without its stack. Errors Node's HTTP parser finds before a request exists (431, 400, 408)
 * are written by the `clientError` handler of `createHttpServer`, with the same headers, as are
 * the other replies Node would write itself (a missing Host 400, an unmet Expect 417, CONNECT 405;
 * issue 28 item 6).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { App } from '../app.js';
import { BODY_BYTES_MAX, BODY_DRAIN_BYTES_MAX, BODY_DRAIN_MS, CONNECTIONS_MAX, CONNECTIONS_PER_ADDRESS_DEFAULT, CORS_MAX_AGE_SECONDS, REQUEST_ID_LENGTH_MAX, HEADER_BYTES_MAX, MCP_BODY_BYTES_MAX, MCP_PATH, MCP_READONLY_HEADER, MCP_TOOLSETS_HEADER, SERVER_TIMEOUTS, URL_BYTES_MAX } from '../constants.js';
import { hashToken, touchAgent, type AgentEntry } from '../domain/agents/agents.js';
import { canWrite, touchToken, type AgentToken } from '../domain/agents/tokens.js';
import { continueWithheld, readJsonBody } from './body.js';
import { writeHeadSafely } from '../header-value.js';
import { ServiceError, fail, type ErrorCode } from '../errors.js';
import { unauthorized, uriTooLong, writeStopped } from './errors.js';
import { writesStopped } from '../domain/admin/settings.js';
import { logger, type LogFields } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { EVENT_STREAM_CONTENT_TYPE, JSON_CONTENT_TYPE, Router, parseTarget, rawPathOf, type Reply, type RequestTarget, type RequestContext, type Route, type RouteInput, type RouteRunner } from './router.js';
import { bodyValidator, queryValidator } from './validate.js';

/**
 * Hooks for cross-cutting protections (rate limits, capacity). Each may throw an ServiceError, and
 * may set response headers (RateLimit-*) on `res`.
 * - `onRequest` runs for every request through the listener, whatever its target: the target's
 *   and route's errors (400/414, 404/405) are raised only after it, so it also covers unknown
 *   paths, wrong methods and bad targets.
 * - `afterAuth` runs per route (also for each route a dispatching route runs) once the caller is
 *   known (null on public routes) and after the write stop, before the body is read.
 */
export interface Guards {
  onRequest?(req: IncomingMessage, clientIp: string, res: ServerResponse): void;
  afterAuth?(route: Route, ctx: RequestContext, res: ServerResponse): void;
}

/** Security headers sent on every response, raw parser-error replies included (issue 8). */
const BASE_HEADERS = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' } as const;
/** BASE_HEADERS as a flat `[name, value, ...]` list, for replies that add no headers of their own. */
const BASE_HEADER_LIST: readonly string[] = Object.entries(BASE_HEADERS).flat();

/**
 * Cross-origin use from browsers (the client helper is an ES module for browsers too, issue 6).
 * Tokens travel in the Authorization header, never in cookies, so any origin may call the API:
 * a page can only use a token it already holds. Sent only to requests that carry `Origin`.
 */
const CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy, ETag, WWW-Authenticate, X-Request-Id',
} as const;
const CORS_HEADER_ENTRIES = Object.entries(CORS_HEADERS);

/** A well-formed client request id (see REQUEST_ID_LENGTH_MAX). */
const REQUEST_ID_PATTERN = new RegExp(`^[A-Za-z0-9._:-]{1,${REQUEST_ID_LENGTH_MAX}}$`);

/**
 * The first 24 hex digits (with their dashes) of a random version-4 UUID drawn once per process;
 * `newRequestId` appends a 12-hex-digit counter. One crypto call per process instead of one per
 * request (issue 30 "hot paths").
 */
const REQUEST_ID_PREFIX = randomUUID().slice(0, 24);
let requestIdCount = 0;

/**
 * A new request id: a UUID-shaped string (8-4-4-4-12 lower-case hex, version 4 and variant bits
 * of the random prefix) whose first 74 random bits are fixed per process and whose last group
 * counts this process's ids from 1. Unique within a process for 2^48 ids and, with overwhelming
 * likelihood, across processes; predictable within a process (an id is a correlation handle,
 * never a secret).
 */
function newRequestId(): string {
  requestIdCount++;
  const hex = requestIdCount.toString(16);
  return REQUEST_ID_PREFIX + (hex.length >= 12 ? hex.slice(-12) : '000000000000'.slice(hex.length) + hex);
}

/**
 * What the listener needs from the request head, read from the raw header list in one pass:
 * `req.headers` is built lazily on first access, and requests that need no header
 * (GET /api/status) should not pay for it. Output: whether `Origin` is present, how many `Host`
 * fields there are, and the request id (the client's `X-Request-Id` when well-formed, else `newRequestId()`).
 */
function scanHead(raw: string[]): { origin: boolean; hosts: number; requestId: string } {
  let origin = false;
  let hosts = 0;
  let requestId: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 6 && name.toLowerCase() === 'origin') origin = true;
    else if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
    else if (name.length === 12 && requestId === undefined && name.toLowerCase() === 'x-request-id') {
      const v = raw[i + 1]!;
      if (REQUEST_ID_PATTERN.test(v)) requestId = v;
    }
  }
  return { origin, hosts, requestId: requestId ?? newRequestId() };
}

/**
 * Request headers a browser may send cross-origin (answer to a preflight): REST's, A2A's, the
 * ones an MCP client sends to POST /mcp, and Last-Event-ID, with which a fetch-based stream
 * client resumes a feed stream (issue 37). Mcp-Session-Id is not listed: /mcp is stateless (no
 * session id is issued).
 */
const CORS_ALLOW_HEADERS = `Authorization, Content-Type, A2A-Version, If-None-Match, Last-Event-ID, MCP-Protocol-Version, ${MCP_READONLY_HEADER}, ${MCP_TOOLSETS_HEADER}`;

/**
 * Answers a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) for a path and method
 * that a route serves: 204 allowing that method, the headers above, cached CORS_MAX_AGE_SECONDS.
 * Throws the router's 404/405 when nothing serves it (the browser then refuses the call).
 */
function sendPreflight(res: ServerResponse, router: Router, pathname: string, requestedMethod: string, requestId: string): void {
  const method = requestedMethod.trim().toUpperCase();
  router.match(method, pathname);
  res.writeHead(204, {
    ...BASE_HEADERS,
    'X-Request-Id': requestId,
    ...CORS_HEADERS,
    'Access-Control-Allow-Methods': method,
    'Access-Control-Allow-Headers': CORS_ALLOW_HEADERS,
    'Access-Control-Max-Age': String(CORS_MAX_AGE_SECONDS),
    Vary: 'Access-Control-Request-Method',
  });
  res.end();
}

/**
 * Sends an error with its status and headers: as `{"error": message, "code": code}` (part 7,
 * issue 20; 5xx also carry `requestId`), or as `render(err)` when the route has its own error
 * format. `requestId` is echoed as X-Request-Id when given.
 */
export function sendError(res: ServerResponse, err: ServiceError, render?: (err: ServiceError) => string, requestId?: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = render
    ? render(err)
    : JSON.stringify(err.status >= 500 && requestId !== undefined ? { error: err.message, code: err.code, requestId } : { error: err.message, code: err.code });
  writeHeadSafely(res, err.status, {
    ...BASE_HEADERS,
    ...err.headers,
    ...(requestId === undefined ? {} : { 'X-Request-Id': requestId }),
    'Content-Type': JSON_CONTENT_TYPE,
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

/**
 * Turns any thrown value into an ServiceError; unexpected ones become a 500, logged as one
 * `internal_error` line with `context` (request id, method, route, agent; never a token) and the
 * stack.
 */
export function toServiceError(err: unknown, context: LogFields = {}): ServiceError {
  if (err instanceof ServiceError) return err;
  logger.error('internal_error', 'internal error', { ...context, err: err instanceof Error ? err : String(err) });
  return new ServiceError('INTERNAL', 'internal error; the request may or may not have been applied — check /api/receipts before retrying a write');
}

/**
 * Sends a handler's reply (a 304 is sent without body, Content-Type or Content-Length), with
 * `requestId` as X-Request-Id when given.
 */
export function sendReply(res: ServerResponse, reply: Reply, head: boolean, requestId?: string): void {
  if (reply.stream !== undefined) return sendStream(res, reply, reply.stream, head, requestId);
  let payload: string | Buffer;
  let contentType = reply.contentType ?? JSON_CONTENT_TYPE;
  if (reply.raw !== undefined) payload = reply.raw;
  else if (reply.json !== undefined) payload = reply.json;
  else if (reply.body !== undefined) payload = JSON.stringify(reply.body);
  else {
    payload = '';
    contentType = reply.contentType ?? 'text/plain; charset=utf-8';
  }
  // 304 (conditional GET of guidance documents) carries no body, so no Content-Type/-Length: a
  // Content-Length of 0 would contradict the representation the client already has (RFC 9110 8.6).
  const idHeader = requestId === undefined ? {} : { 'X-Request-Id': requestId };
  if (reply.status === 304) {
    res.writeHead(304, { ...BASE_HEADERS, ...idHeader, ...reply.headers });
    res.end();
    return;
  }
  const contentLength = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  if (reply.headers === undefined) {
    // The common case (status, lists, writes): a flat header list, which node:http stores without
    // building and walking a merged header object — measured 15-20 % more GET /api/status
    // requests per second at 64 connections (issue 10's status target).
    const list = [...BASE_HEADER_LIST, 'Content-Type', contentType, 'Content-Length', String(contentLength)];
    if (requestId !== undefined) list.push('X-Request-Id', requestId);
    res.writeHead(reply.status, list);
  } else {
    // The reply's own headers override the base ones (e.g. a document's Cache-Control).
    writeHeadSafely(res, reply.status, { ...BASE_HEADERS, ...idHeader, ...reply.headers, 'Content-Type': contentType, 'Content-Length': contentLength });
  }
  res.end(head ? undefined : payload);
}

/**
 * Starts a streamed reply (issue 37, Server-Sent Events): writes the head — `reply.status`, the
 * security headers, X-Request-Id, `text/event-stream`, chunked (no Content-Length), and
 * `X-Accel-Buffering: no` so that a buffering proxy (nginx) passes events on as they come — and
 * hands the response to `stream`, which writes the events and ends it. A HEAD request gets the
 * head only.
 */
function sendStream(res: ServerResponse, reply: Reply, stream: (res: ServerResponse) => void, head: boolean, requestId?: string): void {
  res.writeHead(reply.status, {
    ...BASE_HEADERS,
    ...(requestId === undefined ? {} : { 'X-Request-Id': requestId }),
    ...reply.headers,
    'Content-Type': EVENT_STREAM_CONTENT_TYPE,
    'X-Accel-Buffering': 'no',
  });
  // Not reached today (only a GET asks for a stream), but a HEAD never starts one.
  if (head) {
    res.end();
    return;
  }
  stream(res);
}

/**
 * Reads the bearer token and returns its agent and the token (a registration token, or a named
 * token of issue 53 with its scopes), after noting in memory that both were active now; throws
 * 401 (part 5 item 6).
 */
export function authenticate(app: App, req: IncomingMessage): { agent: AgentEntry; token: AgentToken } {
  const header = req.headers.authorization;
  if (!header) {
    throw unauthorized('missing Authorization header; send Authorization: Bearer <token> (a token comes from POST /api/register; see /api/start.md)');
  }
  const m = /^Bearer +(\S+)\s*$/i.exec(header);
  if (!m) throw unauthorized('Authorization header must be "Bearer <token>"');
  const agents = app.state.agents;
  const tokenHash = hashToken(m[1]!);
  let entry = agents.byTokenHash.get(tokenHash);
  let token = entry?.primary;
  if (entry === undefined) {
    token = agents.byNamedTokenHash.get(tokenHash);
    if (token !== undefined) entry = agents.byId.get(token.agentId);
  }
  if (!entry || !token) throw unauthorized('invalid or revoked token');
  if (entry.disabled) throw unauthorized('this agent is disabled by the operator');
  const nowMs = app.now();
  touchAgent(agents, entry.profile.id, nowMs);
  touchToken(token, nowMs);
  return { agent: entry, token };
}

/**
 * Throws 403 TOKEN_SCOPE when `token` may not write (issue 53): the one check every write passes,
 * since every POST route of the API is a write (REST, and the routes A2A and MCP run).
 */
function requireWriteScope(token: AgentToken, route: Route): void {
  if (canWrite(token)) return;
  throw fail(
    'TOKEN_SCOPE',
    `this token's scopes are ${JSON.stringify(token.scopes)}: ${route.method} ${route.path} is a write and needs scope "write"; send your registration token or one created with scopes ["read", "write"] (POST /api/me/tokens)`,
  );
}

/** The client address of a request, as the socket sees it. */
export function socketIp(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? 'unknown';
}

interface Compiled {
  query?: (p: URLSearchParams) => Record<string, unknown>;
  body?: (d: unknown) => unknown;
}

/**
 * The per-route steps shared by every binding, run for one authenticated (or public) request:
 * bearer auth if the context has no agent yet (401) → the route's checkHead (the A2A version) →
 * write stop for POST (423; before every
 * limit, so it is always the answer to a POST during a write stop and takes no slot) →
 * guards.afterAuth (the route's rate-limit class, 429; low disk, 507) → the route's compiled query
 * and body validators (400) → its handler → await log durability.
 * Input: the app, the guards, the compiled validators, the route, the context (mutated: agent,
 * query, body), the input and the response (guards may set headers on it).
 * Output: the handler's reply, to send only after this resolves. Throws the ServiceError to render.
 */
function runRoute(
  app: App,
  guards: Guards,
  compiled: Compiled,
  route: Route,
  ctx: RequestContext,
  input: RouteInput,
  res: ServerResponse,
): Reply | Promise<Reply> {
  if (route.auth === 'bearer' && ctx.agent === null) {
    const caller = authenticate(app, ctx.req);
    ctx.agent = caller.agent;
    ctx.token = caller.token;
  }
  route.checkHead?.(ctx.req, ctx.url);
  // A token's scope comes before the write stop: a read-only token learns it may not write at all.
  if (route.method === 'POST' && route.auth === 'bearer' && ctx.token !== undefined) requireWriteScope(ctx.token, route);
  if (route.method === 'POST' && route.duringWriteStop !== true && writesStopped(app.state.settings, app.now())) {
    throw writeStopped({ reason: app.state.settings.writeStopReason, untilMs: app.state.settings.writeStopUntilMs });
  }
  guards.afterAuth?.(route, ctx, res);
  if (compiled.query) ctx.query = compiled.query(input.query);
  if (route.method === 'POST') {
    return Promise.resolve(input.body()).then((raw: unknown) => {
      ctx.body = compiled.body ? compiled.body(raw) : raw;
      return finish(app, route.handler(ctx));
    });
  }
  return finish(app, route.handler(ctx));
}

/**
 * Durability: nothing is acknowledged, and nothing appended by others is shown, before it is on
 * disk. A read with nothing pending returns synchronously: no promise, no extra turn.
 */
function finish(app: App, reply: Reply | Promise<Reply>): Reply | Promise<Reply> {
  if (reply instanceof Promise) return reply.then((r) => finish(app, r));
  if (app.log.headSeq > app.log.durableSeq) return app.log.sync().then(() => reply);
  return reply;
}

/**
 * Builds the request listener for a route table.
 * Input: the app, the routes, optional guards and a client-IP resolver.
 */
export function createRequestListener(
  app: App,
  routes: readonly Route[],
  opts: {
    guards?: Guards;
    clientIp?: (req: IncomingMessage) => string;
    accessLog?: boolean;
    /** Access-log lines carry `clientAddress` (FORUM_ACCESS_LOG_CLIENT_ADDRESS). */
    accessLogClientAddress?: boolean;
    metrics?: Metrics | null;
  } = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const accessLog = opts.accessLog === true;
  const logClientAddress = opts.accessLogClientAddress === true;
  const metrics = opts.metrics ?? null;
  const timed = accessLog || metrics !== null;
  const router = new Router(routes);
  // Validators are compiled once per route at startup (Fastify's approach), never per request.
  // A dispatching route's handler validates its envelope with its body schema itself (after its
  // own checks, e.g. A2A-Version) and maps failures to its own errors (src/api/a2a/dispatch.ts).
  const compiled = new Map<Route, Compiled>();
  for (const r of routes) {
    compiled.set(r, {
      query: r.query ? queryValidator(r.query) : undefined,
      body: r.body && !r.dispatch ? bodyValidator(r.body) : undefined,
    });
  }
  const guards = opts.guards ?? {};
  const clientIpOf = opts.clientIp ?? socketIp;

  /** A runner for the routes a dispatching route hands one request to (same caller, same response). */
  const runnerFor = (outer: RequestContext, res: ServerResponse): RouteRunner => ({
    find: (method, path) => router.find(method, path),
    run: (route, input) => {
      const search = input.query.toString();
      const ctx: RequestContext = {
        app,
        req: outer.req,
        url: parseTarget(route.path + (search ? `?${search}` : '')),
        query: {},
        body: undefined,
        agent: outer.agent,
        token: outer.token,
        clientIp: outer.clientIp,
      };
      // The runner's contract is a promise; the dispatcher awaits it either way.
      return Promise.resolve().then(() => runRoute(app, guards, compiled.get(route)!, route, ctx, input, res));
    },
  });

  return (req, res) => {
    void (async () => {
      // A pipelined request (an earlier response on this connection is unfinished) runs only once
      // that response is done; if the connection closes first — as it does after a 413 — it is
      // never answered, so it must never run (issue 28 item 5: a refused body followed by a write
      // committed the write while only the 413 reached the client).
      if (res.socket === null && !(await turnOf(res, req.socket))) return;
      const started = performance.now();
      const method = req.method ?? 'GET';
      const head = scanHead(req.rawHeaders);
      const requestId = head.requestId;
      let route: Route | undefined;
      let ctx: RequestContext | undefined;
      let clientAddress: string | undefined;
      try {
        const clientIp = clientIpOf(req);
        clientAddress = clientIp;
        if (head.origin) for (const [name, value] of CORS_HEADER_ENTRIES) res.setHeader(name, value);
        // Target and route are resolved first, but their errors (414, 400, 404, 405) are thrown
        // only after guards.onRequest: the shutdown 503 and the global limit apply to every
        // request, and a matched route still renders the guards' errors in its own format.
        let url: RequestTarget | undefined;
        let targetError: unknown;
        try {
          // RFC 9112 section 3.2: an HTTP/1.1 request without Host, or any request with more than
          // one, is refused with 400. Node's own check (requireHostHeader) is off so that this
          // 400 has our headers and body.
          if (head.hosts > 1 || (head.hosts === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor === 1)) throw badHost(head.hosts);
          const target = req.url ?? '/';
          if (target.length > URL_BYTES_MAX / 3 && Buffer.byteLength(target) > URL_BYTES_MAX) throw uriTooLong(URL_BYTES_MAX);
          url = parseTarget(target);
          route = router.match(method, url.pathname);
        } catch (err) {
          targetError = err;
          // A route under whose path a malformed target falls still renders the 400 in its own
          // error format (e.g. A2A's google.rpc.Status for /a2a/tasks/%FF).
          const rawPath = route === undefined && url === undefined ? rawPathOf(req.url ?? '/') : undefined;
          if (rawPath !== undefined) {
            try {
              route = router.match(method, rawPath);
            } catch {
              // No route there: the 400 is rendered as {error, code}.
            }
          }
        }
        guards.onRequest?.(req, clientIp, res);
        const preflight = method === 'OPTIONS' ? req.headers['access-control-request-method'] : undefined;
        if (preflight !== undefined && url) return sendPreflight(res, router, url.pathname, preflight, requestId);
        if (targetError !== undefined || !url || !route) throw targetError;
        ctx = { app, req, url, query: {}, body: undefined, agent: null, clientIp, startedMs: started };
        let reply: Reply;
        if (route.dispatch) {
          // The dispatching route only authenticates and reads its envelope; the route it hands
          // the request to runs the remaining steps in runRoute.
          if (route.auth === 'bearer') {
            const caller = authenticate(app, req);
            ctx.agent = caller.agent;
            ctx.token = caller.token;
          }
          route.checkHead?.(req, url);
          if (route.method === 'POST' && route.readsBody !== true) ctx.body = await readJsonBody(req, route.contentTypes);
          ctx.runner = runnerFor(ctx, res);
          // A client that went away while the handler ran has already closed the response: a
          // listener added now would never run, so `fn` runs at once.
          ctx.onResponseClosed = (fn) => (res.closed ? fn() : void res.once('close', fn));
          reply = await route.handler(ctx);
          await app.log.sync();
        } else {
          const r = route;
          const pending = runRoute(app, guards, compiled.get(r)!, r, ctx, { query: url.searchParams, body: () => readJsonBody(req, r.contentTypes) }, res);
          reply = pending instanceof Promise ? await pending : pending;
        }
        if (ctx.onSent === undefined) sendReply(res, reply, method === 'HEAD', requestId);
        else {
          const sending = performance.now();
          sendReply(res, reply, method === 'HEAD', requestId);
          ctx.onSent(performance.now() - sending);
        }
      } catch (err) {
        const httpErr = toServiceError(err, { requestId, method, route: route?.path, agentId: ctx?.agent?.profile.id });
        const format = route?.errorFormat;
        // A refused body may still be arriving: read it to its end (within bounds) before the 413,
        // so the client, done sending, reads the answer instead of a reset. Past the bounds the
        // connection is closed after the answer.
        // A body withheld by the client (Expect: 100-continue refused, see checkContinue below) is
        // not waited for.
        const drained = httpErr.status === 413 && !continueWithheld(req, bodyLimitOf(req)) ? await drainBody(req) : true;
        sendError(res, httpErr, format ? (e) => format.render(e, app) : undefined, requestId);
        if (!drained) req.socket.destroySoon?.();
      }
      if (timed) {
        const ms = performance.now() - started;
        metrics?.request(method, route?.path ?? null, res.statusCode, ms);
        if (accessLog) {
          logger.info('request', `${method} ${route?.path ?? '-'} ${res.statusCode}`, {
            requestId,
            method,
            route: route?.path ?? null,
            status: res.statusCode,
            ms: Math.round(ms * 1000) / 1000,
            agentId: ctx?.agent?.profile.id ?? null,
            clientAddress: logClientAddress ? (clientAddress ?? null) : undefined,
          });
        }
      }
    })();
  };
}

/**
 * The body limit of a request's target: MCP_BODY_BYTES_MAX on POST /mcp (which reads its own body,
 * src/api/mcp/routes.ts), BODY_BYTES_MAX everywhere else (part 8). For `Expect: 100-continue`,
 * which is answered before routing.
 */
function bodyLimitOf(req: IncomingMessage): number {
  try {
    return parseTarget(req.url ?? '/').pathname === MCP_PATH ? MCP_BODY_BYTES_MAX : BODY_BYTES_MAX;
  } catch {
    return BODY_BYTES_MAX;
  }
}

/**
 * Waits until a queued (pipelined) response gets the connection. Output: true when it does, false
 * when the connection closes first.
 */
function turnOf(res: ServerResponse, socket: Socket): Promise<boolean> {
  return new Promise((resolve) => {
    const onTurn = (): void => {
      socket.off('close', onClose);
      resolve(true);
    };
    const onClose = (): void => {
      res.off('socket', onTurn);
      resolve(false);
    };
    res.once('socket', onTurn);
    socket.once('close', onClose);
  });
}

/**
 * Reads and discards the rest of a request body refused with 413 (issue 28 item 5).
 * Bounds: BODY_DRAIN_BYTES_MAX bytes (a larger declared Content-Length is not read at all) and
 * BODY_DRAIN_MS. Output: true when the body was read to its end, false when a bound was hit or
 * the request broke off (the caller then closes the connection after answering).
 */
function drainBody(req: IncomingMessage): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > BODY_DRAIN_BYTES_MAX) return Promise.resolve(false);
  return new Promise((resolve) => {
    let read = 0;
    let done = false;
    const finish = (whole: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onBroken);
      req.off('error', onBroken);
      if (!whole) req.pause();
      resolve(whole);
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > BODY_DRAIN_BYTES_MAX) finish(false);
    };
    const onEnd = (): void => finish(true);
    const onBroken = (): void => finish(req.complete);
    const timer = setTimeout(() => finish(false), BODY_DRAIN_MS);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onBroken);
    req.on('error', onBroken);
    req.resume();
  });
}

/**
 * 400 `MALFORMED_REQUEST` for an HTTP/1.1 request without `Host` (`hosts` 0) or a request with
 * several; the connection is closed, as Node's own reply to a missing Host did.
 */
const badHost = (hosts: number): ServiceError =>
  new ServiceError(
    'MALFORMED_REQUEST',
    hosts === 0 ? 'HTTP/1.1 request without a Host header (RFC 9112 section 3.2); send Host: <server name>' : `request with ${hosts} Host headers; send exactly one (RFC 9112 section 3.2)`,
    { Connection: 'close' },
  );

/**
 * Answers a request Node's HTTP server hands over outside the route table (an `Expect` it cannot
 * meet), with what every answer carries: X-Request-Id (the client's when well-formed), CORS when
 * the request has `Origin`, the security headers and the `{error, code}` body.
 */
function answerOutsideRoutes(req: IncomingMessage, res: ServerResponse, err: ServiceError): void {
  const head = scanHead(req.rawHeaders);
  if (head.origin) for (const [name, value] of CORS_HEADER_ENTRIES) res.setHeader(name, value);
  sendError(res, err, undefined, head.requestId);
}

/** Server timeouts against slow or idle clients (issue 8), in ms; defaults: SERVER_TIMEOUTS. */
export interface ServerTimeouts {
  /** Whole request head must arrive within this (slow-loris); later gets 408. */
  headersTimeoutMs: number;
  /** Whole request (head and body) must arrive within this; later gets 408. */
  requestTimeoutMs: number;
  /** Idle keep-alive connections are closed after this. */
  keepAliveTimeoutMs: number;
  /** How often the server checks the two request timeouts above (Node's default is 30 s) and sweeps for idle sockets. */
  checkIntervalMs: number;
  /**
   * A socket with no bytes in either direction for this long is closed (idle connection floods,
   * clients that stop reading); checked every checkIntervalMs.
   */
  socketIdleTimeoutMs: number;
}

/** Status line and `{error}` text of the replies to errors of Node's HTTP parser. */
const CLIENT_ERRORS = {
  431: { reason: 'Request Header Fields Too Large', code: 'HEADERS_TOO_LARGE', error: `request headers too large (the request head is limited to ${HEADER_BYTES_MAX} bytes)` },
  408: { reason: 'Request Timeout', code: 'REQUEST_TIMEOUT', error: 'request timeout: the request (headers and body) did not arrive in time; send it again without pausing' },
  400: { reason: 'Bad Request', code: 'MALFORMED_REQUEST', error: 'malformed HTTP request' },
} as const satisfies Record<number, { reason: string; code: ErrorCode; error: string }>;

/**
 * The raw reply to an error of Node's HTTP parser (`clientError`), or null when nothing must be
 * written (the peer reset the connection). Status: 431 for a request head over HEADER_BYTES_MAX,
 * 408 when the head or the whole request did not arrive within the headers/request timeout
 * (ERR_HTTP_REQUEST_TIMEOUT), else 400. Carries the same security headers as every response and
 * `Connection: close`.
 */
export function clientErrorReply(err: NodeJS.ErrnoException): string | null {
  if (err.code === 'ECONNRESET') return null;
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const { reason, error, code } = CLIENT_ERRORS[status];
  return rawErrorReply(status, reason, { error, code });
}

/**
 * A whole error response as raw bytes, for a socket Node hands over without a response object
 * (parser errors, CONNECT): status line, the security headers, a new X-Request-Id (`requestId`
 * when given), `extra` headers, `Connection: close` and the JSON body.
 */
function rawErrorReply(status: number, reason: string, body: { error: string; code: ErrorCode }, extra: Record<string, string> = {}, requestId?: string): string {
  const text = JSON.stringify(body);
  const headers = {
    ...BASE_HEADERS,
    ...extra,
    'X-Request-Id': requestId ?? newRequestId(),
    'Content-Type': JSON_CONTENT_TYPE,
    'Content-Length': String(Buffer.byteLength(text)),
    Connection: 'close',
  };
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return `HTTP/1.1 ${status} ${reason}\r\n${lines}\r\n${text}`;
}

/** Options of `createHttpServer`; every field has a production default. */
export interface HttpServerOptions {
  /** Timeouts against slow or idle clients (default SERVER_TIMEOUTS; tests shorten them). */
  timeouts?: ServerTimeouts;
  /** Most connections held open at once (default CONNECTIONS_MAX); more are closed on arrival. */
  connectionsMax?: number;
  /**
   * Most connections one peer address holds open at once (0 = no cap; default
   * CONNECTIONS_PER_ADDRESS_DEFAULT); more from that address are closed on arrival (issue 21).
   */
  connectionsPerAddress?: number;
}

/** The response a socket is writing now (Node's own field; null between requests). */
function responseInFlight(socket: Socket): ServerResponse | null {
  return (socket as { _httpMessage?: ServerResponse | null })._httpMessage ?? null;
}

/**
 * Writes a parser-error reply only once every request that arrived whole before the bad bytes has
 * been answered (issue 21: a committed write's 201 must not be lost to pipelined garbage after
 * it). Node answers pipelined requests in order and hands the socket to the next queued response
 * when one finishes, so this waits on each in turn. A response whose request is not complete is
 * the one the error belongs to (a broken body): the reply is written at once, unless
 * that response has begun, in which case the connection is dropped.
 */
function replyAfterAnswered(socket: Socket, reply: string): void {
  const inFlight = responseInFlight(socket);
  if (inFlight && !inFlight.writableFinished && inFlight.req.complete) {
    const next = (): void => replyAfterAnswered(socket, reply);
    inFlight.once('finish', next);
    // A response closed before it finished (the peer went away) ends the connection.
    inFlight.once('close', () => inFlight.writableFinished || socket.destroy());
    return;
  }
  if (!socket.writable) return;
  if (inFlight?.headersSent && !inFlight.writableFinished) return void socket.destroy();
  socket.end(reply);
}

/**
 * Closes a socket whose idle timer (keep-alive or socketIdleTimeoutMs) fired, unless bytes arrived
 * that the server had not read yet (issue 28 item 8).
 *
 * Why: libuv runs expired timers at the start of a loop iteration, before it polls the sockets.
 * When the event loop was busy past a kept-alive socket's deadline (a long synchronous step of
 * background work, e.g. search index catch-up after a heavy write run), a request the client sent
 * in time is still unread in the kernel buffer when the timer fires; Node's default destroys the
 * socket, the kernel answers the unread bytes with RST, and the client sees ECONNRESET, or
 * `write EPIPE` while it is still sending a body. `setImmediate` runs after this iteration's poll
 * phase, which reads whatever is pending: if `bytesRead` moved, a request is under way (Node
 * re-armed the timer on read) and it is answered late instead of lost.
 * Input: the timed-out socket. Output: none; the socket is destroyed or left alone.
 */
function closeIfStillIdle(socket: Socket): void {
  const readBefore = socket.bytesRead;
  setImmediate(() => {
    if (!socket.destroyed && socket.bytesRead === readBefore) socket.destroy();
  });
}

/** What the idle sweep last saw of a socket: its byte progress and since when it has not moved. */
interface IdleMark {
  progress: number;
  sinceMs: number;
}

/**
 * Bytes that moved on a socket: read, plus written and taken by the kernel (`bytesWritten` counts
 * bytes handed to the socket, `writableLength` those not yet written out). A client that stops
 * reading stops this number once the kernel's buffers are full.
 */
function progressOf(socket: Socket): number {
  return socket.bytesRead + (socket.bytesWritten ?? 0) - socket.writableLength;
}

/**
 * Closes (via `closeIfStillIdle`) every connection of `server` on which no byte moved in either
 * direction for `idleMs`: one that never sends, one that stops mid-request, a client that stops
 * reading its response (issue 8; README "Connections"). One coarse sweep every `sweepMs` over the
 * open connections replaces Node's per-socket idle timer (`server.setTimeout`), which is re-armed
 * on every read and write and re-created twice per keep-alive request (issue 30 "hot paths"); a
 * connection is closed between idleMs and idleMs + sweepMs after its last byte.
 * Input: the server, the idle time and the sweep period in ms. The sweep stops when the server
 * closes and never keeps the process alive.
 */
/** Connections whose request a route holds on purpose (a long-polled feed): the idle sweep spares them. */
const heldConnections = new WeakSet<Socket>();

/**
 * Marks `socket` as holding a request that is answered later on purpose (issue 37: a long-polled
 * feed), so the idle sweep does not close it while nothing moves; the returned function ends that.
 */
export function holdConnection(socket: Socket): () => void {
  heldConnections.add(socket);
  return () => void heldConnections.delete(socket);
}

function watchIdleSockets(server: Server, idleMs: number, sweepMs: number): void {
  const marks = new Map<Socket, IdleMark>();
  server.on('connection', (socket: Socket) => {
    marks.set(socket, { progress: progressOf(socket), sinceMs: performance.now() });
    socket.once('close', () => marks.delete(socket));
  });
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const [socket, mark] of marks) {
      const progress = progressOf(socket);
      if (progress !== mark.progress || heldConnections.has(socket)) {
        mark.progress = progress;
        mark.sinceMs = now;
      } else if (now - mark.sinceMs >= idleMs) {
        // Counted from now again: a socket `closeIfStillIdle` spares (bytes were waiting) gets
        // a whole new idle period.
        mark.sinceMs = now;
        closeIfStillIdle(socket);
      }
    }
  }, Math.max(1, Math.min(sweepMs, idleMs)));
  sweep.unref();
  server.once('close', () => clearInterval(sweep));
}

/**
 * Creates the public HTTP server for the listener (not yet listening).
 * Input: the request listener and HttpServerOptions.
 * Request heads over HEADER_BYTES_MAX get 431; parser errors are answered by `clientErrorReply`,
 * after the answers to the requests before them on the same connection. Connections beyond the
 * per-address cap are closed as they arrive, before any byte is read.
 */
export function createHttpServer(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  opts: HttpServerOptions = {},
): Server {
  const timeouts = opts.timeouts ?? SERVER_TIMEOUTS;
  const server = createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
      maxHeaderSize: HEADER_BYTES_MAX,
      // The listener refuses a missing Host itself, with the service's headers and JSON body.
      requireHostHeader: false,
    },
    listener,
  );
  // Node applies headersTimeout only once a request has begun; a connection that never sends a
  // byte, or a client that stops reading, would otherwise hold its socket for ever.
  watchIdleSockets(server, timeouts.socketIdleTimeoutMs, timeouts.checkIntervalMs);
  // With a listener here Node no longer destroys a socket whose keep-alive timer fired;
  // `closeIfStillIdle` does, one poll later.
  server.on('timeout', closeIfStillIdle);
  // CONNECT (this is no proxy): without a listener Node drops the connection without a word.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const head = scanHead(req.rawHeaders);
    const cors = head.origin ? CORS_HEADERS : {};
    const body = { error: 'method CONNECT is not served: this server is not a proxy; use GET or POST on /api/...', code: 'METHOD_NOT_ALLOWED' as const };
    socket.end(rawErrorReply(405, 'Method Not Allowed', body, { ...cors, Allow: 'GET, HEAD, POST, OPTIONS' }, head.requestId));
  });
  // An `Expect` other than 100-continue: Node would answer a bare 417 itself (issue 28 item 6).
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    answerOutsideRoutes(req, res, new ServiceError('EXPECTATION_FAILED', `cannot meet "Expect: ${String(req.headers.expect).slice(0, 60)}": the only expectation this server meets is 100-continue (RFC 9110 section 10.1.1); send the request without Expect`, { Connection: 'close' }));
  });
  // Expect: 100-continue: `100 Continue` only for a body the server may accept. One declared over
  // the body limit gets no 100: the request runs the pipeline at once, whose body step answers
  // 413 from the declared length (in the route's error format, after auth and the limits), and
  // the connection closes after that answer.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (continueWithheld(req, bodyLimitOf(req))) res.setHeader('Connection', 'close');
    else res.writeContinue();
    server.emit('request', req, res);
  });
  server.maxConnections = opts.connectionsMax ?? CONNECTIONS_MAX;
  const perAddress = opts.connectionsPerAddress ?? CONNECTIONS_PER_ADDRESS_DEFAULT;
  if (perAddress > 0) {
    const open = new Map<string, number>();
    server.on('connection', (socket: Socket) => {
      const address = socket.remoteAddress ?? 'unknown';
      const count = open.get(address) ?? 0;
      if (count >= perAddress) return void socket.destroy();
      open.set(address, count + 1);
      socket.once('close', () => {
        const left = open.get(address)! - 1;
        if (left === 0) open.delete(address);
        else open.set(address, left);
      });
    });
  }
  const answered = new WeakSet<Socket>();
  const spared = new WeakSet<Socket>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // The parser reports every later chunk of a broken stream again; the first report answers.
    if (answered.has(socket)) return;
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead === 0 && !spared.has(socket)) {
      // Nothing read yet: Node measures a new connection's head timeout from its acceptance, and
      // when the event loop stalled right after it, the head may have arrived in time and still
      // be unread (timers run before the poll, as in `closeIfStillIdle`). Look once more after the
      // next poll; bytes by then mean the request is under way, and it gets a fresh head timeout
      // from its first byte. Once per connection, so a client that never sends still gets 408.
      spared.add(socket);
      setImmediate(() => {
        if (socket.bytesRead === 0) server.emit('clientError', err, socket);
      });
      return;
    }
    answered.add(socket);
    const reply = socket.writable ? clientErrorReply(err) : null;
    if (reply === null) return void socket.destroy();
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      // The timed-out request is the one in flight; it will never be answered otherwise.
      return void (responseInFlight(socket)?.headersSent ? socket.destroy() : socket.end(reply));
    }
    replyAfterAnswered(socket, reply);
  });
  return server;
}
