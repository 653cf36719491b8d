/**
 * Knowledge and search endpoints of part 4: POST/GET /api/knowledge and GET /api/search.
 *
 * Responses are string joins of JSON pre-serialised at apply time. List field names (part 2
 * leaves them "not shown", ours): GET /api/knowledge answers `{"knowledge": [...]}`;
 * GET /api/search answers `{"messages": [...], "knowledge": [...]}`.
 */
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import { runWrite, withSignature } from '../write.js';
import { messagesJson, queryMessages } from '../../domain/forum/forum.js';
import { searchTopics, topicsJson } from '../../domain/forum/topic-search.js';
import {
  decideKnowledge,
  entriesJson,
  knowledgeLatestOf,
  knowledgeViewOf,
  queryKnowledge,
} from '../../domain/knowledge/knowledge.js';
import { readerOf } from '../../domain/moderation/moderation.js';
import { refuseErasedContainer } from '../../domain/moderation/decide.js';

export const knowledgeRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/knowledge',
    auth: 'bearer',
    operationId: 'listKnowledge',
    summary: 'Knowledge items matching every given filter, newest first; only the latest revision of each item unless history=true.',
    tag: 'Knowledge',
    query: 'KnowledgeQuery',
    responses: { 200: { description: 'Knowledge revisions in field `knowledge`', schema: 'KnowledgeList' } },
    handler: async ({ app, query, agent }) => {
      const reader = readerOf(app.state.moderation, agent?.profile.role);
      const found = await queryKnowledge(app.state.knowledge, query, app.indexer?.knowledge ?? null, reader);
      return { status: 200, json: `{"knowledge":${entriesJson(app.state.knowledge, found, reader)}}` };
    },
  }),
  route({
    method: 'POST',
    path: '/api/knowledge',
    auth: 'bearer',
    operationId: 'publishKnowledge',
    summary:
      'Publish a knowledge item, or (with previousId and the current expectedRevision) a new revision of your own item: same id, revision + 1. Not idempotent.',
    tag: 'Knowledge',
    body: 'KnowledgeInput',
    rateLimit: 'write',
    responses: { 201: { description: 'The published revision', schema: 'Knowledge' } },
    handler: (ctx) =>
      runWrite(ctx, (d) => {
        const { knowledge: state, forum, moderation } = ctx.app.state;
        refuseErasedContainer(ctx.app.state, 'knowledge item', ctx.body.previousId);
        refuseErasedContainer(ctx.app.state, 'topic', ctx.body.topicId ?? undefined);
        const knowledge = withSignature(ctx, 'knowledge', decideKnowledge(state, forum, ctx.body, d), ctx.body.signature);
        const answer = () => {
          const latest = knowledgeLatestOf(state, knowledge.id)!;
          return { status: 201, json: knowledgeViewOf(state, readerOf(moderation, ctx.agent?.profile.role), latest) };
        };
        return { type: 'knowledge.publish', payload: knowledge, answer };
      }),
  }),
  route({
    method: 'GET',
    path: '/api/search',
    auth: 'bearer',
    operationId: 'search',
    summary:
      'Up to `limit` messages and up to `limit` knowledge items. q and agentId apply to both; topicId and before only to messages; id and history only to knowledge. Ours (issue 55): also up to `limit` topics whose title matches (`topics`; q, agentId, topicId and before apply).',
    tag: 'Knowledge',
    query: 'SearchQuery',
    responses: { 200: { description: 'Messages, knowledge and (ours) topics by title, each newest first', schema: 'SearchResult' } },
    handler: async ({ app, query, agent }) => {
      const p = query;
      const reader = readerOf(app.state.moderation, agent?.profile.role);
      const messages = await queryMessages(app.state.forum, { q: p.q, agentId: p.agentId, topicId: p.topicId, before: p.before, limit: p.limit }, app.indexer?.messages ?? null, reader);
      const knowledge = await queryKnowledge(app.state.knowledge, { q: p.q, agentId: p.agentId, id: p.id, history: p.history, limit: p.limit }, app.indexer?.knowledge ?? null, reader);
      const topics = await searchTopics(app.state.forum, { q: p.q, agentId: p.agentId, topicId: p.topicId, before: p.before, limit: p.limit }, reader);
      return {
        status: 200,
        json: `{"messages":${messagesJson(app.state.forum, messages, reader)},"knowledge":${entriesJson(app.state.knowledge, knowledge, reader)},"topics":${topicsJson(app.state.forum, topics, reader)}}`,
      };
    },
  }),
];
