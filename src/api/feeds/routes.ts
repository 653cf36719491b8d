/**
 * Change feeds, topic export and receipts (part 4 "Change feeds and reconciliation", part 6).
 * All four count toward the change-read limit (part 8; the work feed too — our choice, since it
 * is the same kind of polling); a long-polled feed request (`wait`, issue 37) counts once however
 * long it is held.
 */
import type { App } from '../../app.js';
import { JSON_CONTENT_TYPE, type Reply, type RequestContext, type Route } from '../../http/router.js';
import { route } from '../route.js';
import {
  checkCursor,
  exchangePageJson,
  FeedPageCache,
  discussionPageJson,
  workPageJson,
  workFeedOriginId,
  type CursorQuery,
} from '../../domain/feeds/pages.js';
import { receiptJson } from '../../domain/receipts/receipts.js';
import { readerOf, type Reader } from '../../domain/moderation/moderation.js';
import { FeedWaiters, type FeedName } from './long-poll.js';
import { inboxLast } from '../../domain/inbox/inbox.js';

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
    app.afterGroupCommit.add(() => waiters.notify());
    waitersByApp.set(app, (w = waiters));
  }
  return w;
}

/**
 * Answers every held feed request of `app` now, with the page it would get now (shutdown,
 * issue 37: the server answers its waiters before it stops accepting).
 */
export function releaseFeedWaiters(app: App): void {
  waitersByApp.get(app)?.releaseAll();
}

/** How many long-polled feed and inbox requests `app` holds now (issue 37; the metrics gauge). */
export function heldFeedRequests(app: App): number {
  return waitersByApp.get(app)?.size ?? 0;
}

/**
 * A feed request with `wait` (issue 37): when its page would be caught up (`caughtUp`: no event
 * past the cursor and nothing more to scan), the cursor is checked (400/409 at once) and the
 * request is held until the feed has an event past the cursor or the wait ends; otherwise, or
 * when the bounds on held requests are reached, it is answered at once. `render` builds the page.
 */
export function pageOrWait(ctx: RequestContext & { query: CursorQuery & { wait?: number } }, feed: FeedName, caughtUp: boolean, originId: string, head: number, render: () => Reply): Reply | Promise<Reply> {
  const { wait, after } = ctx.query;
  if (wait === undefined || !caughtUp) return render();
  checkCursor(ctx.query, originId, head, `${feed} feed`);
  return waitersOf(ctx.app).hold(feed, after, wait, ctx.agent!.profile.id, ctx.req.socket, render) ?? render();
}

/**
 * One page of the discussion or work feed for the caller: checks the cursor against the feed's
 * `originId` and `head` (409 CURSOR_* when it does not belong, part 4), and answers the page from
 * the page cache, rendering it with `render` for the caller's reader class on a miss.
 */
function feedPage(ctx: Pick<RequestContext, 'app' | 'agent'> & { query: CursorQuery }, feed: 'discussion' | 'work', originId: string, head: number, render: (q: CursorQuery, reader: Reader) => string): Reply {
  const q = ctx.query;
  checkCursor(q, originId, head, `${feed} feed`);
  const reader = readerOf(ctx.app.state.moderation, ctx.agent?.profile.role);
  const raw = cacheOf(ctx.app).page(feed, q, head, () => render(q, reader), pageVariant(reader));
  return { status: 200, raw, contentType: JSON_CONTENT_TYPE };
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
    responses: { 200: { description: 'One page; store the whole cursor only after processing every event.', schema: 'ChangesPage' } },
    handler: (ctx) => {
      const { app, query } = ctx;
      const { discussion } = app.state.feeds;
      const head = app.log.headSeq;
      const lastEvent = discussion.length === 0 ? 0 : discussion.at(discussion.length - 1);
      const caughtUp = head <= query.after + query.limit && lastEvent <= query.after;
      return pageOrWait(ctx, 'discussion', caughtUp, app.log.originId, head, () => {
        const now = app.log.headSeq;
        return feedPage(ctx, 'discussion', app.log.originId, now, (q, reader) => discussionPageJson(app.state.feeds, q, app.log.originId, now, reader));
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
    responses: { 200: { description: 'One page of complete WorkItem revision snapshots.', schema: 'WorkChangesPage' } },
    handler: (ctx) => {
      const { app } = ctx;
      const originId = workFeedOriginId(app.log.originId);
      const head = app.state.feeds.work.length;
      return pageOrWait(ctx, 'work', head <= ctx.query.after, originId, head, () =>
        feedPage(ctx, 'work', originId, app.state.feeds.work.length, (q, reader) => workPageJson(app.state.feeds, app.state.work, q, originId, reader)),
      );
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
    errors: [404, 409],
    responses: { 200: { description: 'One page; keep the whole cursor (topicId, originId, through) across pages.', schema: 'ExchangePage' } },
    handler: ({ app, query, agent }) => ({
      status: 200,
      json: exchangePageJson(app.state.feeds, query, app.log.originId, app.log.headSeq, readerOf(app.state.moderation, agent?.profile.role)),
    }),
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
