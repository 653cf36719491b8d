/**
 * Routes of the A2A 1.0 binding (part 4 "A2A binding", part 1 static paths): the agent cards,
 * POST /a2a/message:send, GET /a2a/tasks (ListTasks: always the empty page, since this agent
 * creates no tasks; A2A 1.0.1 §3.1 lists it among the operations every agent offers), and a
 * catch-all that answers every other A2A HTTP+JSON operation (A2A 1.0.1 §11.3) with the error A2A
 * prescribes for an agent without tasks, streaming, push notifications or an extended card.
 * Every /a2a/* error is a google.rpc.Status (./errors.ts).
 *
 * Every A2A operation checks `A2A-Version` first (A2A 1.0.1 §3.6.2: MUST reject unsupported
 * versions), as message:send does: header, or the query parameter when the header is absent; a
 * missing version means 0.3 and is refused with 400 VersionNotSupported (dispatch.ts `checkVersion`).
 * Authentication comes before it (the pipeline authenticates bearer routes first).
 */
import { A2A_BASE_PATH, A2A_LIST_TASKS_PAGE_SIZE_DEFAULT, A2A_MEDIA_TYPE, A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER } from '../../constants.js';
import { type ServiceError, fail, notFound } from '../../errors.js';
import { methodNotAllowed } from '../../http/errors.js';
import type { ParameterDoc, Reply, RequestContext, Route } from '../../http/router.js';
import { serveAgentCard } from './card.js';
import { A2A_ACTIONS, VERSION_PATTERN, checkVersion, sendMessage } from './dispatch.js';
import { A2A_ERROR_FORMAT, pushNotificationNotSupported, taskNotFound, unsupportedOperation } from './errors.js';
import { a2aContentType } from './media.js';

/** `reply` sent as the media type the client prefers (./media.ts), with `Vary: Accept`. */
function negotiated(ctx: RequestContext, reply: Reply): Reply {
  return { ...reply, contentType: a2aContentType(ctx.req), headers: { ...reply.headers, Vary: 'Accept' } };
}

const NO_STREAMING = 'streaming is not supported (capabilities.streaming is false); use POST /a2a/message:send and poll the change feeds';

/** An A2A HTTP+JSON operation other than SendMessage (A2A 1.0.1 §11.3), and the error it answers. */
interface OtherOperation {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path below /a2a, with `{param}` segments. */
  template: string;
  /** The A2A operation name (operationId suffix in /openapi.json). */
  name: string;
  /** The HTTP status of its answer (for OpenAPI). */
  status: 400 | 404;
  answer: (params: string[]) => ServiceError;
  summary: string;
}

const streaming = (name: string) => () => unsupportedOperation(`${name}: ${NO_STREAMING}`);
const pushConfigs = () => pushNotificationNotSupported();
const OTHER_OPERATIONS: readonly OtherOperation[] = [
  { method: 'POST', template: '/message:stream', name: 'SendStreamingMessage', status: 400, answer: streaming('SendStreamingMessage'), summary: 'Streaming: UnsupportedOperation (capabilities.streaming is false).' },
  { method: 'GET', template: '/tasks/{id}', name: 'GetTask', status: 404, answer: ([id]) => taskNotFound(id!), summary: 'TaskNotFound for every id: work items are application records, not A2A tasks.' },
  { method: 'POST', template: '/tasks/{id}:cancel', name: 'CancelTask', status: 404, answer: ([id]) => taskNotFound(id!), summary: 'TaskNotFound for every id.' },
  { method: 'GET', template: '/tasks/{id}:subscribe', name: 'SubscribeToTask', status: 400, answer: streaming('SubscribeToTask'), summary: 'Streaming: UnsupportedOperation.' },
  { method: 'POST', template: '/tasks/{id}:subscribe', name: 'SubscribeToTaskByPost', status: 400, answer: streaming('SubscribeToTask'), summary: 'Streaming (the form older clients send): UnsupportedOperation.' },
  { method: 'POST', template: '/tasks/{id}/pushNotificationConfigs', name: 'CreateTaskPushNotificationConfig', status: 400, answer: pushConfigs, summary: 'PushNotificationNotSupported (capabilities.pushNotifications is false).' },
  { method: 'GET', template: '/tasks/{id}/pushNotificationConfigs', name: 'ListTaskPushNotificationConfigs', status: 400, answer: pushConfigs, summary: 'PushNotificationNotSupported.' },
  { method: 'GET', template: '/tasks/{id}/pushNotificationConfigs/{configId}', name: 'GetTaskPushNotificationConfig', status: 400, answer: pushConfigs, summary: 'PushNotificationNotSupported.' },
  { method: 'DELETE', template: '/tasks/{id}/pushNotificationConfigs/{configId}', name: 'DeleteTaskPushNotificationConfig', status: 400, answer: pushConfigs, summary: 'PushNotificationNotSupported.' },
  {
    method: 'GET',
    template: '/extendedAgentCard',
    name: 'GetExtendedAgentCard',
    status: 400,
    answer: () => unsupportedOperation('GetExtendedAgentCard: there is no extended agent card (capabilities.extendedAgentCard is false); the public card at /.well-known/agent-card.json is complete'),
    summary: 'UnsupportedOperation: the public agent card is complete (capabilities.extendedAgentCard is false).',
  },
];

/** `/tasks/{id}:cancel` → /^\/tasks\/([^/:]+):cancel$/ (a parameter is one segment, up to a `:` verb). */
function templateRegExp(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '([^/:]+)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

const MATCHERS = OTHER_OPERATIONS.map((op) => ({ op, re: templateRegExp(op.template) }));

/**
 * A path parameter percent-decoded. Throws 400 BAD_TARGET (rendered as google.rpc.Status) when
 * its escapes are malformed (`%ZZ`, a truncated `%E0%A4%A`) or not UTF-8 (`%FF`), instead of the
 * URIError decodeURIComponent would throw.
 */
function decodeParam(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw fail('BAD_TARGET', `path parameter ${JSON.stringify(raw.slice(0, 120))} holds percent-escapes that are malformed or not UTF-8; percent-encode the id as UTF-8`);
  }
}

/**
 * Answers any other request under /a2a/: for a known operation, its A2A-Version check and then
 * its A2A error; 405 with Allow for a known path with another method, or 404.
 */
function otherOperation(ctx: RequestContext): never {
  const sub = ctx.url.pathname.slice(A2A_BASE_PATH.length);
  const method = ctx.req.method === 'HEAD' ? 'GET' : ctx.req.method ?? 'GET';
  // The exact routes take POST message:send and GET tasks; every other method on their paths ends up here.
  if (sub === '/message:send') throw methodNotAllowed(['POST']);
  if (sub === '/tasks') throw methodNotAllowed(['GET']);
  const allowed: string[] = [];
  for (const { op, re } of MATCHERS) {
    const m = re.exec(sub);
    if (!m) continue;
    if (op.method === method) {
      checkVersion(ctx.req, ctx.url);
      throw op.answer(m.slice(1).map(decodeParam));
    }
    allowed.push(op.method);
  }
  if (allowed.length > 0) throw methodNotAllowed(allowed);
  throw notFound(`no A2A operation at ${ctx.url.pathname}: this agent offers POST ${A2A_BASE_PATH}/message:send (see /.well-known/agent-card.json)`);
}

/** The A2A-Version header as documented on the exact A2A routes (message:send, ListTasks). */
const VERSION_HEADER_DOC: ParameterDoc = {
  name: A2A_VERSION_HEADER,
  in: 'header',
  required: false,
  description:
    `The A2A version of the request: ${A2A_PROTOCOL_VERSION} (a ${A2A_PROTOCOL_VERSION}.x patch is accepted). Required unless the query parameter ${A2A_VERSION_HEADER} is sent: ` +
    `without either the request counts as A2A 0.3 and is refused with 400 VersionNotSupported. ` +
    `Clients that cannot set headers may send the query parameter ${A2A_VERSION_HEADER}=${A2A_PROTOCOL_VERSION} instead (used only when the header is absent).`,
  schema: { type: 'string', pattern: VERSION_PATTERN },
  example: A2A_PROTOCOL_VERSION,
};

/**
 * GET /a2a/tasks (A2A ListTasks): after authentication, the version check (the route's
 * checkHead, before any other check) and the query's validation (schemas/A2AListTasksQuery.json,
 * by the pipeline), the empty page `{"tasks": [], "nextPageToken": "", "pageSize": n,
 * "totalSize": 0}` with n the request's pageSize or A2A_LIST_TASKS_PAGE_SIZE_DEFAULT.
 */
function listTasks(ctx: RequestContext): Reply {
  const pageSize = typeof ctx.query.pageSize === 'number' ? ctx.query.pageSize : A2A_LIST_TASKS_PAGE_SIZE_DEFAULT;
  return negotiated(ctx, { status: 200, body: { tasks: [], nextPageToken: '', pageSize, totalSize: 0 } });
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
      'A2A 1.0 SendMessage (HTTP+JSON): one data part {action, input}; the action runs its REST endpoint with the same validation, limits and records and answers synchronously. A2A-Version: 1.0 required, as header or query parameter.',
    tag: 'A2A',
    body: 'A2ASendMessageRequest',
    // checkVersion (./dispatch.ts) reads the header, or the query parameter when the header is absent or blank.
    parameters: [
      VERSION_HEADER_DOC,
      {
        name: A2A_VERSION_HEADER,
        in: 'query',
        required: false,
        description:
          `The A2A version, for clients that cannot set the ${A2A_VERSION_HEADER} header: ${A2A_PROTOCOL_VERSION} (a ${A2A_PROTOCOL_VERSION}.x patch is accepted). ` +
          `Used only when the header is absent or blank (the header wins); one of the two is required, else 400 VersionNotSupported.`,
        schema: { type: 'string', pattern: VERSION_PATTERN },
        // No example: renderers pre-fill examples, and "Try it out" should send the header alone.
      },
    ],
    contentTypes: ['application/json', A2A_MEDIA_TYPE],
    dispatch: true,
    checkHead: checkVersion,
    dispatches: A2A_ACTIONS.map((a) => ({ name: a.action, method: a.method, path: a.path })),
    errorFormat: A2A_ERROR_FORMAT,
    errors: [404, 409, 423, 507],
    responses: { 200: { description: "A message whose data part carries the action, the REST status and the REST endpoint's result", schema: 'A2ASendMessageResponse', alsoAs: [A2A_MEDIA_TYPE] } },
    handler: async (ctx) => negotiated(ctx, await sendMessage(ctx)),
  },
  {
    method: 'GET',
    path: `${A2A_BASE_PATH}/tasks`,
    auth: 'bearer',
    operationId: 'a2aListTasks',
    summary: 'A2A 1.0 ListTasks: always the empty page (this agent answers synchronously and creates no A2A tasks). A2A-Version 1.0 required, as header or query parameter.',
    tag: 'A2A',
    query: 'A2AListTasksQuery',
    checkHead: checkVersion,
    parameters: [VERSION_HEADER_DOC],
    errorFormat: A2A_ERROR_FORMAT,
    responses: { 200: { description: 'The empty page', schema: 'A2AListTasksResponse', alsoAs: [A2A_MEDIA_TYPE] } },
    handler: listTasks,
  },
  {
    method: '*',
    path: `${A2A_BASE_PATH}/*`,
    auth: 'bearer',
    operationId: 'a2aOtherOperations',
    summary:
      'Every other A2A operation, after the A2A-Version check (400 VersionNotSupported): tasks (TaskNotFound or UnsupportedOperation), streaming (UnsupportedOperation), push notification configs (PushNotificationNotSupported), extendedAgentCard (UnsupportedOperation).',
    tag: 'A2A',
    errorFormat: A2A_ERROR_FORMAT,
    responses: {},
    operations: OTHER_OPERATIONS.map((op) => ({
      method: op.method,
      path: A2A_BASE_PATH + op.template,
      operationIdSuffix: op.name,
      summary: `${op.name}: ${op.summary}`,
      errors: [op.status],
    })),
    handler: otherOperation,
  },
];
