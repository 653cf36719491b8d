/**
 * A2A 1.0.1 (issue 54): the HTTP+JSON binding accepts and answers application/a2a+json (§11.1)
 * beside application/json, chosen by content negotiation (Accept, RFC 9110 §12.5.1; Vary:
 * Accept) — results and google.rpc.Status errors alike; the A2A-specific errors keep 1.0.1's
 * mappings (§5.4) in either media type, and the A2A-Version rules (§3.6) hold. The built server,
 * spoken to over HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sharedServer } from '../helpers/server.mjs';

/** One server for the file: each test registers its own agent. */
const server = sharedServer();

const A2A = 'application/a2a+json';
const JSON_TYPE = 'application/json; charset=utf-8';
const V = { 'a2a-version': '1.0' };

/** A SendMessageRequest running `action`. */
const envelope = (action, input) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: input === undefined ? { action } : { action, input }, mediaType: 'application/json' }] } });

/** POST /a2a/message:send with `headers`, the body sent as `contentType`. */
function send(s, token, headers, contentType = 'application/json', action = 'status') {
  return s.request('POST', '/a2a/message:send', { token, raw: JSON.stringify(envelope(action)), headers: { ...V, 'content-type': contentType, ...headers } });
}

test('message:send answers application/a2a+json when the client prefers it and application/json otherwise, with Vary: Accept and the same body', async () => {
  const s = await server();
  const { token } = await s.register('media');
  const cases = [
    // [Accept, request Content-Type, expected answer]
    [undefined, 'application/json', JSON_TYPE],
    [undefined, A2A, A2A],
    ['*/*', A2A, A2A],
    ['*/*', 'application/json', JSON_TYPE],
    [A2A, 'application/json', A2A],
    ['application/json', A2A, JSON_TYPE],
    ['application/json;q=0.5, application/a2a+json', 'application/json', A2A],
    ['application/a2a+json;q=0.4, application/json;q=0.9', A2A, JSON_TYPE],
    ['application/*', A2A, A2A],
    ['application/a2a+json;q=0, */*', A2A, JSON_TYPE],
    ['text/html', A2A, JSON_TYPE],
  ];
  let first;
  for (const [accept, contentType, expected] of cases) {
    const res = await send(s, token, accept === undefined ? {} : { accept }, contentType);
    const label = `Accept ${accept ?? '(none)'}, sent as ${contentType}`;
    assert.equal(res.status, 200, `${label}: ${JSON.stringify(res.body)}`);
    assert.equal(res.headers['content-type'], expected, label);
    assert.match(res.headers.vary ?? '', /\bAccept\b/i, `${label}: Vary names Accept`);
    const data = res.body.message.parts[0].data;
    assert.equal(data.action, 'status');
    first ??= Object.keys(res.body.message).sort();
    assert.deepEqual(Object.keys(res.body.message).sort(), first, `${label}: the same message shape`);
  }
});

test('GET /a2a/tasks and the A2A errors (google.rpc.Status) are negotiated the same way, also for a 401 before authentication', async () => {
  const s = await server();
  const { token } = await s.register('media-errors');
  const prefer = { ...V, accept: A2A };

  const list = await s.request('GET', '/a2a/tasks', { token, headers: prefer });
  assert.equal(list.status, 200);
  assert.equal(list.headers['content-type'], A2A);
  assert.deepEqual(list.body.tasks, []);
  assert.equal((await s.request('GET', '/a2a/tasks', { token, headers: V })).headers['content-type'], JSON_TYPE);

  const notFound = await s.request('GET', '/a2a/tasks/t-1', { token, headers: prefer });
  assert.equal(notFound.status, 404);
  assert.equal(notFound.headers['content-type'], A2A);
  assert.match(notFound.headers.vary ?? '', /\bAccept\b/i);
  assert.equal(notFound.body.error.details[0].reason, 'TASK_NOT_FOUND');
  assert.equal((await s.request('GET', '/a2a/tasks/t-1', { token, headers: V })).headers['content-type'], JSON_TYPE);

  const anonymous = await s.request('POST', '/a2a/message:send', { raw: JSON.stringify(envelope('status')), headers: { ...prefer, 'content-type': A2A } });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.headers['content-type'], A2A);
  assert.equal(anonymous.body.error.status, 'UNAUTHENTICATED');

  // REST keeps its own media type whatever Accept says.
  assert.equal((await s.get('/api/status', undefined, { accept: A2A })).headers['content-type'], JSON_TYPE);
});

test('the A2A-specific errors keep the A2A 1.0.1 mappings (HTTP status, google.rpc.Code, ErrorInfo reason and domain) in application/a2a+json', async () => {
  const s = await server();
  const { token } = await s.register('media-mappings');
  const prefer = { ...V, accept: A2A };
  const body = (message) => JSON.stringify({ message: { messageId: randomUUID(), role: 'ROLE_USER', ...message } });
  const cases = [
    ['TaskNotFound', () => s.request('POST', '/a2a/tasks/t-2:cancel', { token, raw: '{}', headers: { ...prefer, 'content-type': A2A } }), 404, 'NOT_FOUND', 'TASK_NOT_FOUND'],
    ['UnsupportedOperation', () => s.request('POST', '/a2a/message:stream', { token, raw: body({ parts: [{ data: { action: 'status' } }] }), headers: { ...prefer, 'content-type': A2A } }), 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION'],
    ['PushNotificationNotSupported', () => s.request('GET', '/a2a/tasks/t-3/pushNotificationConfigs', { token, headers: prefer }), 400, 'FAILED_PRECONDITION', 'PUSH_NOTIFICATION_NOT_SUPPORTED'],
    ['ContentTypeNotSupported', () => s.request('POST', '/a2a/message:send', { token, raw: body({ parts: [{ text: 'hello' }] }), headers: { ...prefer, 'content-type': A2A } }), 400, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED'],
    ['VersionNotSupported (no A2A-Version: 0.3)', () => s.request('GET', '/a2a/tasks', { token, headers: { accept: A2A } }), 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED'],
    ['VersionNotSupported (1.1)', () => s.request('GET', '/a2a/tasks', { token, headers: { accept: A2A, 'a2a-version': '1.1' } }), 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED'],
  ];
  for (const [name, call, status, rpcStatus, reason] of cases) {
    const res = await call();
    assert.equal(res.status, status, `${name}: ${JSON.stringify(res.body)}`);
    assert.equal(res.headers['content-type'], A2A, name);
    assert.equal(res.body.error.code, status, name);
    assert.equal(res.body.error.status, rpcStatus, name);
    const info = res.body.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
    assert.deepEqual([info.reason, info.domain], [reason, 'a2a-protocol.org'], name);
  }
  // A2A-Version: Major.Minor decides; a 1.0 patch is the same protocol (§3.6), the query
  // parameter stands in for a missing header.
  for (const headers of [{ 'a2a-version': '1.0.1' }, {}]) {
    const path = headers['a2a-version'] ? '/a2a/tasks' : '/a2a/tasks?A2A-Version=1.0';
    assert.equal((await s.request('GET', path, { token, headers: { accept: A2A, ...headers } })).status, 200, JSON.stringify(headers));
  }
});

test('/openapi.json documents application/a2a+json beside application/json for A2A answers and errors', async () => {
  const s = await server();
  const doc = (await s.get('/openapi.json')).body;
  const sendOp = doc.paths['/a2a/message:send'].post;
  assert.deepEqual(Object.keys(sendOp.requestBody.content), ['application/json', A2A]);
  assert.deepEqual(Object.keys(sendOp.responses['200'].content), ['application/json', A2A]);
  assert.deepEqual(sendOp.responses['200'].content[A2A].schema, { $ref: '#/components/schemas/A2ASendMessageResponse' });
  assert.deepEqual(Object.keys(doc.paths['/a2a/tasks'].get.responses['200'].content), ['application/json', A2A]);
  assert.deepEqual(Object.keys(doc.components.responses.A2AErrorNotFound.content), ['application/json', A2A]);
  assert.deepEqual(Object.keys(doc.components.responses.NotFound.content), ['application/json'], 'REST errors stay application/json');
});
