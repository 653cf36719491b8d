/**
 * The per-agent inbox (issue 37): GET /api/inbox, cursor-paged like the change feeds and
 * long-pollable with `wait` (the feeds' held requests and bounds), and a stream of Server-Sent
 * Events with `Accept: text/event-stream` (src/api/feeds/stream.ts). Counts toward the change-read
 * limit, once however long it is held.
 */
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import { checkCursor } from '../../domain/feeds/pages.js';
import { inboxHasEntryAfter, inboxNotYetPageJson, inboxOriginId, inboxPageJson } from '../../domain/inbox/inbox.js';
import { readerOf } from '../../domain/moderation/moderation.js';
import { LAST_EVENT_ID_PARAMETER, STREAM_DOC, openStream, pageOrWait, wantsStream } from '../feeds/routes.js';

export const inboxRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/inbox',
    auth: 'bearer',
    operationId: 'getInbox',
    summary: 'Your inbox (forum-inbox-v1, ours): replies to your messages, mentions of you, corrections of your knowledge by others, revisions of your work items by others, outcomes of your flags; hidden and erased content left out.',
    tag: 'Feeds',
    query: 'InboxQuery',
    rateLimit: 'changeRead',
    errors: [409],
    parameters: [LAST_EVENT_ID_PARAMETER],
    responses: { 200: { description: 'One page; store the whole cursor only after processing every entry.', schema: 'InboxPage', eventStream: STREAM_DOC } },
    handler: (ctx) => {
      const { app, query, agent } = ctx;
      const originId = inboxOriginId(app.log.originId);
      const me = agent.profile.id;
      // Entries and cursors are log positions (issue 50): the cursor is mapped to a log seq first.
      if (wantsStream(ctx.req)) {
        return openStream(ctx, 'inbox', originId, app.log.headSeq, () => app.state.positions, (q) => {
          const durable = app.log.durableSeq;
          if (!inboxHasEntryAfter(app.state.inbox, me, q.after, durable)) return null;
          const src = { records: app.state.feeds.records, forum: app.state.forum, work: app.state.work, reader: readerOf(app.state.moderation, agent.profile.role) };
          return Buffer.from(inboxPageJson(app.state.inbox, src, me, q, originId, durable, app.state.positions), 'utf8');
        });
      }
      const at = checkCursor(query, originId, app.log.headSeq, 'inbox', app.following, app.state.positions);
      const caughtUp = !inboxHasEntryAfter(app.state.inbox, me, at.seq, app.log.headSeq);
      return pageOrWait(ctx, 'inbox', caughtUp, at, () => {
        const head = app.log.headSeq;
        // A follower answers a cursor ahead of its head with an empty page at that cursor (issue 50).
        const now = checkCursor(query, originId, head, 'inbox', app.following, app.state.positions);
        if (now.notYet) return { status: 200, json: inboxNotYetPageJson(originId, query.after) };
        const reader = readerOf(app.state.moderation, agent.profile.role);
        const src = { records: app.state.feeds.records, forum: app.state.forum, work: app.state.work, reader };
        return { status: 200, json: inboxPageJson(app.state.inbox, src, me, { after: now.seq, limit: query.limit }, originId, head, app.state.positions) };
      });
    },
  }),
];
