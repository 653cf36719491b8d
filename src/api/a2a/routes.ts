/**
 * Routes of the A2A 1.0 binding (part 4 "A2A binding", part 1 static paths): the agent cards,
 * POST /a2a/message:send, and a catch-all that answers every other A2A HTTP+JSON operation
 * (A2A 1.0.1 §11.3) with the error A2A prescribes for an agent without tasks, streaming, push
 * notifications or an extended card. Every /a2a/* error is a google.rpc.Status (./errors.ts).
 */
import { A2A_BASE_PATH } from '../../constants.js';
import { HttpError, methodNotAllowed, notFound } from '../../http/errors.js';
import type { RequestContext, Route } from '../../http/router.js';
import { serveAgentCard } from './card.js';
import { sendMessage } from './dispatch.js';
import { A2A_ERROR_FORMAT, pushNotificationNotSupported, taskNotFound, unsupportedOperation } from './errors.js';

const NO_TASKS = 'this agent answers every message synchronously and creates no A2A tasks (work items are application records: use the work.* actions of POST /a2a/message:send)';
const NO_STREAMING = 'streaming is not supported (capabilities.streaming is false); use POST /a2a/message:send and poll the change feeds';

/** The A2A operations other than SendMessage, by path below /a2a, and the error each answers. */
const OTHER_OPERATIONS: ReadonlyArray<{ pattern: RegExp; methods: string[]; answer: (m: RegExpExecArray) => HttpError }> = [
  { pattern: /^\/message:stream$/, methods: ['POST'], answer: () => unsupportedOperation(`SendStreamingMessage: ${NO_STREAMING}`) },
  { pattern: /^\/tasks$/, methods: ['GET'], answer: () => unsupportedOperation(`ListTasks: ${NO_TASKS}`) },
  { pattern: /^\/tasks\/([^/:]+)$/, methods: ['GET'], answer: (m) => taskNotFound(decodeURIComponent(m[1]!)) },
  { pattern: /^\/tasks\/([^/:]+):cancel$/, methods: ['POST'], answer: (m) => taskNotFound(decodeURIComponent(m[1]!)) },
  { pattern: /^\/tasks\/([^/:]+):subscribe$/, methods: ['GET', 'POST'], answer: () => unsupportedOperation(`SubscribeToTask: ${NO_STREAMING}`) },
  { pattern: /^\/tasks\/[^/:]+\/pushNotificationConfigs$/, methods: ['GET', 'POST'], answer: () => pushNotificationNotSupported() },
  { pattern: /^\/tasks\/[^/:]+\/pushNotificationConfigs\/[^/]+$/, methods: ['GET', 'DELETE'], answer: () => pushNotificationNotSupported() },
  {
    pattern: /^\/extendedAgentCard$/,
    methods: ['GET'],
    answer: () => unsupportedOperation('GetExtendedAgentCard: there is no extended agent card (capabilities.extendedAgentCard is false); the public card at /.well-known/agent-card.json is complete'),
  },
  // Reached only with another method than POST (the exact route takes POST).
  { pattern: /^\/message:send$/, methods: ['POST'], answer: () => methodNotAllowed(['POST']) },
];

/** Answers any other request under /a2a/: the operation's A2A error, 405 with Allow, or 404. */
function otherOperation(ctx: RequestContext): never {
  const sub = ctx.url.pathname.slice(A2A_BASE_PATH.length);
  const method = ctx.req.method === 'HEAD' ? 'GET' : ctx.req.method ?? 'GET';
  for (const op of OTHER_OPERATIONS) {
    const m = op.pattern.exec(sub);
    if (!m) continue;
    if (!op.methods.includes(method)) throw methodNotAllowed(op.methods);
    throw op.answer(m);
  }
  throw notFound(`no A2A operation at ${ctx.url.pathname}: this agent offers POST ${A2A_BASE_PATH}/message:send (see /.well-known/agent-card.json)`);
}

export const a2aRoutes: Route[] = [
  {
    method: 'GET',
    path: '/.well-known/agent-card.json',
    auth: 'public',
    operationId: 'getAgentCard',
    summary: 'A2A 1.0 agent card: the HTTP+JSON interface at /a2a, bearer security, one skill per action. Cacheable (ETag, 304).',
    tag: 'A2A',
    responses: { 200: { description: 'The agent card', schema: 'AgentCard', headers: ['ETag', 'Cache-Control'] }, 304: { description: 'Not modified (If-None-Match matched the ETag)' } },
    handler: serveAgentCard,
  },
  {
    method: 'GET',
    path: '/.well-known/agent.json',
    auth: 'public',
    operationId: 'getAgentCardLegacyPath',
    summary: 'The same agent card at the path older A2A clients request.',
    tag: 'A2A',
    responses: { 200: { description: 'The agent card', schema: 'AgentCard', headers: ['ETag', 'Cache-Control'] }, 304: { description: 'Not modified (If-None-Match matched the ETag)' } },
    handler: serveAgentCard,
  },
  {
    method: 'POST',
    path: `${A2A_BASE_PATH}/message:send`,
    auth: 'bearer',
    operationId: 'a2aSendMessage',
    summary:
      'A2A 1.0 SendMessage (HTTP+JSON): one data part {action, input}; the action runs its REST endpoint with the same validation, limits and records and answers synchronously. Header A2A-Version: 1.0 required.',
    tag: 'A2A',
    body: 'A2ASendMessageRequest',
    contentTypes: ['application/json', 'application/a2a+json'],
    dispatch: true,
    errorFormat: A2A_ERROR_FORMAT,
    errors: [404, 409, 423, 507],
    responses: { 200: { description: "A message whose data part carries the action, the REST status and the REST endpoint's result", schema: 'A2ASendMessageResponse' } },
    handler: sendMessage,
  },
  {
    method: '*',
    path: `${A2A_BASE_PATH}/*`,
    auth: 'bearer',
    operationId: 'a2aOtherOperations',
    summary:
      'Every other A2A operation: tasks (TaskNotFound or UnsupportedOperation), streaming (UnsupportedOperation), push notification configs (PushNotificationNotSupported), extendedAgentCard (UnsupportedOperation).',
    tag: 'A2A',
    errorFormat: A2A_ERROR_FORMAT,
    responses: {},
    handler: otherOperation,
  },
];
