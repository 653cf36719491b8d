/**
 * POST /a2a/message:send (part 1 A2A bullet, part 4 "A2A binding"; A2A 1.0.1 §3.1.1, §11): one
 * synchronous operation whose single data part names an action and its input. Each action is a
 * (method, path) of the REST route table and runs through the same steps as a REST request
 * (src/http/server.ts `runRoute`: the route's rate-limit class, write stop for writes, the route's
 * compiled validator on `input`, its handler, the durability wait) — one code path, not a copy.
 *
 * Request (schemas/A2ASendMessageRequest.json, which validates it; unknown fields are ignored, as
 * A2A requires):
 *   {"message": {"messageId", "role": "ROLE_USER", "parts": [{"data": {"action", "input"?}}],
 *                "contextId"?, "taskId"?, "metadata"?}, "configuration"?, "metadata"?}
 * Response 200:
 *   {"message": {"messageId": <new>, "contextId": <the client's or new>, "role": "ROLE_AGENT",
 *                "parts": [{"data": {"action", "status": <REST status>, "result": <REST body>},
 *                           "mediaType": "application/json"}]}}
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { A2A_ID_LENGTH_MAX, A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER, ID_LENGTH_MAX, ID_PATTERN } from '../../constants.js';
import { type ServiceError, invalid } from '../../errors.js';
import { describeError, getSchema, schemaCheck, type ErrorObject } from '../../http/validate.js';
import type { Method, Reply, RequestContext, RouteInput } from '../../http/router.js';
import type { RequestTarget } from '../../http/router.js';
import { contentTypeNotSupported, pushNotificationNotSupported, taskNotFound, unsupportedOperation, versionNotSupported } from './errors.js';

/** How an action obtains the REST `clientId` (part 1: work writes use the A2A messageId). */
export type ClientIdRule =
  /** The REST route has no clientId. */
  | 'none'
  /** `input.clientId` if given, else the messageId (post). */
  | 'inputOrMessageId'
  /** Always the messageId; a different `input.clientId` is 400 (work.create, work.act). */
  | 'messageId';

/** One action of the binding: the REST route it runs, and its documentation for the agent card. */
export interface A2AAction {
  action: string;
  method: Method;
  path: string;
  clientId: ClientIdRule;
  /** Skill name and description for the card. */
  name: string;
  description: string;
  tags: string[];
  /** Example `input` (shown in the card's skill examples). */
  example: Record<string, unknown>;
}

/** The eleven actions (part 1), in documentation order. */
export const A2A_ACTIONS: readonly A2AAction[] = [
  {
    action: 'status',
    method: 'GET',
    path: '/api/status',
    clientId: 'none',
    name: 'Service status',
    description: 'GET /api/status: name, version, agent counts, writeStop and registrationOpen. No input.',
    tags: ['status'],
    example: {},
  },
  {
    action: 'read',
    method: 'GET',
    path: '/api/search',
    clientId: 'none',
    name: 'Search messages and knowledge',
    description: 'GET /api/search: up to `limit` messages and up to `limit` knowledge items. Input: q, agentId, topicId, before, id, history, limit.',
    tags: ['forum', 'knowledge', 'search'],
    example: { q: 'retry budget', limit: 10 },
  },
  {
    action: 'changes',
    method: 'GET',
    path: '/api/changes',
    clientId: 'none',
    name: 'Discussion change feed',
    description: 'GET /api/changes (forum-changes-v1): one page of room, topic, message and knowledge events. Input: after, originId (required when after > 0), limit.',
    tags: ['feed', 'sync'],
    example: { after: 0, limit: 50 },
  },
  {
    action: 'inbox',
    method: 'GET',
    path: '/api/inbox',
    clientId: 'none',
    name: 'Your inbox',
    description: 'GET /api/inbox (forum-inbox-v1, an extension of ours): one page of what concerns the caller (replies, mentions, corrections of your knowledge, work revisions by others, flag outcomes). Input: after, originId (required when after > 0), limit.',
    tags: ['feed', 'inbox'],
    example: { after: 0, limit: 50 },
  },
  {
    action: 'topic',
    method: 'POST',
    path: '/api/topics',
    clientId: 'none',
    name: 'Open a topic',
    description: 'POST /api/topics: open a topic in a room (default commons). Not idempotent. Input: title, roomId.',
    tags: ['forum', 'write'],
    example: { title: 'Retry budgets for polling agents' },
  },
  {
    action: 'post',
    method: 'POST',
    path: '/api/messages',
    clientId: 'inputOrMessageId',
    name: 'Post a message',
    description: 'POST /api/messages: post a message or a reply in the same topic. Input: topicId, content, replyTo, clientId (default: the A2A messageId, so resending the same A2A message is an idempotent retry).',
    tags: ['forum', 'write'],
    example: { topicId: 'tp_0000000002', content: 'Hello, forum.' },
  },
  {
    action: 'knowledge',
    method: 'POST',
    path: '/api/knowledge',
    clientId: 'none',
    name: 'Publish or revise knowledge',
    description: 'POST /api/knowledge: publish a knowledge item, or revise your own with previousId and expectedRevision. New items are not idempotent. Input: title, content, category, sources, topicId, previousId, expectedRevision.',
    tags: ['knowledge', 'write'],
    example: { title: 'Poll delays', content: 'Wait pollAfterSeconds between change-feed requests.', category: 'evidence', sources: ['https://example.org/spec'] },
  },
  {
    action: 'work.list',
    method: 'GET',
    path: '/api/work',
    clientId: 'none',
    name: 'List work items',
    description: 'GET /api/work: work items in creation order. Input: after, limit, id, state, tag, q, authorId, assigneeId, available.',
    tags: ['work'],
    example: { available: true, limit: 20 },
  },
  {
    action: 'work.history',
    method: 'GET',
    path: '/api/work/history',
    clientId: 'none',
    name: 'Work item history',
    description: 'GET /api/work/history: the revisions of one work item. Input: workItemId, afterRevision, limit.',
    tags: ['work'],
    example: { workItemId: 'wk_0000000007' },
  },
  {
    action: 'work.changes',
    method: 'GET',
    path: '/api/work/changes',
    clientId: 'none',
    name: 'Work change feed',
    description: 'GET /api/work/changes (forum-work-changes-v1): one page of work_item snapshots, with its own cursor. Input: after, originId, limit.',
    tags: ['work', 'feed', 'sync'],
    example: { after: 0, limit: 50 },
  },
  {
    action: 'work.create',
    method: 'POST',
    path: '/api/work',
    clientId: 'messageId',
    name: 'Create a work item',
    description: 'POST /api/work: create a work item (and its discussion topic unless topicId is given). The A2A messageId is the clientId: resending the same A2A message returns the original snapshot. Input: title, description, acceptanceCriteria, tags, topicId.',
    tags: ['work', 'write'],
    example: { title: 'Summarise the retry thread', description: 'Write a short summary of the retry discussion.', acceptanceCriteria: 'At most 200 words, with links to the messages.', tags: ['summary'] },
  },
  {
    action: 'work.act',
    method: 'POST',
    path: '/api/work/action',
    clientId: 'messageId',
    name: 'Act on a work item',
    description: 'POST /api/work/action: claim, renew, release, submit, review or cancel. The A2A messageId is the clientId; use a new messageId for each new action. Input: action, workItemId, expectedRevision and the action\'s fields.',
    tags: ['work', 'write'],
    example: { action: 'claim', workItemId: 'wk_0000000007', expectedRevision: 1, leaseMinutes: 30 },
  },
];

const ACTIONS_BY_NAME = new Map(A2A_ACTIONS.map((a) => [a.action, a]));
const ACTION_LIST = A2A_ACTIONS.map((a) => a.action).join(', ');
const ID_RE = new RegExp(ID_PATTERN);
/** 1.0 with an optional patch version (part 9: the binding is version 1.0; patches are compatible). Also documented in /openapi.json. */
export const VERSION_PATTERN = '^1\\.0(\\.(0|[1-9][0-9]*))?$';
const VERSION_RE = new RegExp(VERSION_PATTERN, 'u');

/**
 * Checks the A2A-Version header, or the A2A-Version query parameter when the header is absent.
 * Throws 400 VersionNotSupported naming the header to send (a missing version means 0.3 in A2A).
 */
export function checkVersion(req: IncomingMessage, url: RequestTarget): void {
  const header = req.headers[A2A_VERSION_HEADER.toLowerCase()];
  const raw = typeof header === 'string' && header.trim() !== '' ? header : url.searchParams.get(A2A_VERSION_HEADER);
  const how = `send the header "${A2A_VERSION_HEADER}: ${A2A_PROTOCOL_VERSION}" (or the query parameter ${A2A_VERSION_HEADER}=${A2A_PROTOCOL_VERSION})`;
  if (raw === null || raw === undefined || raw.trim() === '') {
    throw versionNotSupported(`missing ${A2A_VERSION_HEADER}: this agent implements A2A ${A2A_PROTOCOL_VERSION} only (a request without the header means 0.3); ${how}`, A2A_PROTOCOL_VERSION);
  }
  const version = raw.trim();
  if (!VERSION_RE.test(version)) {
    throw versionNotSupported(`${A2A_VERSION_HEADER} ${JSON.stringify(version)} is not supported: this agent implements A2A ${A2A_PROTOCOL_VERSION} only; ${how}`, A2A_PROTOCOL_VERSION);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The parts of the envelope the binding uses. */
export interface SendMessageEnvelope {
  messageId: string;
  /** The client's contextId, or null. */
  contextId: string | null;
  action: A2AAction;
  /** The data part's `input` (an empty object when absent). */
  input: Record<string, unknown>;
}

/** The schema of the envelope (schemas/A2ASendMessageRequest.json): the one source of its rules. */
const ENVELOPE_SCHEMA = 'A2ASendMessageRequest';
const checkEnvelope = schemaCheck(ENVELOPE_SCHEMA);

/** The value at `keys` below `node`, or undefined. */
function at(node: unknown, ...keys: (string | number)[]): unknown {
  for (const key of keys) node = isObject(node) || Array.isArray(node) ? (node as Record<string | number, unknown>)[key] : undefined;
  return node;
}

// The schema and the action table describe the same envelope; a drift is a programmer error that
// stops startup (style: assert relationships once) instead of a request answered by one and not the other.
{
  const schema = getSchema(ENVELOPE_SCHEMA);
  const message = at(schema, 'properties', 'message', 'properties');
  const actions = at(message, 'parts', 'items', 'properties', 'data', 'properties', 'action', 'enum');
  if (!Array.isArray(actions) || actions.join() !== A2A_ACTIONS.map((a) => a.action).join()) {
    throw new Error(`schemas/${ENVELOPE_SCHEMA}.json: data.action must enumerate exactly ${ACTION_LIST}, in that order`);
  }
  for (const field of ['messageId', 'contextId']) {
    if (at(message, field, 'maxLength') !== A2A_ID_LENGTH_MAX) throw new Error(`schemas/${ENVELOPE_SCHEMA}.json: message.${field} must have maxLength ${A2A_ID_LENGTH_MAX} (A2A_ID_LENGTH_MAX)`);
  }
}

/**
 * Turns the first schema failure of an envelope into the error A2A prescribes for it; the schema
 * decides whether the envelope is valid, this only decides how a failure is answered:
 * - `message.taskId` (anything but absent, "" or null): 404 TaskNotFound with the id;
 * - `configuration.taskPushNotificationConfig`: 400 PushNotificationNotSupported;
 * - a part without `data` (text, file, url) or a `mediaType` other than application/json: 400
 *   ContentTypeNotSupported. A non-data part wins over any other failure inside `message.parts`,
 *   because ajv reports the first failing keyword and `maxItems` runs before `items`: [text, data]
 *   is a natural-language request, not "too many parts";
 * - more than one part: 400 naming the one-action-per-message rule;
 * - an action not in the list: 400 "unknown action" naming the eleven actions;
 * - anything else: 400 naming the field and the rule (src/http/validate.ts `describeError`).
 */
function envelopeError(err: ErrorObject, body: unknown): ServiceError {
  const path = err.instancePath;
  if (path === '' && err.keyword === 'type') return invalid('body must be a SendMessageRequest object: {"message": {...}}');
  if (path === '/message/taskId') {
    const taskId = at(body, 'message', 'taskId');
    return taskNotFound(typeof taskId === 'string' ? taskId : JSON.stringify(taskId));
  }
  if (path === '/configuration/taskPushNotificationConfig') return pushNotificationNotSupported();
  if (path === '/message/parts' || path.startsWith('/message/parts/')) {
    const parts = at(body, 'message', 'parts');
    const textual = Array.isArray(parts) ? parts.findIndex((p) => isObject(p) && p.data === undefined) : -1;
    if (textual !== -1) {
      return contentTypeNotSupported(
        `message.parts.${textual} is not a data part: this agent accepts exactly one data part (application/json) with an action; text, file and url parts (natural-language tasks) are not supported`,
      );
    }
    if (/^\/message\/parts\/[0-9]+\/mediaType$/.test(path)) return contentTypeNotSupported(describeError(err, 'body'));
    if (path === '/message/parts' && err.keyword === 'maxItems') {
      return invalid(`field "message.parts" must hold exactly one data part, got ${(parts as unknown[]).length}; send one action per message`);
    }
    if (path === '/message/parts/0/data/action' && err.keyword === 'enum') {
      return invalid(`unknown action ${JSON.stringify(at(body, 'message', 'parts', 0, 'data', 'action'))}: data.action must be one of ${ACTION_LIST}`);
    }
  }
  return invalid(describeError(err, 'body'));
}

/**
 * Validates the SendMessageRequest envelope with schemas/A2ASendMessageRequest.json (compiled once
 * by src/http/validate.ts; unknown fields are ignored, as A2A requires) and returns the parts the
 * binding uses. Throws (see `envelopeError`) 400 naming the field and rule, 404 TaskNotFound for a
 * taskId, 400 PushNotificationNotSupported for a push configuration, 400 ContentTypeNotSupported
 * for text, file or url parts or another mediaType.
 */
export function parseEnvelope(body: unknown): SendMessageEnvelope {
  const err = checkEnvelope(body);
  if (err) throw envelopeError(err, body);
  // The schema guarantees these shapes, and that the action is one of A2A_ACTIONS (checked above).
  const message = (body as { message: EnvelopeMessage }).message;
  const data = message.parts[0]!.data;
  return {
    messageId: message.messageId,
    // "" is proto3's unset string (clients that emit default values send it): no context given.
    contextId: message.contextId || null,
    action: ACTIONS_BY_NAME.get(data.action)!,
    input: data.input ?? {},
  };
}

/** The fields of a schema-valid envelope's message that the binding reads. */
interface EnvelopeMessage {
  messageId: string;
  contextId?: string;
  parts: [{ data: { action: string; input?: Record<string, unknown> } }];
}

/**
 * Converts an action's `input` into the REST route's input: query parameters for GET (numbers
 * and booleans as canonical strings, strings as they are; objects, arrays and null are 400), the
 * body for POST with the clientId rule applied.
 *
 * These checks stay hand-written because the envelope schema cannot express them without
 * copying the action table into it: which values `input` may hold depends on the action's REST
 * method, and whether the messageId must be a valid clientId depends on the action's clientId
 * rule. The contents of `input` are then validated by the REST route's own schema.
 */
export function routeInput(env: SendMessageEnvelope): RouteInput {
  const { action, input } = env;
  if (action.method === 'GET') {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(input)) {
      if (typeof value === 'string') query.append(key, value);
      else if (typeof value === 'number' || typeof value === 'boolean') query.append(key, String(value));
      else throw invalid(`field "input.${key}" must be a string, number or boolean (it is the query parameter "${key}" of GET ${action.path})`);
    }
    return { query, body: () => undefined };
  }
  const body: Record<string, unknown> = { ...input };
  if (action.clientId !== 'none') {
    const given = body.clientId;
    if (action.clientId === 'messageId' && given !== undefined && given !== env.messageId) {
      throw invalid(`field "input.clientId" must be absent or equal to message.messageId for action "${action.action}": the A2A messageId is the clientId (part 1); send a new messageId for a new request`);
    }
    if (given === undefined) {
      if (env.messageId.length > ID_LENGTH_MAX || !ID_RE.test(env.messageId)) {
        throw invalid(`field "message.messageId" becomes the clientId of action "${action.action}", so it must match ${ID_PATTERN} (1..${ID_LENGTH_MAX} characters), e.g. a UUID`);
      }
      body.clientId = env.messageId;
    }
  }
  return { query: new URLSearchParams(), body: () => body };
}

/** The REST reply's body as JSON text (what the REST endpoint would have sent). */
function resultJson(reply: Reply): string {
  if (reply.json !== undefined) return reply.json;
  if (reply.body !== undefined) return JSON.stringify(reply.body);
  // Pre-encoded JSON (cached feed pages, status) is JSON text already; other raw content
  // (markdown, HTML) becomes a JSON string.
  if (reply.raw !== undefined) return (reply.contentType ?? '').startsWith('application/json') ? reply.raw.toString() : JSON.stringify(reply.raw.toString());
  return 'null';
}

/**
 * Handles POST /a2a/message:send (the pipeline has checked the version, the route's checkHead,
 * before the body was read): the envelope, then the action's REST route through
 * the shared pipeline steps (`ctx.runner`). Throws the REST route's ServiceError (rendered as
 * google.rpc.Status by the route's error format), 400 for an unknown action, 400
 * UnsupportedOperation when the action's REST route is not installed.
 */
export async function sendMessage(ctx: RequestContext): Promise<Reply> {
  const env = parseEnvelope(ctx.body);
  const runner = ctx.runner!;
  const route = runner.find(env.action.method, env.action.path);
  if (!route) {
    throw unsupportedOperation(`action "${env.action.action}" is not available on this server: its REST endpoint ${env.action.method} ${env.action.path} is not installed`);
  }
  const reply = await runner.run(route, routeInput(env));
  const json =
    `{"message":{"messageId":${JSON.stringify(randomUUID())},"contextId":${JSON.stringify(env.contextId ?? randomUUID())},` +
    `"role":"ROLE_AGENT","parts":[{"data":{"action":${JSON.stringify(env.action.action)},"status":${reply.status},` +
    `"result":${resultJson(reply)}},"mediaType":"application/json"}]}}`;
  return { status: 200, json };
}
