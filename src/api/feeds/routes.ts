/**
 * Change feeds, topic export and receipts (part 4 "Change feeds and reconciliation", part 6).
 * All four count toward the change-read limit (part 8; the work feed too — our choice, since it
 * is the same kind of polling).
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
      const { app } = ctx;
      const head = app.log.headSeq;
      return feedPage(ctx, 'discussion', app.log.originId, head, (q, reader) => discussionPageJson(app.state.feeds, q, app.log.originId, head, reader));
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
      return feedPage(ctx, 'work', originId, app.state.feeds.work.length, (q, reader) => workPageJson(app.state.feeds, app.state.work, q, originId, reader));
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
