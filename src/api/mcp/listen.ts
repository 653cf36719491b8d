/**
 * MCP 2026-07-28 `subscriptions/listen` on POST /mcp (issue 54: "map subscriptions/listen onto the
 * inbox and the change feeds, with the same per-agent and total bounds as long polls and SSE").
 *
 * A listen names resource URIs (src/mcp/modern.ts LISTEN_RESOURCES): `forum://inbox` (the
 * caller's inbox), `forum://changes` (the discussion feed) and `forum://work/changes` (the work
 * feed), each honoured when the tool that reads it is in the caller's selection (`?toolsets`,
 * `X-MCP-Toolsets`; the read-only mode keeps all three: they change nothing). The answer is a
 * Server-Sent Events stream: the SDK's `notifications/subscriptions/acknowledged` with the honoured
 * filter, then one `notifications/resources/updated` for a URI whenever its feed gained a durable
 * event since the last notification of the stream (several commits within one delivery round make
 * one notification), then, when the stream ends, the empty `subscriptions/listen` result (a
 * graceful close: listen again). A notification carries the URI only, never participant text: the
 * caller reads what changed with forum_inbox, forum_changes or work_changes from its cursor.
 *
 * Bounds: a listen stream is a held request of the change feeds (src/api/feeds/long-poll.ts, a
 * "watcher"): it takes one of the caller's FEED_WAITERS_PER_AGENT_MAX slots and one of the
 * FEED_WAITERS_MAX in total, together with the caller's long polls (`wait=`) and feed streams
 * (`Accept: text/event-stream`), as GET /api/limits reports them (`feedSlots`, `feedSlotsTotal`).
 * Past a bound the listen is refused before any stream starts, in band as the SDK refuses one
 * past its own limit (HTTP 200, JSON-RPC -32603 "Subscription limit reached"), with the limit's
 * facts (the LimitState of GET /api/limits) and `retryAfterSeconds` in `error.data`. It does not
 * hold one of /mcp's request slots (MCP_IN_FLIGHT_MAX) once its stream has started. It ends after
 * MCP_LISTEN_SECONDS, at shutdown, when the caller is disabled or its token rotated, and when its
 * connection closes (the slot is freed at once). Per stream: this object, its response and one set
 * entry; no timer of its own (deadline and keep-alive come from the held requests' one sweep),
 * and a reader that does not read is not written to while its response holds more than
 * FEED_STREAM_BUFFER_BYTES_MAX (it is told of what moved meanwhile once it drains).
 */
import type { ServerResponse } from 'node:http';
import { FEED_STREAM_BUFFER_BYTES_MAX, FEED_STREAM_BUSY_RETRY_SECONDS, FEED_STREAM_KEEPALIVE_MS, FEED_WAITERS_MAX, FEED_WAITERS_PER_AGENT_MAX, MCP_LISTEN_SECONDS } from '../../constants.js';
import type { Reply, RequestContext } from '../../http/router.js';
import { logger } from '../../logger.js';
import { openListen, type ListenResource, type ModernServing } from '../../mcp/modern.js';
import { feedMovedBetween, holdWatcher } from '../feeds/routes.js';
import type { HeldStream } from '../feeds/long-poll.js';
import { feedSlotStates } from '../limits/routes.js';

/** What a listen stream reads and drives: the forum's durable position, the caller's feeds, the SDK stream. */
export interface ListenSource {
  /** The log's durable seq now (only durable events are notified). */
  durableSeq(): number;
  /** Whether `resource`'s feed has an event with a log seq in (`afterSeq`, `durableSeq`]. */
  moved(resource: ListenResource, afterSeq: number, durableSeq: number): boolean;
  /** Whether the caller may no longer be told anything (disabled, or its token rotated). */
  revoked(): boolean;
  /** Writes `notifications/resources/updated` for `uri` into the SDK stream. */
  updated(uri: string): void;
  /** Ends the SDK stream gracefully (its last frame: the empty listen result). */
  close(): Promise<void>;
}

const KEEPALIVE = ': keep-alive\n\n';

/** One open listen stream (a watcher of FeedWaiters): copies the SDK's SSE frames to the response. */
export class ListenStream implements HeldStream {
  private res: ServerResponse | null = null;
  private closing = false;
  private finished = false;
  private blocked = false;
  private lastWriteMs: number;
  private release: (() => void) | null = null;

  /**
   * Input: `body` (the SDK's event stream, its acknowledgement already queued), the resources
   * honoured, the source, the durable seq at the open (`after`: changes after it are notified) and
   * the clock (ms).
   */
  constructor(
    private readonly body: ReadableStream<Uint8Array>,
    private readonly follows: readonly ListenResource[],
    private readonly source: ListenSource,
    public after: number,
    private readonly nowMs: () => number,
  ) {
    this.lastWriteMs = nowMs();
  }

  /** Hands the stream the function that frees its slot (FeedWaiters `openWatcher`'s `release`). */
  held(release: () => void): void {
    this.release = release;
  }

  /**
   * Starts copying on `res`, whose head (200, text/event-stream) the server has written: every
   * frame the SDK writes (the acknowledgement first), then, when the SDK stream ends, the response.
   * Then looks once for changes since the open.
   */
  start(res: ServerResponse): void {
    this.res = res;
    void this.copy(res);
    this.pump();
  }

  private async copy(res: ServerResponse): Promise<void> {
    const reader = this.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (res.destroyed || res.writableEnded) continue;
        res.write(value);
        this.lastWriteMs = this.nowMs();
      }
    } catch (err) {
      logger.error('stream_error', 'an MCP listen stream failed; its connection is closed', { err: err instanceof Error ? err : String(err) });
      res.destroy();
    } finally {
      this.finish(res);
    }
  }

  /** The SDK stream ended (graceful close, or nothing was honoured): frees the slot and ends the response. */
  private finish(res: ServerResponse): void {
    if (this.finished) return;
    this.finished = true;
    this.closing = true;
    this.release?.();
    if (!res.destroyed && !res.writableEnded) res.end();
  }

  /**
   * Notifies each followed resource whose feed has a durable event past the stream's position,
   * once per call, and moves the position to the durable seq. Writes nothing while the response
   * holds more than FEED_STREAM_BUFFER_BYTES_MAX unsent bytes (goes on at 'drain'); ends the
   * stream when the caller was disabled or its token rotated. Output: whether it notified.
   */
  pump(): boolean {
    const res = this.res;
    if (res === null || this.closing || this.blocked) return false;
    if (this.source.revoked()) {
      this.end();
      return false;
    }
    if (res.writableLength > FEED_STREAM_BUFFER_BYTES_MAX) {
      this.blocked = true;
      res.once('drain', () => {
        this.blocked = false;
        this.pump();
      });
      return false;
    }
    const durable = this.source.durableSeq();
    if (durable <= this.after) return false;
    let wrote = false;
    for (const r of this.follows) {
      if (!this.source.moved(r, this.after, durable)) continue;
      this.source.updated(r.uri);
      wrote = true;
    }
    this.after = durable;
    return wrote;
  }

  /** The sweep's call: a keep-alive comment when nothing was written for FEED_STREAM_KEEPALIVE_MS. */
  tick(nowMs: number): void {
    const res = this.res;
    if (res === null || this.closing || this.blocked || nowMs - this.lastWriteMs < FEED_STREAM_KEEPALIVE_MS) return;
    this.lastWriteMs = nowMs;
    if (!res.destroyed && !res.writableEnded) res.write(KEEPALIVE);
  }

  get queuedBytes(): number {
    return this.res === null || this.finished ? 0 : this.res.writableLength;
  }

  /** Notifications carry a URI only, no participant text: nothing queued needs withholding after a moderation action. */
  dropQueued(): boolean {
    return false;
  }

  /**
   * Ends the stream (its deadline, shutdown, its connection closed, or the caller revoked): the SDK
   * writes the empty listen result and closes its stream, after which the response ends and the
   * slot is freed. A stream never started just frees its slot.
   */
  end(): void {
    if (this.closing) return;
    this.closing = true;
    this.source.close().catch(() => undefined);
    if (this.res === null) {
      this.finished = true;
      this.release?.();
      void this.body.cancel().catch(() => undefined);
    }
  }
}

/**
 * Serves a 2026-07-28 `subscriptions/listen` (`request` with its parsed `body`) for the caller of
 * `ctx` with `serving` (see the module comment). Output: the stream Reply, a JSON-RPC -32603
 * refusal Reply (HTTP 200) past the bounds, or the SDK's Response when it answered with an error
 * (a missing or mismatched header, a malformed filter: its status and JSON-RPC error).
 */
export async function serveListen(ctx: RequestContext, request: Request, body: unknown, serving: ModernServing): Promise<Reply | Response> {
  const { app } = ctx;
  const agent = ctx.agent!;
  const agentId = agent.profile.id;
  const tokenHash = agent.profile.tokenHash;
  const opened = await openListen(request, body, serving);
  const response = opened.response;
  if (response.body === null || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response;
  const source: ListenSource = {
    durableSeq: () => app.log.durableSeq,
    moved: (r, afterSeq, durableSeq) => feedMovedBetween(app, r.feed, agentId, afterSeq, durableSeq),
    revoked: () => agent.disabled === 1 || agent.profile.tokenHash !== tokenHash,
    updated: opened.updated,
    close: opened.close,
  };
  const stream = new ListenStream(response.body, opened.follows, source, app.log.durableSeq, () => app.now());
  const held = holdWatcher(app, agentId, ctx.req.socket, MCP_LISTEN_SECONDS, stream);
  if (typeof held === 'string') {
    await opened.close();
    await response.body.cancel().catch(() => undefined);
    const policy = held === 'agent' ? 'feedSlots' : 'feedSlotsTotal';
    const limit = feedSlotStates(app, agentId).find((s) => s.policy === policy);
    const why =
      held === 'agent'
        ? `you hold ${FEED_WAITERS_PER_AGENT_MAX} long polls, feed streams and listen streams already (the most per agent); close one, or listen again after ${FEED_STREAM_BUSY_RETRY_SECONDS} s`
        : `the server holds ${FEED_WAITERS_MAX} long polls, feed streams and listen streams (its most); listen again after ${FEED_STREAM_BUSY_RETRY_SECONDS} s, or poll forum_inbox, forum_changes and work_changes meanwhile`;
    const id = (body as { id?: unknown }).id ?? null;
    return {
      status: 200,
      raw: JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: `Subscription limit reached: ${why}`, data: { 'agent-forum/limit': limit, retryAfterSeconds: FEED_STREAM_BUSY_RETRY_SECONDS } } }),
      contentType: 'application/json',
    };
  }
  stream.held(held.release);
  return { status: 200, stream: (res) => stream.start(res) };
}
