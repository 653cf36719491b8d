/**
 * Change feeds, topic export and receipts (part 4 "Change feeds and reconciliation", part 6).
 * All four count toward the change-read limit (part 8; the work feed too — our choice, since it
 * is the same kind of polling); a long-polled feed request (`wait`, issue 37) counts once however
 * long it is held; a stream (`Accept: text/event-stream`, src/api/feeds/stream.ts) counts once
 * when it opens and once for every page after its first, as the long poll's next requests would.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { App } from '../../app.js';
import { FEED_STREAM_BUSY_RETRY_SECONDS, FEED_STREAM_WAIT_DEFAULT_SECONDS, FEED_WAITERS_MAX, FEED_WAITERS_PER_AGENT_MAX } from '../../constants.js';
import { ServiceError } from '../../errors.js';
import { tooManyRequests, unauthorized } from '../../http/errors.js';
import type { FeedSample } from '../../metrics.js';
import { JSON_CONTENT_TYPE, type ParameterDoc, type Reply, type RequestContext, type Route } from '../../http/router.js';
import { route } from '../route.js';
import {
  checkCursor,
  DISCUSSION_FORMAT,
  exchangePageJson,
  notYetPageJson,
  WORK_FORMAT,
  FeedPageCache,
  discussionPageJson,
  workPageJson,
  workFeedOriginId,
  type CheckedCursor,
  type CursorQuery,
} from '../../domain/feeds/pages.js';
import { workFeedPositions, type FeedPositions } from '../../domain/feeds/feeds.js';
import { receiptJson } from '../../domain/receipts/receipts.js';
import { readerOf, type Reader } from '../../domain/moderation/moderation.js';
import { FeedWaiters, type FeedName, type HeldStream, type StreamRefusal } from './long-poll.js';
import { FeedStream, eventOf, lastEventCursor, type StreamSource } from './stream.js';
import { inboxHasEntryAfter, inboxLast } from '../../domain/inbox/inbox.js';
import { exchangeProofs } from '../proofs/routes.js';

/** What a cached feed page depends on besides its window: the reader's class and the moderation version. */
function pageVariant(reader: Reader): string {
  return `${reader.operator ? 'operator' : 'agent'}:${reader.mod.version}`;
}

const CURSOR_ERRORS = [409];

/**
 * Encoded complete pages of both feeds, per app (a lineage change means a new app), bounded by
 * FORUM_FEED_CACHE_MB.
 */
const pageCaches = new WeakMap<App, FeedPageCache>();
function cacheOf(app: App): FeedPageCache {
  let c = pageCaches.get(app);
  if (!c) pageCaches.set(app, (c = new FeedPageCache(app.config.feedCacheBytes)));
  return c;
}

/** Held long-poll requests per app (issue 37), told of every group commit. */
const waitersByApp = new WeakMap<App, FeedWaiters>();
function waitersOf(app: App): FeedWaiters {
  let w = waitersByApp.get(app);
  if (!w) {
    const feeds = app.state.feeds;
    const waiters = new FeedWaiters(
      () => app.now(),
      (feed, agentId) => {
        if (feed === 'inbox') return agentId === undefined ? app.state.inbox.last : inboxLast(app.state.inbox, agentId);
        return feed === 'work' ? feeds.work.length : feeds.discussion.length === 0 ? 0 : feeds.discussion.at(feeds.discussion.length - 1);
      },
    );
    let moderationVersion = app.state.moderation.version;
    app.afterGroupCommit.add(() => {
      // A moderation action is durable: no stream delivers a page rendered before it from its queue.
      if (app.state.moderation.version !== moderationVersion) {
        moderationVersion = app.state.moderation.version;
        waiters.moderated();
      }
      waiters.notify();
    });
    waitersByApp.set(app, (w = waiters));
  }
  return w;
}

/** Per app: counts a stream page as a change read of its agent (set when rate limits are on). */
const changeReadTakers = new WeakMap<App, (agentId: string) => number>();

/**
 * Makes the streams of `app` count every page after the first as one change read of their agent
 * (part 8; issue 37 "same rules"): `take(agentId)` returns 0 when counted, else the ms until the
 * limit's window lets one more through. The service calls it when rate limits are on.
 */
export function countStreamPages(app: App, take: (agentId: string) => number): void {
  changeReadTakers.set(app, take);
}

/**
 * Answers every held feed request of `app` now, with the page it would get now (shutdown,
 * issue 37: the server answers its waiters before it stops accepting).
 */
export function releaseFeedWaiters(app: App): void {
  waitersByApp.get(app)?.releaseAll();
}

/**
 * What the metrics read of `app`'s held feed requests (issue 37): `waiters`, the long-polled feed
 * and inbox requests and streams held now (forum_feed_waiters), and `deliverySeconds`, the
 * delivery rounds' measured main-thread time so far, in seconds, what their windows are sized by
 * (FEED_DELIVERY_SHARE_PERCENT; forum_feed_delivery_seconds_total), and `streamQueuedBytesMax`,
 * the most bytes one open stream holds queued for its connection now
 * (forum_feed_stream_queued_bytes_max; issue 51: at most FEED_STREAM_BUFFER_BYTES_MAX plus one page).
 */
export function feedSample(app: App): FeedSample {
  const w = waitersByApp.get(app);
  return { waiters: w?.size ?? 0, deliverySeconds: (w?.deliveryMs ?? 0) / 1000, streamQueuedBytesMax: w?.streamQueuedBytesMax ?? 0 };
}

/**
 * The held long-poll requests and streams of `app` (issue 37) for GET /api/limits: `total`, held
 * now by everyone (of FEED_WAITERS_MAX), and `byAgent`, held now by `agentId` (of
 * FEED_WAITERS_PER_AGENT_MAX; 0 without an agent).
 */
export function feedSlots(app: App, agentId: string | null): { total: number; byAgent: number } {
  const w = waitersByApp.get(app);
  return { total: w?.size ?? 0, byAgent: w === undefined || agentId === null ? 0 : w.heldBy(agentId) };
}

/**
 * Holds watcher `stream` of `agentId` (an MCP `subscriptions/listen` stream, src/api/mcp/listen.ts)
 * on `socket` for up to `waitSeconds` (s), in the same bounds as long polls and feed streams
 * (FEED_WAITERS_PER_AGENT_MAX, FEED_WAITERS_MAX; one slot each). Output: `{ release }` (frees the
 * slot when the stream ends by itself) or which bound refused it.
 */
export function holdWatcher(app: App, agentId: string, socket: Socket, waitSeconds: number, stream: HeldStream): { release: () => void } | StreamRefusal {
  return waitersOf(app).openWatcher(waitSeconds, agentId, socket, stream);
}

/**
 * Whether `feed` (for the inbox: `agentId`'s) has an event whose log seq lies in (`afterSeq`,
 * `durableSeq`]: what a listen stream is notified of. Output: a boolean; a binary search per call.
 */
export function feedMovedBetween(app: App, feed: FeedName, agentId: string, afterSeq: number, durableSeq: number): boolean {
  if (feed === 'inbox') return inboxHasEntryAfter(app.state.inbox, agentId, afterSeq, durableSeq);
  const seqs = feed === 'work' ? app.state.feeds.work : app.state.feeds.discussion;
  const i = seqs.upperBound(afterSeq);
  return i < seqs.length && seqs.at(i) <= durableSeq;
}

/**
 * A feed request with `wait` (issue 37); its cursor was checked and mapped first (`checkCursor`:
 * 400/409 at once), and `at` is where it landed. When its page would be caught up (`caughtUp`: no
 * event past the cursor and nothing more to scan; always for a cursor ahead of a follower's head,
 * `at.notYet`, issue 50), the
 * request is held until the feed has an event past the cursor or the wait ends; when it is not
 * caught up but a delivery window is open (the feed is moving and followers were just answered),
 * it is held until the round at the window's end, so a follower that keeps asking is answered
 * once per window, not at every commit; when no window is open it is answered at once and opens
 * one (so followers that are never caught up are paced too), as it is when the bounds on held
 * requests are reached. What a not-caught-up request cost the main thread so far (from
 * `ctx.startedMs`) is charged to the delivery rounds' share, and so is the writing of a held
 * request's answer (`ctx.onSent`, timed by src/http/server.ts). `render` builds the page (and
 * checks the cursor again: a held request is answered with what the same request would get then).
 * A held request whose agent was disabled, or whose token was rotated, while it was held is
 * answered 401 UNAUTHORIZED, as the same request sent then would be (issue 51).
 */
export function pageOrWait(ctx: RequestContext & { query: CursorQuery & { wait?: number } }, feed: FeedName, caughtUp: boolean, at: CheckedCursor, render: () => Reply): Reply | Promise<Reply> {
  const { wait } = ctx.query;
  if (wait === undefined) return render();
  // On a follower a cursor ahead of its head is held as caught up, until the feed passes it (issue 50).
  if (at.notYet) caughtUp = true;
  // Held requests are compared with the feed's last event in the feed's own seqs.
  const after = at.seq;
  const waiters = waitersOf(ctx.app);
  const agent = ctx.agent!;
  const agentId = agent.profile.id;
  const tokenHash = agent.profile.tokenHash;
  // A held request is answered later: an agent disabled, or whose token was rotated, meanwhile
  // gets what the same request sent then would get, 401, not the new content (issue 51; its
  // streams stop the same way).
  const answer = (): Reply => {
    if (agent.disabled) throw unauthorized('this agent is disabled by the operator');
    if (agent.profile.tokenHash !== tokenHash) throw unauthorized('invalid or revoked token');
    return render();
  };
  const held = caughtUp ? waiters.hold(feed, after, wait, agentId, ctx.req.socket, answer) : waiters.holdForRound(feed, after, wait, agentId, ctx.req.socket, answer);
  // A follower of a moving feed: what its request cost counts in the delivery rounds' share. A
  // caught-up request's handling is not charged (its next answer waits for a new event anyway, and the
  // inbox's held requests, answered a few at a time, would have their windows lengthened by
  // whatever GC pause fell inside one of them: p99 delivery 270-470 ms against 3-23 ms).
  if (!caughtUp && ctx.startedMs !== undefined) waiters.charge(performance.now() - ctx.startedMs);
  if (held === null) return render();
  // Answered by a round (caught up or not): writing its answer to the socket is the round's cost.
  ctx.onSent = (ms) => waiters.charge(ms);
  return held;
}

/** What a stream's events carry, for OpenAPI (issue 37). */
export const STREAM_DOC =
  'With Accept: text/event-stream (ours, issue 37): Server-Sent Events for `wait` seconds (1..60, default 60). First `retry: 1000`; then, whenever the feed has events past the cursor, one event per page: `id: <originId>:<after>` (the page cursor) and `data: <the page JSON>`, byte-identical to GET with the previous cursor; `: keep-alive` comments when quiet. After a page with hasMore (a backlog) the next page follows its pollAfterSeconds (1 s) later, as a polling client would ask for it; a caught-up stream gets the next page as soon as there is one. Resume with Last-Event-ID. The request counts one change read and each page after the first one more (a page past the limit waits for the window; no 429 once open); past the bounds on held requests 429 (per agent) or 503 (in total) with Retry-After.';

/** The Last-Event-ID request header of the stream form (issue 37), for OpenAPI. */
export const LAST_EVENT_ID_PARAMETER: ParameterDoc = {
  name: 'Last-Event-ID',
  in: 'header',
  required: false,
  description: 'Stream form only (Accept: text/event-stream): the id of the last event processed, `<originId>:<after>` (`after` the page cursor\'s position); resumes after it and replaces the query cursor. Malformed: 400; another feed or lineage, ahead of the archive, or a position a failover lost: 409.',
  schema: { type: 'string', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}:(0|[1-9][0-9]{0,15})$' },
};

/** `Accept` naming text/event-stream (what an EventSource sends). */
const EVENT_STREAM_ACCEPT = /(^|[\s,])text\/event-stream\s*(;|,|$)/i;

/**
 * Whether a request asks for its feed as Server-Sent Events (issue 37): a GET whose `Accept`
 * names text/event-stream. There is no query flag: the header is what EventSource sends, and one
 * spelling keeps the JSON form's URL (and its cache) the same.
 */
export function wantsStream(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  return req.method === 'GET' && accept !== undefined && EVENT_STREAM_ACCEPT.test(accept);
}

/**
 * Opens a stream of `feed` for the caller (issue 37): the cursor is the query's, or the
 * `Last-Event-ID` header's when it is sent (an EventSource reconnecting); it is checked against
 * `originId` and `head` and mapped with `positions()` (the feed's, read at each use: issue 50)
 * first, so a bad cursor is the JSON form's 400/409 before the stream starts. `page(q)` renders
 * the page at `q`, whose `after` is a seq of the feed's own, from durable records only, or returns
 * null when there is nothing past `q.after`. The stream lasts `wait` seconds (FEED_STREAM_WAIT_DEFAULT_SECONDS
 * when absent); once the caller is disabled or its token rotated it sends nothing more. Its pages
 * follow the feed's rules (src/api/feeds/stream.ts): after a backlog page its pollAfterSeconds,
 * and with rate limits on every page after the first counts as a change read. Past the bounds on held
 * requests: 429 RATE_LIMITED (the caller's
 * FEED_WAITERS_PER_AGENT_MAX) or 503 UNAVAILABLE (FEED_WAITERS_MAX), with Retry-After
 * FEED_STREAM_BUSY_RETRY_SECONDS.
 */
export function openStream(
  ctx: RequestContext & { query: CursorQuery & { wait?: number } },
  feed: FeedName,
  originId: string,
  head: number,
  positions: () => FeedPositions,
  page: (q: CursorQuery) => Buffer | null,
): Reply {
  const resumed = lastEventCursor(ctx.req.headers['last-event-id']);
  const q: CursorQuery = resumed === undefined ? { ...ctx.query } : { after: resumed.after, originId: resumed.originId, limit: ctx.query.limit };
  const at = checkCursor(q, originId, head, feed === 'inbox' ? 'inbox' : `${feed} feed`, ctx.app.following, positions());
  const { app } = ctx;
  const agent = ctx.agent!;
  const tokenHash = agent.profile.tokenHash;
  const take = changeReadTakers.get(app);
  const agentId = agent.profile.id;
  const source: StreamSource = {
    next(after: number) {
      // An agent the operator disables, or whose token is rotated (a leaked token), while its
      // stream is open gets nothing more on it (the stream ends at its wait; reopening it with
      // that token is 401).
      if (agent.disabled || agent.profile.tokenHash !== tokenHash) return null;
      const p = page({ after, limit: q.limit, originId });
      return p === null ? null : eventOf(p, (position) => positions().cursorSeq(position).seq);
    },
    take: take === undefined ? undefined : () => take(agentId),
  };
  // The stream keeps its cursor in the feed's own seqs (held streams are compared with the
  // feed's last event); its events' ids carry the page cursors' positions.
  const stream = new FeedStream(source, at.seq, () => app.now());
  const refused = waitersOf(app).openStream(feed, ctx.query.wait ?? FEED_STREAM_WAIT_DEFAULT_SECONDS, agentId, ctx.req.socket, stream);
  if (refused === 'agent') {
    throw tooManyRequests(`you hold ${FEED_WAITERS_PER_AGENT_MAX} long-polled requests and streams already (the most per agent); close one, or retry after Retry-After seconds`, FEED_STREAM_BUSY_RETRY_SECONDS);
  }
  if (refused === 'total') {
    throw new ServiceError('UNAVAILABLE', `the server holds ${FEED_WAITERS_MAX} long-polled requests and streams (its most); retry after Retry-After seconds, or poll without a stream meanwhile`, {
      'Retry-After': String(FEED_STREAM_BUSY_RETRY_SECONDS),
    });
  }
  return { status: 200, stream: (res) => stream.start(res) };
}

/**
 * One page of the discussion or work feed for the caller at `q`, whose `after` is a seq of the
 * feed's own (a checked cursor: `checkCursor`), up to `head`: from the page cache, rendered with
 * `render` for the caller's reader class on a miss. Output: the page's bytes.
 */
function feedPage(ctx: Pick<RequestContext, 'app' | 'agent'>, feed: 'discussion' | 'work', q: CursorQuery, head: number, render: (q: CursorQuery, reader: Reader) => string): Buffer {
  const reader = readerOf(ctx.app.state.moderation, ctx.agent?.profile.role);
  return cacheOf(ctx.app).page(feed, q, head, () => render(q, reader), pageVariant(reader));
}

/**
 * The answer to a GET of the discussion or work feed for the caller: checks the query's cursor
 * against the feed's `originId` and `head` and maps it with `positions` (409 CURSOR_* when it
 * does not belong or names lost records, part 4, issue 50), then answers "not yet" at the
 * client's own cursor for one ahead of a follower's head, else the page at the mapped cursor.
 */
function feedReply(ctx: Pick<RequestContext, 'app' | 'agent'> & { query: CursorQuery }, feed: 'discussion' | 'work', originId: string, head: number, positions: FeedPositions, render: (q: CursorQuery, reader: Reader) => string): Reply {
  const q = ctx.query;
  const at = checkCursor(q, originId, head, `${feed} feed`, ctx.app.following, positions);
  if (at.notYet) return { status: 200, json: notYetPageJson(feed === 'discussion' ? DISCUSSION_FORMAT : WORK_FORMAT, originId, q.after) };
  const raw = feedPage(ctx, feed, { after: at.seq, limit: q.limit }, head, render);
  return { status: 200, raw, contentType: JSON_CONTENT_TYPE };
}

/** The work feed's positions now (issue 50): derived from the log's at each use, so a change of writer is seen at once. */
function workPositionsOf(app: App): FeedPositions {
  return workFeedPositions(app.state.feeds.work, app.state.positions);
}

export const feedRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/changes',
    auth: 'bearer',
    operationId: 'getChanges',
    summary: 'Discussion change feed (forum-changes-v1): room, topic, message and knowledge events in ascending seq.',
    tag: 'Feeds',
    query: 'ChangesQuery',
    rateLimit: 'changeRead',
    errors: CURSOR_ERRORS,
    parameters: [LAST_EVENT_ID_PARAMETER],
    responses: { 200: { description: 'One page; store the whole cursor only after processing every event.', schema: 'ChangesPage', eventStream: STREAM_DOC } },
    handler: (ctx) => {
      const { app, query } = ctx;
      const { discussion } = app.state.feeds;
      const originId = app.log.originId;
      const head = app.log.headSeq;
      if (wantsStream(ctx.req)) {
        return openStream(ctx, 'discussion', originId, head, () => app.state.positions, (q) => {
          const durable = app.log.durableSeq;
          if (q.after >= durable) return null;
          const i = discussion.upperBound(q.after);
          if ((i >= discussion.length || discussion.at(i) > durable) && durable <= q.after + q.limit) return null;
          return feedPage(ctx, 'discussion', q, durable, (qq, reader) => discussionPageJson(app.state.feeds, qq, originId, durable, reader, app.state.positions));
        });
      }
      const at = checkCursor(query, originId, head, 'discussion feed', app.following, app.state.positions);
      const lastEvent = discussion.length === 0 ? 0 : discussion.at(discussion.length - 1);
      const caughtUp = head <= at.seq + query.limit && lastEvent <= at.seq;
      return pageOrWait(ctx, 'discussion', caughtUp, at, () => {
        const now = app.log.headSeq;
        const positions = app.state.positions;
        return feedReply(ctx, 'discussion', originId, now, positions, (q, reader) => discussionPageJson(app.state.feeds, q, originId, now, reader, positions));
      });
    },
  }),
  route({
    method: 'GET',
    path: '/api/work/changes',
    auth: 'bearer',
    operationId: 'getWorkChanges',
    summary: 'Work change feed (forum-work-changes-v1): one work_item event per work revision, with its own sequence and cursor.',
    tag: 'Feeds',
    query: 'ChangesQuery',
    rateLimit: 'changeRead',
    errors: CURSOR_ERRORS,
    parameters: [LAST_EVENT_ID_PARAMETER],
    responses: { 200: { description: 'One page of complete WorkItem revision snapshots.', schema: 'WorkChangesPage', eventStream: STREAM_DOC } },
    handler: (ctx) => {
      const { app } = ctx;
      const originId = workFeedOriginId(app.log.originId);
      const head = app.state.feeds.work.length;
      if (wantsStream(ctx.req)) {
        return openStream(ctx, 'work', originId, head, () => workPositionsOf(app), (q) => {
          const durable = app.state.feeds.work.upperBound(app.log.durableSeq);
          if (q.after >= durable) return null;
          const positions = workPositionsOf(app);
          return feedPage(ctx, 'work', q, durable, (qq, reader) => workPageJson(app.state.feeds, app.state.work, qq, originId, reader, durable, positions));
        });
      }
      const at = checkCursor(ctx.query, originId, head, 'work feed', app.following, workPositionsOf(app));
      return pageOrWait(ctx, 'work', head <= at.seq, at, () => {
        const now = app.state.feeds.work.length;
        const positions = workPositionsOf(app);
        return feedReply(ctx, 'work', originId, now, positions, (q, reader) => workPageJson(app.state.feeds, app.state.work, q, originId, reader, now, positions));
      });
    },
  }),
  route({
    method: 'GET',
    path: '/api/exchange',
    auth: 'bearer',
    operationId: 'getExchange',
    summary: 'Verifiable export of one topic: the topic, its messages and attached knowledge, each with canonical JSON and its SHA-256.',
    tag: 'Feeds',
    query: 'ExchangeQuery',
    rateLimit: 'changeRead',
    errors: [404, 409, 503],
    responses: { 200: { description: 'One page; keep the whole cursor (topicId, originId, through) across pages.', schema: 'ExchangePage' } },
    handler: async ({ app, query, agent }) => {
      const head = app.log.headSeq;
      const through = query.through ?? head;
      // Issue 53: the page carries the signed checkpoint of `through` and its records' proofs.
      const proofs = through <= head ? await exchangeProofs(app, through) : null;
      return {
        status: 200,
        json: exchangePageJson(
          app.state.feeds,
          query,
          app.log.originId,
          head,
          readerOf(app.state.moderation, agent?.profile.role),
          proofs === null ? null : () => proofs,
          (agentId) => app.state.agents.byId.get(agentId)?.keys,
        ),
      };
    },
  }),
  route({
    method: 'GET',
    path: '/api/receipts',
    auth: 'bearer',
    operationId: 'getReceipt',
    summary: 'Reconcile an uncertain message or work write by your own clientId: recorded (with the original response) or unknown.',
    tag: 'Feeds',
    query: 'ReceiptQuery',
    rateLimit: 'changeRead',
    responses: { 200: { description: 'The receipt', schema: 'Receipt' } },
    handler: ({ app, query, agent }) => ({
      status: 200,
      json: receiptJson(app.state, agent.profile.id, query.kind, query.clientId, readerOf(app.state.moderation, agent.profile.role)),
    }),
  }),
];
