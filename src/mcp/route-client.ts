/**
 * The tools' client when they are served in-process by POST /mcp (issue 26): implements
 * ForumClientLike by running the REST routes of the table through `ctx.runner` — the same steps as
 * a REST request of the same caller (src/http/server.ts `runRoute`: the route's rate-limit class,
 * write stop, compiled validator, handler, durability wait), as the A2A binding does
 * (src/api/a2a/dispatch.ts). So one tool table (src/mcp/tools.ts) serves stdio and HTTP, with the
 * same validation, limits and error codes, and no loopback HTTP hop that would count every tool
 * call twice against the global limit.
 *
 * Differences from the stdio client helper, by construction: nothing is retried (a 429 becomes a
 * tool error saying how long to wait), and no write is in doubt (the route either answered or
 * threw; a server crash ends the HTTP request too, and the caller's host then sees a transport
 * error and can settle with forum_receipt).
 */
import { randomBytes } from 'node:crypto';
import { BODY_BYTES_MAX, URL_BYTES_MAX } from '../constants.js';
import { ServiceError } from '../errors.js';
import { payloadTooLarge, uriTooLong } from '../http/errors.js';
import { limitFromHeaders, type LimitState } from '../http/rate-limit.js';
import type { Method, Reply, RouteRunner } from '../http/router.js';
import { logger } from '../logger.js';
import type { ForumClientLike, JsonObject } from './tools.js';

/** The ForumError shape src/mcp/server.ts `errorAdvice` reads (forum-client.mjs's ForumError fields). */
export class RouteForumError extends Error {
  readonly retryAfterSeconds: number | null;
  readonly inDoubt = false;
  readonly kind = null;
  readonly clientId = null;
  constructor(
    readonly status: number,
    /** `{"error": message, "code": CODE}`: the REST error body. */
    readonly body: { error: string; code: string },
    retryAfter: string | undefined,
    /** The limit a rate-limit 429 refused (its RateLimit fields as a LimitState), else null. */
    readonly limit: LimitState | null = null,
  ) {
    super(`HTTP ${status}: ${body.error}`);
    this.name = 'ForumError';
    const seconds = retryAfter === undefined ? NaN : Number(retryAfter);
    this.retryAfterSeconds = Number.isFinite(seconds) ? seconds : null;
  }
}

/** A ServiceError as the tool layer sees it: status, the REST error body, Retry-After and a 429's limit. */
const asForumError = (err: ServiceError): RouteForumError =>
  new RouteForumError(err.status, { error: err.message, code: err.code }, err.headers['Retry-After'], err.status === 429 ? limitFromHeaders(err.headers) : null);

/** A clientId for a write whose caller gave none (1..120 of [A-Za-z0-9_-], like newClientId in forum-client.mjs). */
const mintClientId = (): string => `mcp_${randomBytes(12).toString('base64url')}`;

/** The reply's body as the client helper would parse it: JSON when JSON, else text. */
function parseReply(reply: Reply): unknown {
  if (reply.json !== undefined) return JSON.parse(reply.json);
  // A round trip gives the tool plain data, as over HTTP (no shared references into state).
  if (reply.body !== undefined) return JSON.parse(JSON.stringify(reply.body));
  if (reply.raw !== undefined) {
    const text = reply.raw.toString();
    return (reply.contentType ?? '').startsWith('application/json') ? JSON.parse(text) : text;
  }
  return null;
}

/**
 * ForumClientLike over the route table for one authenticated /mcp request.
 * `token` is not the caller's token (that never leaves the request's Authorization header): it is
 * a non-null marker that the request was authenticated, which is all the tool layer checks.
 */
export class RouteClient implements ForumClientLike {
  readonly token = 'authenticated-by-request';

  constructor(private readonly runner: RouteRunner) {}

  /**
   * Runs `method path` with `query` (values as strings; null/undefined skipped) or `body`.
   * Resolves to the parsed body; rejects with RouteForumError (status and the REST error body)
   * for every ServiceError the route throws, with 413 BODY_TOO_LARGE for a body over
   * BODY_BYTES_MAX and 414 URI_TOO_LONG for a target over URL_BYTES_MAX (as REST would answer the
   * stdio server), and with a 500 RouteForumError (logged) for anything else.
   */
  async request(method: 'GET' | 'POST', path: string, options: JsonObject = {}): Promise<unknown> {
    const route = this.runner.find(method as Method, path);
    if (!route) throw new RouteForumError(404, { error: `no such endpoint: ${method} ${path}`, code: 'NOT_FOUND' }, undefined);
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries((options.query as JsonObject | undefined) ?? {})) if (v !== undefined && v !== null) query.set(k, String(v));
    // The REST limits on what a request carries, as the stdio server meets them over HTTP: the
    // same refusal comes back as the same tool error on both transports.
    if (method === 'POST' && Buffer.byteLength(JSON.stringify(options.body ?? null)) > BODY_BYTES_MAX) throw asForumError(payloadTooLarge(BODY_BYTES_MAX));
    if (method === 'GET' && Buffer.byteLength(`${path}?${query.toString()}`) > URL_BYTES_MAX) throw asForumError(uriTooLong(URL_BYTES_MAX));
    try {
      return parseReply(await this.runner.run(route, { query, body: () => options.body }));
    } catch (err) {
      if (err instanceof ServiceError) throw asForumError(err);
      logger.error('mcp', `unexpected error in ${method} ${path} run for /mcp`, { err: err instanceof Error ? err.stack ?? err.message : String(err) });
      throw new RouteForumError(500, { error: 'internal error (logged on the server)', code: 'INTERNAL' }, undefined);
    }
  }

  private get<T>(path: string, query: JsonObject = {}): Promise<T> {
    return this.request('GET', path, { query }) as Promise<T>;
  }

  private post<T>(path: string, body: JsonObject): Promise<T> {
    return this.request('POST', path, { body }) as Promise<T>;
  }

  status() { return this.get<JsonObject>('/api/status'); }
  me() { return this.get<JsonObject>('/api/me'); }
  agents() { return this.get<JsonObject[]>('/api/agents'); }
  opportunities() { return this.get<JsonObject>('/api/opportunities'); }
  opportunityBrief(workItemId: string) { return this.get<JsonObject>('/api/opportunities/brief', { workItemId }); }
  topics() { return this.get<JsonObject[]>('/api/topics'); }
  rooms() { return this.get<JsonObject[]>('/api/rooms'); }
  createTopic(input: JsonObject) { return this.post<JsonObject>('/api/topics', input); }
  messages(query: JsonObject) { return this.get<JsonObject>('/api/messages', query); }
  postMessage(input: JsonObject) { return this.post<JsonObject>('/api/messages', { ...input, clientId: input.clientId ?? mintClientId() }); }
  knowledge(query: JsonObject) { return this.get<JsonObject>('/api/knowledge', query); }
  postKnowledge(input: JsonObject) { return this.post<JsonObject>('/api/knowledge', input); }
  search(query: JsonObject) { return this.get<JsonObject>('/api/search', query); }
  work(query: JsonObject) { return this.get<JsonObject>('/api/work', query); }
  createWork(input: JsonObject) { return this.post<JsonObject>('/api/work', { ...input, clientId: input.clientId ?? mintClientId() }); }
  workAction(input: JsonObject) { return this.post<JsonObject>('/api/work/action', { ...input, clientId: input.clientId ?? mintClientId() }); }
  workHistory(query: JsonObject) { return this.get<JsonObject>('/api/work/history', query); }
  changes(query: JsonObject) { return this.get<JsonObject>('/api/changes', query); }
  workChanges(query: JsonObject) { return this.get<JsonObject>('/api/work/changes', query); }
  inbox(query: JsonObject) { return this.get<JsonObject>('/api/inbox', query); }
  exchange(query: JsonObject) { return this.get<JsonObject>('/api/exchange', query); }
  receipt(kind: string, clientId: string) { return this.get<JsonObject>('/api/receipts', { kind, clientId }); }
}
