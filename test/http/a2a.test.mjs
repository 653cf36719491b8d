import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { api, startServer, tempDir } from '../helpers/server.mjs';
import { startService } from '../../dist/service.js';
import { loadConfig } from '../../dist/config.js';
import { publicRoutes } from '../../dist/api/routes.js';
import { DISK_CHECK_INTERVAL_MS } from '../../dist/constants.js';
import { ManualClock } from '../../dist/clock.js';
import { bodyValidator } from '../../dist/http/validate.js';

/** Asserts that a body conforms to a schema of schemas/ (throws naming the field otherwise). */
const conforms = (schema, body) => bodyValidator(schema)(structuredClone(body));

const V = { 'a2a-version': '1.0' };
const ACTIONS = ['status', 'read', 'changes', 'inbox', 'topic', 'post', 'knowledge', 'work.list', 'work.history', 'work.changes', 'work.create', 'work.act'];

/** A SendMessageRequest with one data part. */
function envelope(action, input, { messageId = randomUUID(), ...message } = {}) {
  const data = input === undefined ? { action } : { action, input };
  return { message: { messageId, role: 'ROLE_USER', parts: [{ data, mediaType: 'application/json' }], ...message }, configuration: {} };
}

/** POST /a2a/message:send with A2A-Version 1.0. */
function send(s, token, action, input, opts = {}) {
  const { headers = V, ...message } = opts;
  return s.post('/a2a/message:send', envelope(action, input, message), token, headers);
}

/** The data part of a successful response, after checking the envelope around it. */
function dataOf(res, action) {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const m = res.body.message;
  assert.equal(m.role, 'ROLE_AGENT');
  assert.match(m.messageId, /^[0-9a-f-]{36}$/);
  assert.equal(typeof m.contextId, 'string');
  assert.equal(m.parts.length, 1);
  assert.equal(m.parts[0].mediaType, 'application/json');
  assert.equal(m.parts[0].data.action, action);
  conforms('A2ASendMessageResponse', res.body);
  return m.parts[0].data;
}

/** Asserts a google.rpc.Status error body; returns its ErrorInfo. */
function a2aError(res, status, rpcStatus, reason, domain) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  const e = res.body.error;
  assert.equal(e.code, status);
  assert.equal(e.status, rpcStatus);
  assert.equal(typeof e.message, 'string');
  assert.equal(e.details.length, 1);
  const info = e.details[0];
  assert.equal(info['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
  assert.equal(info.reason, reason);
  if (domain) assert.equal(info.domain, domain);
  assert.equal(typeof info.metadata, 'object');
  conforms('A2AError', res.body);
  return { ...info, message: e.message };
}

test('the agent card is public, cacheable and names the HTTP+JSON interface under FORUM_PUBLIC_URL', async (t) => {
  const s = await startServer(t, { env: { FORUM_PUBLIC_URL: 'https://forum.example.org/base/' } });
  const res = await s.get('/.well-known/agent-card.json');
  assert.equal(res.status, 200);
  const card = res.body;
  conforms('AgentCard', card);
  assert.deepEqual(card.supportedInterfaces, [{ url: 'https://forum.example.org/base/a2a', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }]);
  assert.equal(card.version, '0.4.9');
  assert.equal(card.documentationUrl, 'https://forum.example.org/base/api/start.md');
  assert.deepEqual(card.provider, { organization: 'Agent Forum', url: 'https://forum.example.org/base' });
  const { extensions, ...flags } = card.capabilities;
  assert.deepEqual(flags, { streaming: false, pushNotifications: false, extendedAgentCard: false });
  assert.deepEqual(extensions.map((e) => e.params.url), ['https://forum.example.org/base/mcp'], 'the card tells hosts the MCP endpoint');
  assert.equal(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme, 'Bearer');
  assert.deepEqual(card.securityRequirements, [{ schemes: { bearer: { list: [] } } }]);
  assert.deepEqual(card.defaultInputModes, ['application/json']);
  assert.deepEqual(card.defaultOutputModes, ['application/json']);
  assert.deepEqual(card.skills.map((k) => k.id), ACTIONS);
  for (const skill of card.skills) {
    const example = JSON.parse(skill.examples[0]);
    assert.equal(example.action, skill.id);
    assert.equal(typeof example.input, 'object');
  }
  assert.equal(res.headers['cache-control'], 'public, max-age=300');
  assert.match(res.headers.etag, /^"[A-Za-z0-9_-]+"$/);
  const legacy = await s.get('/.well-known/agent.json');
  assert.deepEqual(legacy.body, card);
  assert.equal(legacy.headers.etag, res.headers.etag);
  const again = await s.get('/.well-known/agent-card.json', undefined, { 'if-none-match': res.headers.etag });
  assert.equal(again.status, 304);
  assert.equal(again.body, '');
  assert.equal(again.headers.etag, res.headers.etag);
  assert.equal((await s.get('/.well-known/agent-card.json', undefined, { 'if-none-match': '"other"' })).status, 200);

  // Our own error reasons carry the service's host as ErrorInfo domain.
  const anonymous = await s.post('/a2a/message:send', envelope('status'), undefined, V);
  const info = a2aError(anonymous, 401, 'UNAUTHENTICATED', 'UNAUTHORIZED', 'forum.example.org');
  assert.equal(anonymous.headers['www-authenticate'], 'Bearer');
  assert.match(info.message, /Authorization/);
  const badToken = await s.post('/a2a/message:send', envelope('status'), 'nope', V);
  a2aError(badToken, 401, 'UNAUTHENTICATED', 'UNAUTHORIZED');
  assert.equal(badToken.headers['www-authenticate'], 'Bearer');
});

test('every action runs its REST endpoint and returns the REST result', async (t) => {
  const s = await startServer(t);
  const a = await s.register('creator');
  const b = await s.register('worker');

  const status = dataOf(await send(s, a.token, 'status', {}, { contextId: 'ctx-1' }), 'status');
  assert.equal(status.status, 200);
  assert.equal(status.result.version, '0.4.9');
  assert.equal(status.result.registeredAgents, 2);
  assert.equal(typeof status.result.writeStop, 'boolean');
  const echoed = await send(s, a.token, 'status', undefined, { contextId: 'ctx-1' });
  assert.equal(echoed.body.message.contextId, 'ctx-1', 'the client contextId is echoed');

  const topic = dataOf(await send(s, a.token, 'topic', { title: '  A2A topic ' }), 'topic');
  assert.equal(topic.status, 201);
  assert.equal(topic.result.title, 'A2A topic');
  assert.deepEqual((await s.get('/api/topics', a.token)).body[0], topic.result);

  const post = dataOf(await send(s, a.token, 'post', { topicId: topic.result.id, content: 'hello over a2a', clientId: 'explicit-1' }), 'post');
  assert.equal(post.status, 201);
  assert.equal(post.result.clientId, 'explicit-1');
  assert.deepEqual((await s.get(`/api/messages?messageId=${post.result.id}`, a.token)).body.messages, [post.result]);

  const knowledge = dataOf(await send(s, a.token, 'knowledge', { title: 'A2A note', content: 'hello knowledge', category: 'opinion' }), 'knowledge');
  assert.equal(knowledge.status, 201);
  assert.equal(knowledge.result.title, 'A2A note');

  const read = dataOf(await send(s, b.token, 'read', { q: 'hello', limit: 5 }), 'read');
  assert.deepEqual(read.result, (await s.get('/api/search?q=hello&limit=5', b.token)).body);

  const changes = dataOf(await send(s, b.token, 'changes', { after: 0, limit: 3 }), 'changes');
  assert.deepEqual(changes.result, (await s.get('/api/changes?after=0&limit=3', b.token)).body);

  const created = dataOf(
    await send(s, a.token, 'work.create', { title: 'A2A work', description: 'Do it over A2A.', acceptanceCriteria: 'Done.', tags: ['a2a'] }),
    'work.create',
  );
  assert.equal(created.status, 201);
  const item = created.result;
  assert.equal(item.revision, 1);

  const claimed = dataOf(await send(s, b.token, 'work.act', { action: 'claim', workItemId: item.id, expectedRevision: 1 }), 'work.act');
  assert.equal(claimed.status, 200);
  assert.equal(claimed.result.state, 'claimed');
  assert.equal(claimed.result.revision, 2);

  const list = dataOf(await send(s, b.token, 'work.list', { id: item.id, limit: 10 }), 'work.list');
  assert.deepEqual(list.result, (await s.get(`/api/work?id=${item.id}&limit=10`, b.token)).body);
  const history = dataOf(await send(s, b.token, 'work.history', { workItemId: item.id }), 'work.history');
  assert.deepEqual(history.result, (await s.get(`/api/work/history?workItemId=${item.id}`, b.token)).body);
  const workChanges = dataOf(await send(s, b.token, 'work.changes', { after: 0 }), 'work.changes');
  assert.deepEqual(workChanges.result, (await s.get('/api/work/changes?after=0', b.token)).body);
  assert.equal(workChanges.result.events.length, 2);

  // REST validation applies to input, with the same rules: booleans and numbers become canonical query strings.
  const available = dataOf(await send(s, b.token, 'work.list', { available: true }), 'work.list');
  assert.deepEqual(available.result, (await s.get('/api/work?available=true', b.token)).body);
  const badLimit = await send(s, b.token, 'changes', { limit: 0 });
  assert.match(a2aError(badLimit, 400, 'INVALID_ARGUMENT', 'VALIDATION').message, /limit/);
  const extra = await send(s, a.token, 'topic', { title: 'x', nope: 1 });
  assert.match(a2aError(extra, 400, 'INVALID_ARGUMENT', 'VALIDATION').message, /nope/);
  const missing = await send(s, a.token, 'post', { topicId: 'tp_none', content: 'x' });
  a2aError(missing, 404, 'NOT_FOUND', 'NOT_FOUND');
});

test('the envelope is validated by schemas/A2ASendMessageRequest.json: errors are 400 naming the field, a taskId is TaskNotFound, nothing is recorded', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const before = (await s.get('/api/changes', token)).body;
  const raw = (body) => s.post('/a2a/message:send', body, token, V);
  const base = envelope('topic', { title: 'never' });
  const withMessage = (patch) => ({ ...base, message: { ...base.message, ...patch } });
  const dataPart = (data) => ({ data });

  for (const [body, rule] of [
    [{}, /"message"/],
    [[], /SendMessageRequest/],
    [withMessage({ messageId: undefined }), /message\.messageId/],
    [withMessage({ messageId: '' }), /message\.messageId/],
    [withMessage({ role: 'user' }), /message\.role.*ROLE_USER/],
    [withMessage({ role: 'ROLE_AGENT' }), /message\.role/],
    [withMessage({ parts: [] }), /message\.parts/],
    [withMessage({ parts: [dataPart({ action: 'topic', input: { title: 'a' } }), dataPart({ action: 'topic', input: { title: 'b' } })] }), /exactly one data part, got 2/],
    [withMessage({ parts: [dataPart('topic')] }), /data/],
    [withMessage({ parts: [dataPart({ input: {} })] }), /data\.action/],
    [withMessage({ parts: [dataPart({ action: 'topic', input: 'title' })] }), /data\.input/],
    [withMessage({ parts: [dataPart({ action: 'status', input: { deep: { x: 1 } } })] }), /input\.deep/],
    [withMessage({ parts: [dataPart({ action: 'status', input: { list: [1] } })] }), /input\.list/],
  ]) {
    assert.match(a2aError(await raw(body), 400, 'INVALID_ARGUMENT', 'VALIDATION').message, rule, JSON.stringify(body));
  }

  const unknown = await send(s, token, 'delete.everything', {});
  const info = a2aError(unknown, 400, 'INVALID_ARGUMENT', 'VALIDATION');
  assert.match(info.message, /unknown action "delete\.everything"/);
  for (const action of ACTIONS) assert.ok(info.message.includes(action), `names ${action}`);

  const textOnly = await raw(withMessage({ parts: [{ text: 'please open a topic' }] }));
  a2aError(textOnly, 400, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED', 'a2a-protocol.org');
  const textAndData = await raw(withMessage({ parts: [{ text: 'hi' }, dataPart({ action: 'status' })] }));
  a2aError(textAndData, 400, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED');

  // The schema's rules are the server's: contextId has at most 120 characters ("" is proto3's
  // unset string and gets a new context), a mediaType must be application/json, configuration
  // and metadata are objects.
  const unsetContext = await raw(withMessage({ contextId: '' }));
  assert.equal(unsetContext.status, 200);
  assert.match(unsetContext.body.message.contextId, /^[0-9a-f-]{36}$/, 'an empty contextId is unset: a new one is made');
  assert.match(a2aError(await raw(withMessage({ contextId: 'c'.repeat(121) })), 400, 'INVALID_ARGUMENT', 'VALIDATION').message, /message\.contextId/);
  for (const mediaType of ['', 'text/plain', 'application/jsonx', 'application/json-patch+json', 'application/a2a+json', 'application/json,text/plain']) {
    const res = await raw(withMessage({ parts: [{ data: { action: 'status' }, mediaType }] }));
    assert.match(a2aError(res, 400, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED', 'a2a-protocol.org').message, /message\.parts\.0\.mediaType/, JSON.stringify(mediaType));
  }
  assert.match(a2aError(await raw({ ...base, configuration: 'fast' }), 400, 'INVALID_ARGUMENT', 'VALIDATION').message, /configuration/);
  assert.match(a2aError(await raw(withMessage({ metadata: [] })), 400, 'INVALID_ARGUMENT', 'VALIDATION').message, /message\.metadata/);

  const task = await raw(withMessage({ taskId: 'wk_0000000001' }));
  const taskInfo = a2aError(task, 404, 'NOT_FOUND', 'TASK_NOT_FOUND', 'a2a-protocol.org');
  assert.equal(taskInfo.metadata.taskId, 'wk_0000000001');
  const push = await raw({ ...base, configuration: { taskPushNotificationConfig: { url: 'https://example.org/hook' } } });
  a2aError(push, 400, 'FAILED_PRECONDITION', 'PUSH_NOTIFICATION_NOT_SUPPORTED', 'a2a-protocol.org');

  const malformed = await s.request('POST', '/a2a/message:send', { token, raw: '{"message":', headers: { ...V, 'content-type': 'application/json' } });
  assert.match(a2aError(malformed, 400, 'INVALID_ARGUMENT', 'MALFORMED_JSON').message, /malformed JSON/);

  const numericTask = await raw(withMessage({ taskId: 7 }));
  assert.equal(a2aError(numericTask, 404, 'NOT_FOUND', 'TASK_NOT_FOUND').metadata.taskId, '7');
  const textAndTask = await raw(withMessage({ taskId: 't1', parts: [{ text: 'hi' }] }));
  a2aError(textAndTask, 404, 'NOT_FOUND', 'TASK_NOT_FOUND');

  // Unknown envelope fields are ignored, as A2A requires.
  const tolerant = await raw({ ...withMessage({ extensions: [], referenceTaskIds: [], metadata: { k: 'v' }, future: 1 }), metadata: {}, tenant: '' });
  assert.equal(dataOf(tolerant, 'topic').status, 201);
  // proto3 JSON may send an empty taskId and a null push configuration: both mean "none".
  const defaults = await raw({ ...withMessage({ taskId: '' }), configuration: { taskPushNotificationConfig: null, blocking: true } });
  assert.equal(dataOf(defaults, 'topic').status, 201);
  const after = (await s.get('/api/changes', token)).body;
  assert.equal(after.events.length, before.events.length + 3, 'only the tolerant requests and the one with an unset contextId were recorded');
});

test('a data part\'s mediaType is accepted when its essence (before ";", trimmed, any case) is application/json', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  for (const mediaType of ['application/json', 'application/json; charset=utf-8', 'Application/JSON', ' application/json ;charset=UTF-8', 'APPLICATION/JSON;']) {
    const body = { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { action: 'status' }, mediaType }] } };
    dataOf(await s.post('/a2a/message:send', body, token, V), 'status');
  }
});

test('A2A-Version 1.0 is required as header or query parameter; others get VersionNotSupported naming the header', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const body = envelope('status');
  const missing = await s.post('/a2a/message:send', body, token);
  const info = a2aError(missing, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED', 'a2a-protocol.org');
  assert.match(info.message, /A2A-Version: 1\.0/);
  assert.equal(info.metadata.supportedVersions, '1.0');
  for (const version of ['0.3', '2.0', '1', '1.0.x', '1.01']) {
    const res = await s.post('/a2a/message:send', body, token, { 'a2a-version': version });
    assert.match(a2aError(res, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED').message, /A2A-Version/, version);
  }
  for (const version of ['1.0', '1.0.1', ' 1.0 ']) {
    dataOf(await s.post('/a2a/message:send', body, token, { 'a2a-version': version }), 'status');
  }
  dataOf(await s.post('/a2a/message:send?A2A-Version=1.0', body, token), 'status');
  const badQuery = await s.post('/a2a/message:send?A2A-Version=0.3', body, token);
  a2aError(badQuery, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED');
});

test('the A2A version is checked before the content type, the body and the query on SendMessage and ListTasks', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const raw = JSON.stringify(envelope('status'));
  const text = await s.request('POST', '/a2a/message:send', { token, raw, headers: { 'content-type': 'text/plain' } });
  a2aError(text, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED');
  const big = JSON.stringify(envelope('topic', { title: 'x'.repeat(33 * 1024) }));
  const tooBig = await s.request('POST', '/a2a/message:send', { token, raw: big, headers: { 'content-type': 'application/json', 'a2a-version': '0.3' } });
  a2aError(tooBig, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED');
  const malformed = await s.request('POST', '/a2a/message:send', { token, raw: '{"message":', headers: { 'content-type': 'application/json' } });
  a2aError(malformed, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED');
  const badQuery = await s.request('GET', '/a2a/tasks?pageSize=nope&unknown=1', { token });
  a2aError(badQuery, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED');
  // With the version, the same requests get their own errors.
  a2aError(await s.request('POST', '/a2a/message:send', { token, raw, headers: { ...V, 'content-type': 'text/plain' } }), 415, 'INVALID_ARGUMENT', 'UNSUPPORTED_MEDIA_TYPE');
  assert.equal((await s.request('GET', '/a2a/tasks?pageSize=nope&unknown=1', { token, headers: V })).status, 400);
  assert.equal((await s.request('GET', '/a2a/tasks', { token, headers: V })).status, 200);
});

test('application/json and application/a2a+json are accepted; other content types get 415 and big bodies 413 in A2A form', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const raw = JSON.stringify(envelope('status'));
  for (const type of ['application/json', 'application/a2a+json', 'application/a2a+json; charset=utf-8']) {
    dataOf(await s.request('POST', '/a2a/message:send', { token, raw, headers: { ...V, 'content-type': type } }), 'status');
  }
  const text = await s.request('POST', '/a2a/message:send', { token, raw, headers: { ...V, 'content-type': 'text/plain' } });
  assert.match(a2aError(text, 415, 'INVALID_ARGUMENT', 'UNSUPPORTED_MEDIA_TYPE').message, /application\/a2a\+json/);
  const big = JSON.stringify(envelope('topic', { title: 'x'.repeat(33 * 1024) }));
  const tooBig = await s.request('POST', '/a2a/message:send', { token, raw: big, headers: { ...V, 'content-type': 'application/json' } });
  a2aError(tooBig, 413, 'INVALID_ARGUMENT', 'BODY_TOO_LARGE');
});

test('the A2A messageId is the clientId: resending a message returns the same result and records nothing new', async (t) => {
  const s = await startServer(t);
  const a = await s.register('creator');
  const b = await s.register('worker');
  const topic = (await s.post('/api/topics', { title: 't' }, a.token)).body;

  const postId = randomUUID();
  const first = dataOf(await send(s, a.token, 'post', { topicId: topic.id, content: 'once' }, { messageId: postId }), 'post');
  const retry = dataOf(await send(s, a.token, 'post', { topicId: topic.id, content: 'once' }, { messageId: postId }), 'post');
  assert.equal(first.result.clientId, postId);
  assert.deepEqual(retry, first);
  assert.equal((await s.get(`/api/messages?topicId=${topic.id}`, a.token)).body.messages.length, 1);
  const messageReceipt = (await s.get(`/api/receipts?kind=message&clientId=${postId}`, a.token)).body;
  assert.equal(messageReceipt.outcome, 'recorded');
  assert.deepEqual(messageReceipt.response.body, first.result);
  const changed = await send(s, a.token, 'post', { topicId: topic.id, content: 'changed' }, { messageId: postId });
  a2aError(changed, 409, 'ALREADY_EXISTS', 'IDEMPOTENCY_CONFLICT');

  const createId = randomUUID();
  const input = { title: 'once', description: 'Only one item.', acceptanceCriteria: 'One item exists.' };
  const created = dataOf(await send(s, a.token, 'work.create', input, { messageId: createId }), 'work.create');
  const createdAgain = dataOf(await send(s, a.token, 'work.create', input, { messageId: createId }), 'work.create');
  assert.deepEqual(createdAgain.result, created.result);
  assert.deepEqual([created.status, createdAgain.status], [201, 200], 'the REST statuses: created, then an identical work retry');
  assert.equal((await s.get('/api/work', a.token)).body.items.length, 1);
  const workReceipt = (await s.get(`/api/receipts?kind=work&clientId=${createId}`, a.token)).body;
  assert.equal(workReceipt.outcome, 'recorded');
  assert.deepEqual(workReceipt.response.body, created.result);

  const claimId = randomUUID();
  const claim = { action: 'claim', workItemId: created.result.id, expectedRevision: 1 };
  const claimed = dataOf(await send(s, b.token, 'work.act', claim, { messageId: claimId }), 'work.act');
  const claimedAgain = dataOf(await send(s, b.token, 'work.act', claim, { messageId: claimId }), 'work.act');
  assert.deepEqual(claimedAgain.result, claimed.result);
  assert.equal((await s.get(`/api/work/history?workItemId=${created.result.id}`, b.token)).body.revisions.length, 2);
  assert.equal((await s.get(`/api/receipts?kind=work&clientId=${claimId}`, b.token)).body.outcome, 'recorded');

  const mismatch = await send(s, a.token, 'work.create', { ...input, clientId: 'other-id' }, { messageId: randomUUID() });
  assert.match(a2aError(mismatch, 400, 'INVALID_ARGUMENT', 'VALIDATION').message, /input\.clientId.*messageId/);
  const same = randomUUID();
  dataOf(await send(s, a.token, 'work.create', { ...input, title: 'explicit', clientId: same }, { messageId: same }), 'work.create');
  const notAnId = await send(s, a.token, 'work.create', input, { messageId: 'not an id!' });
  assert.match(a2aError(notAnId, 400, 'INVALID_ARGUMENT', 'VALIDATION').message, /message\.messageId.*clientId/);
});

test('write stop answers 423 through A2A while reads keep working', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const topic = (await s.post('/api/topics', { title: 't' }, token)).body;
  const work = (await s.post('/api/work', { clientId: 'ws-1', title: 'w', description: 'd', acceptanceCriteria: 'c' }, token)).body;
  await s.cli('writes', 'stop');
  const res = await send(s, token, 'post', { topicId: topic.id, content: 'paused' });
  assert.match(a2aError(res, 423, 'FAILED_PRECONDITION', 'WRITE_STOP').message, /write stop/);
  a2aError(await send(s, token, 'topic', { title: 'paused' }), 423, 'FAILED_PRECONDITION', 'WRITE_STOP');
  assert.equal(dataOf(await send(s, token, 'status'), 'status').result.writeStop, true);
  // Every read action keeps working, although each is sent as a POST (the guides say "every write answers 423").
  dataOf(await send(s, token, 'changes', {}), 'changes');
  assert.equal(dataOf(await send(s, token, 'read', {}), 'read').status, 200);
  assert.equal(dataOf(await send(s, token, 'work.list', {}), 'work.list').status, 200);
  assert.equal(dataOf(await send(s, token, 'work.history', { workItemId: work.id }), 'work.history').status, 200);
  assert.equal(dataOf(await send(s, token, 'work.changes', {}), 'work.changes').status, 200);
  await s.cli('writes', 'resume');
  assert.equal(dataOf(await send(s, token, 'post', { topicId: topic.id, content: 'resumed' }), 'post').status, 201);
});

test('A2A writes share the REST write rate limit and answer 429 with Retry-After in A2A form', async (t) => {
  const s = await startServer(t, { env: { FORUM_RATE_LIMITS: 'on' } });
  const { token } = await s.register();
  const topic = (await s.post('/api/topics', { title: 't' }, token)).body; // write 1
  for (let i = 2; i <= 30; i++) {
    const res = i % 2 ? await s.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `c${i}` }, token) : await send(s, token, 'post', { topicId: topic.id, content: `m${i}` });
    assert.ok(res.status === 201 || res.status === 200, `write ${i}: ${res.status}`);
  }
  const limited = await send(s, token, 'post', { topicId: topic.id, content: 'one too many' });
  const info = a2aError(limited, 429, 'RESOURCE_EXHAUSTED', 'RATE_LIMITED');
  assert.match(limited.headers['retry-after'], /^[1-9][0-9]*$/);
  assert.equal(info.metadata.retryAfterSeconds, limited.headers['retry-after']);
  assert.equal((await s.post('/api/topics', { title: 'rest too' }, token)).status, 429);
  dataOf(await send(s, token, 'status'), 'status'); // reads are not write-limited
});

test('A2A changes and work.changes share the REST change-read limit: the 61st change read in a minute is 429 in A2A form', async (t) => {
  const s = await startServer(t, { env: { FORUM_RATE_LIMITS: 'on' } });
  const { token } = await s.register();
  for (let i = 1; i <= 60; i++) {
    const res = i % 3 === 0 ? await s.get('/api/changes', token) : await send(s, token, i % 3 === 1 ? 'changes' : 'work.changes', {});
    assert.equal(res.status, 200, `change read ${i}: ${JSON.stringify(res.body)}`);
  }
  for (const action of ['changes', 'work.changes']) {
    const limited = await send(s, token, action, {});
    const info = a2aError(limited, 429, 'RESOURCE_EXHAUSTED', 'RATE_LIMITED');
    assert.match(info.message, /change read/i, 'the error names the limit');
    assert.match(limited.headers['retry-after'], /^[1-9][0-9]*$/);
    assert.equal(info.metadata.retryAfterSeconds, limited.headers['retry-after']);
  }
  assert.equal((await s.get('/api/receipts?kind=message&clientId=x', token)).status, 429, 'REST shares the same budget');
  dataOf(await send(s, token, 'read', {}), 'read'); // other reads are not change reads
  dataOf(await send(s, token, 'work.list', {}), 'work.list');
});

test('other A2A operations answer the error A2A prescribes for an agent without tasks, streaming or push', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const call = (method, path, body) => s.request(method, path, { token, body, headers: V });
  const A2A = 'a2a-protocol.org';
  a2aError(await call('POST', '/a2a/message:stream', envelope('status')), 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION', A2A);
  const get = a2aError(await call('GET', '/a2a/tasks/wk_0000000002'), 404, 'NOT_FOUND', 'TASK_NOT_FOUND', A2A);
  assert.equal(get.metadata.taskId, 'wk_0000000002');
  a2aError(await call('POST', '/a2a/tasks/t1:cancel', {}), 404, 'NOT_FOUND', 'TASK_NOT_FOUND', A2A);
  a2aError(await call('POST', '/a2a/tasks/t1:subscribe'), 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION', A2A);
  a2aError(await call('GET', '/a2a/tasks/t1:subscribe'), 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION', A2A);
  for (const [method, path] of [
    ['POST', '/a2a/tasks/t1/pushNotificationConfigs'],
    ['GET', '/a2a/tasks/t1/pushNotificationConfigs'],
    ['GET', '/a2a/tasks/t1/pushNotificationConfigs/c1'],
    ['DELETE', '/a2a/tasks/t1/pushNotificationConfigs/c1'],
  ]) {
    a2aError(await call(method, path, method === 'POST' ? { url: 'https://example.org/hook' } : undefined), 400, 'FAILED_PRECONDITION', 'PUSH_NOTIFICATION_NOT_SUPPORTED', A2A);
  }
  a2aError(await call('GET', '/a2a/extendedAgentCard'), 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION', A2A);
  const wrongMethod = await call('GET', '/a2a/message:send');
  assert.equal(a2aError(wrongMethod, 405, 'UNIMPLEMENTED', 'METHOD_NOT_ALLOWED').metadata.allow, 'POST');
  assert.equal(wrongMethod.headers.allow, 'POST');
  a2aError(await call('DELETE', '/a2a/tasks/t1'), 405, 'UNIMPLEMENTED', 'METHOD_NOT_ALLOWED');
  a2aError(await call('GET', '/a2a/nothing-here'), 404, 'NOT_FOUND', 'NOT_FOUND');
  const anonymous = await s.request('GET', '/a2a/tasks/t1', { headers: V });
  a2aError(anonymous, 401, 'UNAUTHENTICATED', 'UNAUTHORIZED');
  assert.equal(anonymous.headers['www-authenticate'], 'Bearer');
  // REST paths keep the REST error format.
  assert.deepEqual(Object.keys((await s.get('/api/nothing-here', token)).body), ['error', 'code']);
});

/** Every A2A operation: method, path, body (for POST). */
const OPERATIONS = [
  ['POST', '/a2a/message:send', envelope('status')],
  ['POST', '/a2a/message:stream', envelope('status')],
  ['GET', '/a2a/tasks'],
  ['GET', '/a2a/tasks/t1'],
  ['POST', '/a2a/tasks/t1:cancel', {}],
  ['GET', '/a2a/tasks/t1:subscribe'],
  ['POST', '/a2a/tasks/t1:subscribe', {}],
  ['POST', '/a2a/tasks/t1/pushNotificationConfigs', { url: 'https://example.org/hook' }],
  ['GET', '/a2a/tasks/t1/pushNotificationConfigs'],
  ['GET', '/a2a/tasks/t1/pushNotificationConfigs/c1'],
  ['DELETE', '/a2a/tasks/t1/pushNotificationConfigs/c1'],
  ['GET', '/a2a/extendedAgentCard'],
];

test('every A2A operation refuses a missing A2A-Version (0.3), 0.3 and 99.0 with VersionNotSupported, and answers normally with 1.0', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  for (const [method, path, body] of OPERATIONS) {
    for (const headers of [{}, { 'a2a-version': '0.3' }, { 'a2a-version': '99.0' }]) {
      const res = await s.request(method, path, { token, body, headers });
      a2aError(res, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED', 'a2a-protocol.org');
      assert.equal(res.body.error.details[0].metadata.supportedVersions, '1.0', `${method} ${path} ${JSON.stringify(headers)}`);
    }
    const ok = await s.request(method, path, { token, body, headers: V });
    assert.notEqual(ok.body?.error?.details?.[0]?.reason, 'VERSION_NOT_SUPPORTED', `${method} ${path} with 1.0 passes the version check`);
    const viaQuery = await s.request(method, `${path}?A2A-Version=1.0`, { token, body });
    assert.notEqual(viaQuery.body?.error?.details?.[0]?.reason, 'VERSION_NOT_SUPPORTED', `${method} ${path} with the query parameter passes`);
  }
});

test('ListTasks answers the empty page after authentication and validation', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const page = await s.request('GET', '/a2a/tasks', { token, headers: V });
  assert.equal(page.status, 200);
  assert.deepEqual(page.body, { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 });
  conforms('A2AListTasksResponse', page.body);
  const sized = await s.request('GET', '/a2a/tasks?pageSize=7&status=TASK_STATE_WORKING', { token, headers: V });
  assert.deepEqual(sized.body, { tasks: [], nextPageToken: '', pageSize: 7, totalSize: 0 });
  a2aError(await s.request('GET', '/a2a/tasks?pageSize=0', { token, headers: V }), 400, 'INVALID_ARGUMENT', 'VALIDATION');
  a2aError(await s.request('GET', '/a2a/tasks?pageToken=abc', { token, headers: V }), 400, 'INVALID_ARGUMENT', 'VALIDATION');
  a2aError(await s.request('GET', '/a2a/tasks', { headers: V }), 401, 'UNAUTHENTICATED', 'UNAUTHORIZED');
  a2aError(await s.request('POST', '/a2a/tasks', { token, headers: V, body: {} }), 405, 'UNIMPLEMENTED', 'METHOD_NOT_ALLOWED');
});

test('A2A requests sent as application/a2a+json are accepted on every operation with a body', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const headers = { ...V, 'content-type': 'application/a2a+json' };
  const sent = await s.request('POST', '/a2a/message:send', { token, raw: JSON.stringify(envelope('status')), headers });
  assert.equal(sent.status, 200);
  const cancel = await s.request('POST', '/a2a/tasks/t1:cancel', { token, raw: '{"id":"t1"}', headers });
  a2aError(cancel, 404, 'NOT_FOUND', 'TASK_NOT_FOUND', 'a2a-protocol.org');
});

test('malformed percent-escapes in an A2A task id are 400 BAD_TARGET in A2A form, not 500', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  for (const [method, path] of [['GET', '/a2a/tasks/%E0%A4%A'], ['GET', '/a2a/tasks/%ZZ'], ['POST', '/a2a/tasks/%FF:cancel']]) {
    const res = await s.request(method, path, { token, headers: V, body: method === 'POST' ? {} : undefined });
    a2aError(res, 400, 'INVALID_ARGUMENT', 'BAD_TARGET');
    assert.doesNotMatch(JSON.stringify(res.body), /URIError|at decodeURIComponent/);
  }
});

test('/openapi.json documents the A2A operations with google.rpc.Status errors', async (t) => {
  const s = await startServer(t);
  const doc = (await s.get('/openapi.json')).body;
  const send = doc.paths['/a2a/message:send'].post;
  assert.deepEqual(Object.keys(send.requestBody.content), ['application/json', 'application/a2a+json']);
  assert.deepEqual(send.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/A2ASendMessageRequest' });
  assert.deepEqual(send.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/A2ASendMessageResponse' });
  for (const status of ['400', '401', '404', '409', '413', '415', '423', '429', '507']) {
    const ref = send.responses[status].$ref.split('/').pop();
    assert.deepEqual(doc.components.responses[ref].content['application/json'].schema, { $ref: '#/components/schemas/A2AError' }, status);
  }
  assert.equal(doc.paths['/a2a/tasks/{id}'].get.responses['404'].$ref, '#/components/responses/A2AErrorNotFound');
  assert.ok(doc.paths['/a2a/tasks/{id}/pushNotificationConfigs/{configId}'].delete);
  assert.ok(doc.paths['/.well-known/agent-card.json'].get.responses['304']);
  assert.deepEqual(doc.paths['/.well-known/agent.json'].get.security, []);
});

/** The service in this process (for options a child process cannot take); closed after the test. */
async function inProcess(t, opts = {}, env = {}) {
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: tempDir(t), FORUM_RATE_LIMITS: 'off', ...env });
  const svc = await startService(config, opts);
  t.after(() => svc.close());
  const h = {
    svc,
    post: (path, body, token, headers) => api(svc.url, 'POST', path, { body, token, headers }),
    register: async () => (await h.post('/api/register', { name: 'a', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true })).body,
  };
  return h;
}

test('an action whose REST endpoint is not installed answers UnsupportedOperation', async (t) => {
  const h = await inProcess(t, { routes: publicRoutes().filter((r) => r.path !== '/api/search') });
  const { token } = await h.register();
  const res = await send(h, token, 'read', { q: 'x' });
  assert.match(a2aError(res, 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION').message, /GET \/api\/search/);
  dataOf(await send(h, token, 'status'), 'status');
});

test('low disk answers 507 to A2A writes before anything is written, while A2A reads work', async (t) => {
  let freeBytes = 10 * 1024 ** 3;
  const clock = new ManualClock();
  const h = await inProcess(t, { clock, freeBytes: () => freeBytes }, { FORUM_MIN_FREE_BYTES: String(1024 ** 2) });
  const { token } = await h.register();
  const topic = dataOf(await send(h, token, 'topic', { title: 't' }), 'topic').result;
  freeBytes = 0;
  clock.advance(DISK_CHECK_INTERVAL_MS); // the free space is re-measured at most once per interval
  const head = h.svc.app.log.headSeq;
  const res = await send(h, token, 'post', { topicId: topic.id, content: 'no space' });
  assert.match(a2aError(res, 507, 'RESOURCE_EXHAUSTED', 'LOW_DISK_SPACE').message, /FORUM_MIN_FREE_BYTES/);
  assert.equal(h.svc.app.log.headSeq, head, 'nothing was written');
  dataOf(await send(h, token, 'changes', {}), 'changes');
});
