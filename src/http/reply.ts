/**
 * Writing replies (issue 2 "HTTP layer"): the one place every error is rendered — as
 * `{"error": "...", "code": "..."}` (part 7), or by a route's own error format — handlers' replies
 * (JSON, raw bytes, 304, Server-Sent Events streams), CORS preflight answers, the security headers
 * every response carries (issue 8), request ids, and the raw replies written straight to a socket
 * for errors of Node's HTTP parser (431, 400, 408) and CONNECT (405). The request pipeline that
 * calls these is server.ts; the connection guards are connections.ts.
 */
import type { ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { CORS_MAX_AGE_SECONDS, REQUEST_ID_LENGTH_MAX, HEADER_BYTES_MAX, MCP_READONLY_HEADER, MCP_TOOLSETS_HEADER } from '../constants.js';
import { writeHeadSafely } from '../header-value.js';
import { ServiceError, type ErrorCode } from '../errors.js';
import { logger, type LogFields } from '../logger.js';
import { EVENT_STREAM_CONTENT_TYPE, JSON_CONTENT_TYPE, type Reply, type Router } from './router.js';

/** Security headers sent on every response, raw parser-error replies included (issue 8). */
const BASE_HEADERS = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' } as const;
/** BASE_HEADERS as a flat `[name, value, ...]` list, for replies that add no headers of their own. */
const BASE_HEADER_LIST: readonly string[] = Object.entries(BASE_HEADERS).flat();

/**
 * Cross-origin use from browsers (the client helper is an ES module for browsers too, issue 6).
 * Tokens travel in the Authorization header, never in cookies, so any origin may call the API:
 * a page can only use a token it already holds. Sent only to requests that carry `Origin`.
 */
export const CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'Retry-After, RateLimit, RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, ETag, WWW-Authenticate, X-Request-Id',
} as const;
export const CORS_HEADER_ENTRIES = Object.entries(CORS_HEADERS);

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

// What the last `scanFields` found (one request at a time: the listener reads them at once).
let seenOrigin = false;
let seenAuthorization = false;
let seenHosts = 0;
let seenId: string | undefined;

/**
 * Reads the request head's raw header list in one pass into the `seen*` fields above: whether
 * `Origin` and `Authorization` are present, how many `Host` fields there are, and the first
 * well-formed `X-Request-Id` (undefined when none is). Allocates nothing.
 */
function scanFields(raw: string[]): void {
  seenOrigin = false;
  seenAuthorization = false;
  seenHosts = 0;
  seenId = undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 6 && name.toLowerCase() === 'origin') seenOrigin = true;
    else if (name.length === 4 && name.toLowerCase() === 'host') seenHosts++;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') seenAuthorization = true;
    else if (name.length === 12 && seenId === undefined && name.toLowerCase() === 'x-request-id') {
      const v = raw[i + 1]!;
      if (REQUEST_ID_PATTERN.test(v)) seenId = v;
    }
  }
}

/**
 * What the listener needs from the request head, read from the raw header list in one pass:
 * `req.headers` is built lazily on first access, and requests that need no header
 * (GET /api/status) should not pay for it. Output: whether `Origin` is present, how many `Host`
 * fields there are, and the request id (the client's `X-Request-Id` when well-formed, else `newRequestId()`).
 */
export function scanHead(raw: string[]): { origin: boolean; hosts: number; requestId: string } {
  scanFields(raw);
  return { origin: seenOrigin, hosts: seenHosts, requestId: seenId ?? newRequestId() };
}

/**
 * The request id of a head that the shortest path may answer (issue 56; src/http/server.ts), as
 * `scanHead` gives it, or null — no id minted — for any head that may change the answer or a
 * guard's effect: no `Host` or more than one (400, or HTTP/1.0 without Host), an `Origin` (the
 * answer carries CORS_HEADERS), an `Authorization` (an operator's request gives back its public
 * rate-limit slots in guards.afterAuth, src/http/rate-limit.ts). Allocates nothing but a minted id.
 */
export function plainHeadId(raw: string[]): string | null {
  scanFields(raw);
  if (seenHosts !== 1 || seenOrigin || seenAuthorization) return null;
  return seenId ?? newRequestId();
}

/**
 * Request headers a browser may send cross-origin (answer to a preflight): REST's, A2A's, the
 * ones an MCP client sends to POST /mcp (Mcp-Method and Mcp-Name: MCP 2026-07-28), and Last-Event-ID, with which a fetch-based stream
 * client resumes a feed stream (issue 37). Mcp-Session-Id is not listed: /mcp is stateless (no
 * session id is issued).
 */
const CORS_ALLOW_HEADERS = `Authorization, Content-Type, A2A-Version, If-None-Match, Last-Event-ID, MCP-Protocol-Version, Mcp-Method, Mcp-Name, ${MCP_READONLY_HEADER}, ${MCP_TOOLSETS_HEADER}`;

/**
 * Answers a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) for a path and method
 * that a route serves: 204 allowing that method, the headers above, cached CORS_MAX_AGE_SECONDS.
 * Throws the router's 404/405 when nothing serves it (the browser then refuses the call).
 */
export function sendPreflight(res: ServerResponse, router: Router, pathname: string, requestedMethod: string, requestId: string): void {
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
export function sendError(res: ServerResponse, err: ServiceError, render?: (err: ServiceError) => string, requestId?: string, contentType?: string): void {
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
    // A negotiated media type (an error format's `contentType`) depends on Accept.
    ...(contentType === undefined ? {} : { Vary: 'Accept' }),
    'Content-Type': contentType ?? JSON_CONTENT_TYPE,
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

/** What `sendReply` sends as a reply's body: raw bytes, pre-serialised JSON, `body` as JSON, or nothing (''). */
function payloadOf(reply: Reply): string | Buffer {
  if (reply.raw !== undefined) return reply.raw;
  if (reply.json !== undefined) return reply.json;
  if (reply.body !== undefined) return JSON.stringify(reply.body);
  return '';
}

/** The Content-Type `sendReply` sends with `payloadOf(reply)`: the reply's own, else JSON, else (no payload) plain text. */
function contentTypeOf(reply: Reply): string {
  if (reply.contentType !== undefined) return reply.contentType;
  return reply.raw === undefined && reply.json === undefined && reply.body === undefined ? 'text/plain; charset=utf-8' : JSON_CONTENT_TYPE;
}

/**
 * The flat header list of a reply without headers of its own (status, lists, writes), which
 * node:http stores without building and walking a merged header object — measured 15-20 % more
 * GET /api/status requests per second at 64 connections (issue 10's status target): the security
 * headers, Content-Type, Content-Length and, when `requestId` is given, X-Request-Id.
 */
function flatHead(contentType: string, payload: string | Buffer, requestId: string | undefined): string[] {
  const contentLength = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  const list = [...BASE_HEADER_LIST, 'Content-Type', contentType, 'Content-Length', String(contentLength)];
  if (requestId !== undefined) list.push('X-Request-Id', requestId);
  return list;
}

/**
 * Sends a handler's reply (a 304 is sent without body, Content-Type or Content-Length), with
 * `requestId` as X-Request-Id when given.
 */
export function sendReply(res: ServerResponse, reply: Reply, head: boolean, requestId?: string): void {
  if (reply.stream !== undefined) return sendStream(res, reply, reply.stream, head, requestId);
  const payload = payloadOf(reply);
  const contentType = contentTypeOf(reply);
  // 304 (conditional GET of guidance documents) carries no body, so no Content-Type/-Length: a
  // Content-Length of 0 would contradict the representation the client already has (RFC 9110 8.6).
  const idHeader = requestId === undefined ? {} : { 'X-Request-Id': requestId };
  if (reply.status === 304) {
    res.writeHead(304, { ...BASE_HEADERS, ...idHeader, ...reply.headers });
    res.end();
    return;
  }
  if (reply.headers === undefined) res.writeHead(reply.status, flatHead(contentType, payload, requestId));
  else {
    // The reply's own headers override the base ones (e.g. a document's Cache-Control).
    const contentLength = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
    writeHeadSafely(res, reply.status, { ...BASE_HEADERS, ...idHeader, ...reply.headers, 'Content-Type': contentType, 'Content-Length': contentLength });
  }
  res.end(head ? undefined : payload);
}

/**
 * A reply prepared once and sent many times by the shortest path (issue 56, a route's `memo`):
 * the status, the head exactly as `sendReply` writes it with X-Request-Id's value last (set per
 * request by `sendPrepared`), and the payload.
 */
export interface PreparedReply {
  readonly status: number;
  readonly head: string[];
  readonly payload: string | Buffer;
}

/**
 * Prepares `reply` for `sendPrepared`, or null when it is one `sendReply` must build per request
 * (a stream, a 304, or a reply with headers of its own).
 */
export function prepareReply(reply: Reply): PreparedReply | null {
  if (reply.stream !== undefined || reply.status === 304 || reply.headers !== undefined) return null;
  const payload = payloadOf(reply);
  return { status: reply.status, head: flatHead(contentTypeOf(reply), payload, ''), payload };
}

/**
 * Sends a prepared reply with `requestId` as X-Request-Id: the same bytes as `sendReply` of the
 * reply it was prepared from, with no allocation of its own (the head's last value is
 * overwritten; node:http reads the list only while `writeHead` runs). HEAD gets the head only.
 */
export function sendPrepared(res: ServerResponse, prepared: PreparedReply, head: boolean, requestId: string): void {
  prepared.head[prepared.head.length - 1] = requestId;
  res.writeHead(prepared.status, prepared.head);
  res.end(head ? undefined : prepared.payload);
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
export function rawErrorReply(status: number, reason: string, body: { error: string; code: ErrorCode }, extra: Record<string, string> = {}, requestId?: string): string {
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
