/**
 * Connection guards of the public HTTP server (issue 8, issue 21, issue 28): `createHttpServer`
 * with its timeouts against slow or idle clients, the idle sweep (`holdConnection` spares a
 * request held on purpose, such as a long-polled feed), the per-address and global connection
 * caps, and the answers Node's HTTP server would otherwise write itself (parser errors after the
 * requests before them, CONNECT 405, Expect 417, 100-continue). The request pipeline is
 * server.ts; replies are written by reply.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { BODY_BYTES_MAX, CONNECTIONS_MAX, CONNECTIONS_PER_ADDRESS_DEFAULT, HEADER_BYTES_MAX, MCP_BODY_BYTES_MAX, MCP_PATH, SERVER_TIMEOUTS } from '../constants.js';
import { continueWithheld } from './body.js';
import { ServiceError } from '../errors.js';
import { parseTarget } from './router.js';
import { CORS_HEADERS, CORS_HEADER_ENTRIES, clientErrorReply, rawErrorReply, scanHead, sendError } from './reply.js';

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

/**
 * The body limit of a request's target: MCP_BODY_BYTES_MAX on POST /mcp (which reads its own body,
 * src/api/mcp/routes.ts), BODY_BYTES_MAX everywhere else (part 8). For `Expect: 100-continue`,
 * which is answered before routing.
 */
export function bodyLimitOf(req: IncomingMessage): number {
  try {
    return parseTarget(req.url ?? '/').pathname === MCP_PATH ? MCP_BODY_BYTES_MAX : BODY_BYTES_MAX;
  } catch {
    return BODY_BYTES_MAX;
  }
}

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

/**
 * Closes (via `closeIfStillIdle`) every connection of `server` on which no byte moved in either
 * direction for `idleMs`: one that never sends, one that stops mid-request, a client that stops
 * reading its response (issue 8; docs/api/limits.md#connections). One coarse sweep every `sweepMs` over the
 * open connections replaces Node's per-socket idle timer (`server.setTimeout`), which is re-armed
 * on every read and write and re-created twice per keep-alive request (issue 30 "hot paths"); a
 * connection is closed between idleMs and idleMs + sweepMs after its last byte.
 * Input: the server, the idle time and the sweep period in ms. The sweep stops when the server
 * closes and never keeps the process alive.
 */
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
