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
 * The shortest path (issue 56): `GET`/`HEAD` of the exact path of a route with a `memo`
 * (GET /api/status), without Origin or Authorization, is answered from the memo with a head
 * prepared once per memoised reply — guards.onRequest, metrics and the access log as for any
 * request, but no target parse, route lookup, request context or `runRoute` — and the same bytes
 * as the pipeline would send (test/http/status-shortest.test.mjs).
 *
 * `runRoute` is the per-route part; a dispatching route (the A2A binding, `route.dispatch`) runs
 * other routes of the table through it via `ctx.runner`, so both bindings share one code path.
 *
 * Every error goes to reply.ts's `sendError`, the one place errors are rendered: as
 * `{"error": "..."}`, or by the route's `errorFormat` (A2A's google.rpc.Status on /a2a/*); an
 * unexpected exception is logged and answered 500 without its stack. Errors Node's HTTP parser
 * finds before a request exists (431, 400, 408) are written by the `clientError` handler of
 * connections.ts's `createHttpServer`, with the same headers, as are the other replies Node would
 * write itself (a missing Host 400, an unmet Expect 417, CONNECT 405; issue 28 item 6).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { App } from '../app.js';
import { BODY_DRAIN_BYTES_MAX, BODY_DRAIN_MS, URL_BYTES_MAX } from '../constants.js';
import { hashToken, touchAgent, type AgentEntry } from '../domain/agents/agents.js';
import { canWrite, touchToken, type AgentToken } from '../domain/agents/tokens.js';
import { continueWithheld, readJsonBody } from './body.js';
import { ServiceError, fail } from '../errors.js';
import { unauthorized, uriTooLong, writeStopped } from './errors.js';
import { writesStopped } from '../domain/admin/settings.js';
import { logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { Router, parseTarget, rawPathOf, type Reply, type RequestTarget, type RequestContext, type Route, type RouteInput, type RouteRunner } from './router.js';
import { bodyValidator, queryValidator } from './validate.js';
import { CORS_HEADER_ENTRIES, plainHeadId, prepareReply, scanHead, sendError, sendPreflight, sendPrepared, sendReply, toServiceError, type PreparedReply } from './reply.js';
import { bodyLimitOf } from './connections.js';
import { TIMELINE_ON, timelineBegin, timelineEnd, timelineMark } from '../timeline.js';

/**
 * Hooks for cross-cutting protections (rate limits, capacity). Each may throw an ServiceError, and
 * may set response headers (RateLimit-*) on `res`.
 * - `onRequest` runs for every request through the listener, whatever its target: the target's
 *   and route's errors (400/414, 404/405) are raised only after it, so it also covers unknown
 *   paths, wrong methods and bad targets.
 * - `afterAuth` runs per route (also for each route a dispatching route runs) once the caller is
 *   known (null on public routes) and after the write stop, before the body is read. It does not
 *   run for a request the shortest path answers (issue 56: a memo route, a public GET with no
 *   rate-limit class, asked without Authorization), where the guards here have nothing to do:
 *   the rate limits act on a rate-limit class or an operator's token, the others on POST only.
 */
export interface Guards {
  onRequest?(req: IncomingMessage, clientIp: string, res: ServerResponse): void;
  afterAuth?(route: Route, ctx: RequestContext, res: ServerResponse): void;
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
      if (TIMELINE_ON) timelineMark('parsed');
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

/** A memo route (issue 56) as the shortest path serves it: its last reply and that reply prepared. */
interface Shortest {
  route: Route;
  memo: (app: App) => Reply;
  /** The memo's last reply, and it prepared (null: `sendReply` sends it). */
  reply: Reply | null;
  prepared: PreparedReply | null;
}

/**
 * Checks that a route with a memo is one the shortest path may answer without the steps it skips
 * (an exact-path public GET with no query schema, body, rate-limit class, checkHead or dispatch);
 * throws an Error naming the route otherwise. Output: its shortest-path state.
 */
function shortestOf(route: Route, memo: (app: App) => Reply): Shortest {
  if (route.method !== 'GET' || route.auth !== 'public' || route.path.endsWith('/*') || /[?%]/.test(route.path) || route.query !== undefined || route.body !== undefined || route.rateLimit !== undefined || route.checkHead !== undefined || route.dispatch === true) {
    throw new Error(`route ${route.method} ${route.path}: a memo is for exact-path public GET routes without query schema, body, rate-limit class, checkHead or dispatch`);
  }
  return { route, memo, reply: null, prepared: null };
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
  // The shortest path (issue 56): routes with a memo, by their exact path.
  const shortest = new Map<string, Shortest>();
  for (const r of routes) if (r.memo !== undefined) shortest.set(r.path, shortestOf(r, r.memo));

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

  /**
   * Answers a request's error: renders it (the route's error format, else `{error, code}`), after
   * reading a refused body to its end for a 413. Output: a promise while that body drains, else
   * undefined (answered at once).
   */
  const answerError = (req: IncomingMessage, res: ServerResponse, err: unknown, method: string, route: Route | undefined, agentId: string | undefined, requestId: string): Promise<void> | undefined => {
    const httpErr = toServiceError(err, { requestId, method, route: route?.path, agentId });
    const format = route?.errorFormat;
    const answer = (drained: boolean): void => {
      sendError(res, httpErr, format ? (e) => format.render(e, app) : undefined, requestId, format?.contentType?.(req));
      if (!drained) req.socket.destroySoon?.();
    };
    // A refused body may still be arriving: read it to its end (within bounds) before the 413,
    // so the client, done sending, reads the answer instead of a reset. Past the bounds the
    // connection is closed after the answer.
    // A body withheld by the client (Expect: 100-continue refused, see checkContinue below) is
    // not waited for.
    if (httpErr.status === 413 && !continueWithheld(req, bodyLimitOf(req))) return drainBody(req).then(answer);
    answer(true);
    return undefined;
  };

  /** What every answered request ends with: its timeline, its metrics and its access-log line. */
  const settle = (res: ServerResponse, method: string, route: Route | undefined, agentId: string | null, clientAddress: string | undefined, requestId: string, started: number): void => {
    if (TIMELINE_ON) timelineEnd();
    if (!timed) return;
    const ms = performance.now() - started;
    metrics?.request(method, route?.path ?? null, res.statusCode, ms);
    if (accessLog) {
      logger.info('request', `${method} ${route?.path ?? '-'} ${res.statusCode}`, {
        requestId,
        method,
        route: route?.path ?? null,
        status: res.statusCode,
        ms: Math.round(ms * 1000) / 1000,
        agentId,
        clientAddress: logClientAddress ? (clientAddress ?? null) : undefined,
      });
    }
  };

  /**
   * The shortest path (issue 56): answers `GET`/`HEAD` of a memo route's exact path, whose head
   * `plainHeadId` accepted, on a connection whose earlier answers are done, while the log is
   * durable. The steps kept, in the pipeline's order: the timeline, the request count, the client
   * address, guards.onRequest (503 while shutting down, 429), the memo, the answer (its head
   * prepared once per memoised reply), metrics and the access log. The steps skipped cannot change
   * the answer: see the listener below.
   */
  const serveShortest = (s: Shortest, req: IncomingMessage, res: ServerResponse, method: string, requestId: string): void => {
    if (TIMELINE_ON) timelineBegin();
    app.requestsBegun++;
    const started = timed ? performance.now() : 0;
    let clientAddress: string | undefined;
    try {
      const clientIp = clientIpOf(req);
      clientAddress = clientIp;
      guards.onRequest?.(req, clientIp, res);
      const reply = s.memo(app);
      if (reply !== s.reply) {
        s.reply = reply;
        s.prepared = prepareReply(reply);
      }
      if (TIMELINE_ON) timelineMark('sending');
      if (s.prepared === null) sendReply(res, reply, method === 'HEAD', requestId);
      else sendPrepared(res, s.prepared, method === 'HEAD', requestId);
    } catch (err) {
      const draining = answerError(req, res, err, method, s.route, undefined, requestId);
      if (draining !== undefined) {
        void draining.then(() => settle(res, method, s.route, null, clientAddress, requestId, started));
        return;
      }
    }
    settle(res, method, s.route, null, clientAddress, requestId, started);
  };

  return (req, res) => {
    // The shortest path (issue 56) takes a request only where the pipeline's skipped steps cannot
    // change its answer: an exact target (no query string: nothing to parse or validate, no 414 or
    // 400, and the route is the one router.match returns for GET and HEAD; no preflight); a head
    // with one Host, no Origin and no Authorization (`plainHeadId`: no 400, no CORS headers, no
    // caller whose slots guards.afterAuth would give back; the route is public with no rate-limit
    // class, checkHead, query schema or body, so runRoute would do nothing but call the handler);
    // a response that has its socket (else it waits its turn below); and a durable log (else
    // `finish` would wait for the sync before answering).
    if (shortest.size !== 0 && res.socket !== null) {
      const s = shortest.get(req.url ?? '');
      const method = req.method;
      if (s !== undefined && (method === 'GET' || method === 'HEAD') && app.log.headSeq <= app.log.durableSeq) {
        const requestId = plainHeadId(req.rawHeaders);
        if (requestId !== null) return serveShortest(s, req, res, method, requestId);
      }
    }
    void (async () => {
      // A pipelined request (an earlier response on this connection is unfinished) runs only once
      // that response is done; if the connection closes first — as it does after a 413 — it is
      // never answered, so it must never run (issue 28 item 5: a refused body followed by a write
      // committed the write while only the 413 reached the client).
      if (res.socket === null && !(await turnOf(res, req.socket))) return;
      if (TIMELINE_ON) timelineBegin();
      app.requestsBegun++;
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
        if (TIMELINE_ON) timelineMark('sending');
        if (ctx.onSent === undefined) sendReply(res, reply, method === 'HEAD', requestId);
        else {
          const sending = performance.now();
          sendReply(res, reply, method === 'HEAD', requestId);
          ctx.onSent(performance.now() - sending);
        }
      } catch (err) {
        const draining = answerError(req, res, err, method, route, ctx?.agent?.profile.id, requestId);
        if (draining !== undefined) await draining;
      }
      settle(res, method, route, ctx?.agent?.profile.id ?? null, clientAddress, requestId, started);
    })();
  };
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

