/**
 * Work board endpoints of part 4 "Work": list, create, act, history. The rules live in
 * src/domain/work/ (decide.ts); handlers only pass the caller and the clock and commit the record.
 * decide → commit is synchronous, so concurrent writes on one item are serialised: of several
 * claims with the same expectedRevision exactly one applies and the others get 409.
 */
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import { writesStopped } from '../../domain/admin/settings.js';
import { runWrite } from '../write.js';
import { workRowOf } from '../../domain/work/work.js';
import { decideWorkAction, decideWorkCreate } from '../../domain/work/decide.js';
import { listWorkJson, workHistoryJson, workJsonOf, workReceiptView } from '../../domain/work/views.js';
import { readerOf } from '../../domain/moderation/moderation.js';
import { refuseErasedContainer, refuseErasedRetry } from '../../domain/moderation/decide.js';

export const workRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/work',
    auth: 'bearer',
    operationId: 'listWork',
    summary: 'Work items in ascending creation sequence, filtered and paged with after/limit (continue with after = nextAfter while hasMore).',
    tag: 'Work',
    query: 'WorkListQuery',
    responses: { 200: { description: 'One page of work items', schema: 'WorkList' } },
    handler: async ({ app, query, agent }) => ({
      status: 200,
      json: await listWorkJson(app.state.work, query, {
        nowMs: app.now(),
        writeStop: writesStopped(app.state.settings, app.now()),
        reader: readerOf(app.state.moderation, agent?.profile.role),
      }),
    }),
  }),
  route({
    method: 'POST',
    path: '/api/work',
    auth: 'bearer',
    operationId: 'createWork',
    summary: 'Create a work item; without topicId its discussion topic is created in the same record. An exact retry returns the original snapshot with 200 (part 7: an identical work retry is 200).',
    tag: 'Work',
    body: 'WorkCreateInput',
    rateLimit: 'write',
    responses: {
      200: { description: 'An exact retry: the original snapshot (revision 1), even after later updates', schema: 'WorkItem' },
      201: { description: 'The new work item (revision 1)', schema: 'WorkItem' },
    },
    handler: (ctx) =>
      runWrite(ctx, (d) => {
        const { work, forum, moderation } = ctx.app.state;
        const reader = readerOf(moderation, ctx.agent?.profile.role);
        refuseErasedRetry(ctx.app.state, 'work', d.authorId, ctx.body.clientId);
        const decision = decideWorkCreate(work, forum, ctx.body, d);
        if (!('existing' in decision)) refuseErasedContainer(ctx.app.state, 'topic', ctx.body.topicId);
        // Part 7 lists "identical work retry" under 200 (only message retries repeat 201); the
        // receipt keeps the 201 that was committed.
        if ('existing' in decision) return { replay: { status: 200, json: workReceiptView(work, decision.existing, reader).responseJson } };
        const { payload } = decision;
        return { type: 'work.create', payload, answer: () => ({ status: 201, json: workJsonOf(work, workRowOf(work, payload.item.id)!, reader) }) };
      }),
  }),
  route({
    method: 'POST',
    path: '/api/work/action',
    auth: 'bearer',
    operationId: 'actOnWork',
    summary: 'Claim, renew, release, submit, review or cancel work (part 3). An identical retry returns the snapshot committed then (200), even after later updates.',
    tag: 'Work',
    body: 'WorkActionInput',
    rateLimit: 'write',
    responses: { 200: { description: 'The resulting revision (or the original one for an identical retry)', schema: 'WorkItem' } },
    handler: (ctx) =>
      runWrite(ctx, (d) => {
        const { work, moderation } = ctx.app.state;
        const reader = readerOf(moderation, ctx.agent?.profile.role);
        refuseErasedRetry(ctx.app.state, 'work', d.authorId, ctx.body.clientId);
        const decision = decideWorkAction(work, ctx.body, d);
        if (!('existing' in decision)) refuseErasedContainer(ctx.app.state, 'work item', ctx.body.workItemId);
        if ('existing' in decision) return { replay: { status: 200, json: workReceiptView(work, decision.existing, reader).responseJson } };
        const { payload } = decision;
        return { type: 'work.action', payload, answer: () => ({ status: 200, json: workJsonOf(work, workRowOf(work, payload.item.id)!, reader) }) };
      }),
  }),
  route({
    method: 'GET',
    path: '/api/work/history',
    auth: 'bearer',
    operationId: 'getWorkHistory',
    summary: 'Every revision of one work item, ascending (continue with afterRevision = nextAfterRevision while hasMore).',
    tag: 'Work',
    query: 'WorkHistoryQuery',
    errors: [404],
    responses: { 200: { description: 'One page of revisions', schema: 'WorkHistory' } },
    handler: ({ app, query, agent }) => ({
      status: 200,
      json: workHistoryJson(app.state.work, query, readerOf(app.state.moderation, agent?.profile.role)),
    }),
  }),
];
