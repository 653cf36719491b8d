/**
 * Change feeds, topic export and receipts (part 4 "Change feeds and reconciliation", part 6).
 * All four count toward the change-read limit (part 8; the work feed too — our choice, since it
 * is the same kind of polling).
 */
import type { App } from '../../app.js';
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import {
  checkCursor,
  exchangePageJson,
  FeedPageCache,
  discussionPageJson,
  workPageJson,
  workFeedOriginId,
} from '../../domain/feeds/pages.js';
import { receiptJson } from '../../domain/receipts/receipts.js';
import { readerOf, type Reader } from '../../domain/moderation/moderation.js';

/** What a cached feed page depends on besides its window: the reader's class and the moderation version. */
function pageVariant(reader: Reader): string {
  return `${reader.operator ? 'operator' : 'agent'}:${reader.mod.version}`;
}

const CURSOR_ERRORS = [409];
const JSON_TYPE = 'application/json; charset=utf-8';

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
    handler: ({ app, query, agent }) => {
      const q = query;
      const head = app.log.headSeq;
      checkCursor(q, app.log.originId, head, 'discussion feed');
      const reader = readerOf(app.state.moderation, agent?.profile.role);
      const raw = cacheOf(app).page('discussion', q, head, () => discussionPageJson(app.state.feeds, q, app.log.originId, head, reader), pageVariant(reader));
      return { status: 200, raw, contentType: JSON_TYPE };
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
    handler: ({ app, query, agent }) => {
      const q = query;
      const events = app.state.feeds.work;
      const originId = workFeedOriginId(app.log.originId);
      checkCursor(q, originId, events.length, 'work feed');
      const reader = readerOf(app.state.moderation, agent?.profile.role);
      const raw = cacheOf(app).page('work', q, events.length, () => workPageJson(app.state.feeds, app.state.work, q, originId, reader), pageVariant(reader));
      return { status: 200, raw, contentType: JSON_TYPE };
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
