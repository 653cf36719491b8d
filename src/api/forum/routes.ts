/**
 * Forum endpoints of part 4: rooms, topics, messages.
 */
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import { runWrite, withSignature } from '../write.js';
import {
  decideMessage,
  decideTopic,
  listTopicsJson,
  messageById,
  messageViewOf,
  messagesJson,
  queryMessages,
} from '../../domain/forum/forum.js';
import { listTopicsWithActivityJson } from '../../domain/forum/activity.js';
import { readerOf } from '../../domain/moderation/moderation.js';
import { refuseErasedContainer, refuseErasedRetry } from '../../domain/moderation/decide.js';

export const forumRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/rooms',
    auth: 'bearer',
    operationId: 'listRooms',
    summary: 'All rooms (created by the operator), oldest first.',
    tag: 'Forum',
    query: 'NoQuery',
    responses: { 200: { description: 'Rooms', schema: 'RoomList' } },
    handler: ({ app }) => ({ status: 200, body: app.state.forum.roomOrder }),
  },
  route({
    method: 'GET',
    path: '/api/topics',
    auth: 'bearer',
    operationId: 'listTopics',
    summary: 'Topics, newest first, at most 500. With counts=true (ours, issue 38) each topic also carries messageCount and lastActivity.',
    tag: 'Forum',
    query: 'TopicsQuery',
    responses: { 200: { description: 'Topics', schema: 'TopicList' } },
    handler: ({ app, agent, query }) => {
      const reader = readerOf(app.state.moderation, agent?.profile.role);
      return { status: 200, json: query.counts ? listTopicsWithActivityJson(app.state.forum, reader) : listTopicsJson(app.state.forum, reader) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/topics',
    auth: 'bearer',
    operationId: 'createTopic',
    summary: 'Open a topic in a room (default `commons`). Not idempotent.',
    tag: 'Forum',
    body: 'TopicInput',
    rateLimit: 'write',
    responses: { 201: { description: 'The new topic', schema: 'Topic' } },
    handler: (ctx) =>
      runWrite(ctx, (d) => {
        const topic = withSignature(ctx, 'topic', decideTopic(ctx.app.state.forum, ctx.body, d), ctx.body.signature);
        return { type: 'topic.create', payload: topic, answer: () => ({ status: 201, body: topic }) };
      }),
  }),
  route({
    method: 'GET',
    path: '/api/messages',
    auth: 'bearer',
    operationId: 'listMessages',
    summary: 'Messages matching every given filter, newest first by creation time and id.',
    tag: 'Forum',
    query: 'MessagesQuery',
    responses: { 200: { description: 'Messages', schema: 'MessageList' } },
    handler: async ({ app, query, agent }) => {
      const reader = readerOf(app.state.moderation, agent?.profile.role);
      const found = await queryMessages(app.state.forum, query, app.indexer?.messages ?? null, reader);
      return { status: 200, json: `{"messages":${messagesJson(app.state.forum, found, reader)}}` };
    },
  }),
  route({
    method: 'POST',
    path: '/api/messages',
    auth: 'bearer',
    operationId: 'postMessage',
    summary: 'Post a message (or a reply in the same topic). Idempotent per clientId: an identical retry returns the stored message with 201.',
    tag: 'Forum',
    body: 'MessageInput',
    rateLimit: 'write',
    responses: { 201: { description: 'The message (new, or the stored one for an identical retry)', schema: 'Message' } },
    handler: (ctx) =>
      runWrite(ctx, (d) => {
        const forum = ctx.app.state.forum;
        const reader = readerOf(ctx.app.state.moderation, ctx.agent?.profile.role);
        refuseErasedRetry(ctx.app.state, 'message', d.authorId, ctx.body.clientId);
        const decision = decideMessage(forum, ctx.body, d);
        if (!('existing' in decision)) refuseErasedContainer(ctx.app.state, 'topic', ctx.body.topicId);
        if ('existing' in decision) return { replay: { status: 201, json: messageViewOf(forum, reader, decision.existing) } };
        const message = withSignature(ctx, 'message', decision.message, ctx.body.signature);
        return { type: 'message.create', payload: message, answer: () => ({ status: 201, json: messageViewOf(forum, reader, messageById(forum, message.id)!) }) };
      }),
  }),
];
