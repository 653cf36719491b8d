/**
 * Issue 20: every error carries a documented stable `code` (REST `{error, code}`, A2A ErrorInfo
 * `reason`), request ids round-trip, a 500 is logged as one JSON line with its request id and no
 * token. The catalogue is schemas/ErrorCode.json, served in /openapi.json.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startInProcess } from '../helpers/inprocess.mjs';
import { rawExchange } from '../helpers/raw.mjs';
import { ROOT, cli } from '../helpers/server.mjs';
import { keyPair, possess } from '../helpers/signing.mjs';
import { publicRoutes } from '../../dist/api/routes.js';
import { ERROR_CATALOGUE, ERROR_CODES } from '../../dist/errors.js';
import { setLogSink } from '../../dist/logger.js';
import { ManualClock } from '../../dist/clock.js';
import { nextPositionBase } from '../../dist/domain/positions.js';
import { AGENT_TOKENS_MAX, DISK_CHECK_INTERVAL_MS } from '../../dist/constants.js';
import { adminSocketPath } from '../../dist/admin/socket-path.js';
import { Agent, request } from 'undici';

const catalogue = JSON.parse(readFileSync(join(ROOT, 'schemas', 'ErrorCode.json'), 'utf8')).oneOf;
const V = { 'a2a-version': '1.0' };

const rawBody = (out) => JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4));

test('the code list in the source is the catalogue in schemas/ErrorCode.json, each entry with a status and a description', () => {
  assert.deepEqual([...ERROR_CODES].sort(), catalogue.map((e) => e.const).sort());
  for (const e of catalogue) {
    assert.ok(Array.isArray(e['x-status']) && e['x-status'].every((s) => s >= 400 && s <= 599), e.const);
    assert.ok(e.description.length > 20, e.const);
  }
});

test('every error status is one of the spec\'s (part 7): no code answers a status the spec does not list', () => {
  const SPEC_STATUSES = [400, 401, 403, 404, 409, 413, 415, 423, 429, 500, 503, 507];
  // HTTP's own refusals of a request that is no operation yet (its method, head, target or
  // expectation), answered before any route runs: each code has its one status, listed here.
  const HTTP_LEVEL = { METHOD_NOT_ALLOWED: 405, REQUEST_TIMEOUT: 408, URI_TOO_LONG: 414, EXPECTATION_FAILED: 417, HEADERS_TOO_LARGE: 431 };
  const allowed = (code, status) => SPEC_STATUSES.includes(status) || HTTP_LEVEL[code] === status;
  for (const e of catalogue) for (const status of e['x-status']) assert.ok(allowed(e.const, status), `${e.const} answers ${status}`);
});

test('the status the source renders for each code is the one schemas/ErrorCode.json documents', () => {
  for (const e of catalogue) assert.deepEqual([ERROR_CATALOGUE[e.const].status], e['x-status'], e.const);
  assert.deepEqual(Object.keys(ERROR_CATALOGUE).sort(), [...ERROR_CODES].sort());
});

test('every code of the catalogue is provoked through the API, and each error body carries the code its status documents', async (t) => {
  let free = 10 * 1024 ** 3;
  const clock = new ManualClock();
  const boom = { method: 'GET', path: '/api/test-boom', auth: 'public', operationId: 'testBoom', summary: 'test', tag: 'Test', handler: () => { throw new Error('boom'); } };
  const h = await startInProcess(t, {
    env: { FORUM_RATE_LIMITS: 'on', FORUM_MAX_AGENTS: '3', FORUM_MIN_FREE_BYTES: String(1024 ** 2) },
    routes: [...publicRoutes(), boom],
    freeBytes: () => free,
    clock,
  });
  // The request timeout is provoked on a second service with short server timeouts; the walk runs
  // on default ones, so a loaded CI machine stalling a connection for 300 ms cannot turn one of its
  // ordinary requests into a 408.
  const slow = await startInProcess(t, {
    timeouts: { headersTimeoutMs: 300, requestTimeoutMs: 500, keepAliveTimeoutMs: 500, checkIntervalMs: 50, socketIdleTimeoutMs: 5000 },
  });
  const slowAgent = await slow.register('slow');
  t.mock.method(console, 'error', () => {});
  const restore = setLogSink(() => {});
  t.after(restore);
  const seen = new Map();
  const statusOf = new Map(catalogue.map((e) => [e.const, e['x-status']]));
  /** Records the code of an error answer (REST body or A2A ErrorInfo) and checks its status. */
  const saw = (res, expected) => {
    const info = res.body?.error?.details?.find((d) => d['@type']?.endsWith('ErrorInfo'));
    const code = info ? info.reason : res.body?.code;
    assert.equal(code, expected, `${res.status} ${JSON.stringify(res.body)}`);
    assert.ok(statusOf.get(code)?.includes(res.status), `${code} documents status ${res.status}`);
    if (!info) assert.equal(typeof res.body.error, 'string');
    seen.set(code, (seen.get(code) ?? 0) + 1);
  };
  const sawRaw = (out, expected) => {
    const status = Number(/^HTTP\/1.1 (\d{3})/.exec(out)?.[1]);
    saw({ status, body: rawBody(out) }, expected);
  };

  const a = await h.register('a');
  const b = await h.register('b');
  const op = (await cli(['--data-dir', h.dataDir, 'operator', 'create', '--name', 'op'])).json;
  const topicRes = await h.post('/api/topics', { title: 'codes' }, a.token);
  assert.equal(topicRes.status, 201, JSON.stringify(topicRes.body));
  const topic = topicRes.body;

  saw(await h.post('/api/messages', { topicId: topic.id, content: '', clientId: 'c1' }, a.token), 'VALIDATION');
  saw(await h.request('POST', '/api/messages', { token: a.token, raw: '{"topicId":', headers: { 'content-type': 'application/json' } }), 'MALFORMED_JSON');
  saw(await h.get('/api/messages?q=%FF', a.token), 'BAD_TARGET');
  sawRaw(await rawExchange(h.url, ['XXXX garbage\r\n\r\n'], { endAfter: false }), 'MALFORMED_REQUEST');
  saw(await h.get('/api/topics', 'not-a-token'), 'UNAUTHORIZED');
  const created = await h.post('/api/knowledge', { title: 't', content: 'c', category: 'opinion' }, a.token);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const k = created.body;
  saw(await h.post('/api/knowledge', { title: 't', content: 'c2', category: 'opinion', previousId: k.id, expectedRevision: 1 }, b.token), 'NOT_AUTHOR');
  saw(await h.post('/api/knowledge', { title: 't', content: 'c2', category: 'opinion', previousId: k.id, expectedRevision: 9 }, a.token), 'REVISION_CONFLICT');
  const workRes = await h.post('/api/work', { clientId: 'w1', title: 'w', description: 'd', acceptanceCriteria: 'a' }, a.token);
  assert.equal(workRes.status, 201, JSON.stringify(workRes.body));
  const work = workRes.body;
  saw(await h.post('/api/work/action', { action: 'claim', workItemId: work.id, expectedRevision: 1, clientId: 'x1' }, a.token), 'WORK_ROLE');
  saw(await h.get('/api/flags', a.token), 'OPERATOR_ONLY');
  saw(await h.post('/api/work/action', { action: 'submit', workItemId: work.id, expectedRevision: 1, clientId: 'x2', content: 'r' }, b.token), 'WORK_STATE');
  saw(await h.post('/api/work', { clientId: 'w1', title: 'other', description: 'd', acceptanceCriteria: 'a' }, a.token), 'IDEMPOTENCY_CONFLICT');
  assert.equal((await h.post('/api/work/action', { action: 'cancel', workItemId: work.id, expectedRevision: 1, clientId: 'x3' }, a.token)).status, 200);
  saw(await h.post('/api/work/action', { action: 'claim', workItemId: work.id, expectedRevision: 2, clientId: 'x4' }, b.token), 'WORK_CLOSED');
  // The tokens an agent manages (issue 53): a read-only token may not write; named tokens are bounded.
  const readOnly = await h.post('/api/me/tokens', { name: 'ro', scopes: ['read'] }, b.token);
  assert.equal(readOnly.status, 201, JSON.stringify(readOnly.body));
  saw(await h.post('/api/topics', { title: 'never' }, readOnly.body.token), 'TOKEN_SCOPE');
  for (let i = 1; i < AGENT_TOKENS_MAX; i++) assert.equal((await h.post('/api/me/tokens', { name: `t${i}`, scopes: ['read'] }, b.token)).status, 201);
  saw(await h.post('/api/me/tokens', { name: 'one more', scopes: ['read'] }, b.token), 'CREDENTIAL_LIMIT');
  // Device codes (issue 55): a code adds one device. On the second service, whose rate limits are
  // off: a redemption counts toward the registration limit this walk spends on sign-ups.
  const deviceCode = await slow.post('/api/me/device-codes', {}, slowAgent.token);
  assert.equal(deviceCode.status, 201, JSON.stringify(deviceCode.body));
  assert.equal((await slow.post('/api/device-codes/redeem', { code: deviceCode.body.code })).status, 201);
  saw(await slow.post('/api/device-codes/redeem', { code: deviceCode.body.code }), 'DEVICE_CODE_GONE');
  // Signing keys (issue 53): one active key at a time.
  const originId = (await h.get('/api/status')).body.originId;
  const keyFor = async (agent) => {
    const key = keyPair();
    return h.post('/api/me/keys', { publicKey: key.publicKey, proof: key.sign(possess(originId, agent.id, key.publicKey)) }, agent.token);
  };
  assert.equal((await keyFor(b)).status, 201);
  saw(await keyFor(b), 'KEY_STATE');
  saw(await h.post('/api/messages', { topicId: 'tp_nope', content: 'x', clientId: 'c2' }, a.token), 'NOT_FOUND');
  const gone = await h.post('/api/messages', { topicId: topic.id, content: 'gone', clientId: 'e1' }, a.token);
  const goneTopic = await h.post('/api/topics', { title: 'gone' }, a.token);
  for (const target of [{ type: 'message', id: gone.body.id }, { type: 'topic', id: goneTopic.body.id }]) {
    assert.equal((await h.post('/api/moderation/actions', { action: 'erase', target, reason: 'x' }, op.token)).status, 201);
  }
  saw(await h.post('/api/messages', { topicId: topic.id, content: 'gone', clientId: 'e1' }, a.token), 'ERASED');
  saw(await h.post('/api/messages', { topicId: goneTopic.body.id, content: 'new', clientId: 'e2' }, a.token), 'ERASED_CONTAINER');
  saw(await h.request('DELETE', '/api/topics', { token: a.token }), 'METHOD_NOT_ALLOWED');
  saw(await h.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, a.token, { origin: 'http://evil.example', accept: 'application/json, text/event-stream' }), 'ORIGIN_NOT_ALLOWED');
  sawRaw(await rawExchange(slow.url, [`POST /api/topics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${slowAgent.token}\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n`, '{', '"'], { delayMs: 400, endAfter: false }), 'REQUEST_TIMEOUT');
  // The operator's own errors (admin channel, what the CLI receives) use the same catalogue.
  assert.equal((await admin(h, 'rooms.create', { id: 'lab', name: 'Lab' })).status, 200);
  saw(await admin(h, 'rooms.create', { id: 'lab', name: 'Lab' }), 'ALREADY_EXISTS');
  const origin = randomUUID();
  saw(await h.get(`/api/changes?after=1&originId=${origin}`, a.token), 'CURSOR_ORIGIN');
  saw(await h.get(`/api/exchange?topicId=${topic.id}&through=999999&originId=${h.app.log.originId}`, a.token), 'CURSOR_AHEAD');
  // Issue 50: a change of writer (the epoch record a promoted follower writes) makes positions jump;
  // a cursor just past the last position before the jump names records a failover lost.
  const fork = h.app.state.positions.positionOf(h.app.log.headSeq);
  h.app.commit('replication.epoch', { epoch: 2, writer: 'w', leaderUrl: 'http://127.0.0.1:1', positionBase: nextPositionBase(fork) });
  saw(await h.get(`/api/changes?after=${fork + 1}&originId=${h.app.log.originId}`, a.token), 'CURSOR_LOST');
  saw(await h.request('POST', '/api/messages', { token: a.token, raw: 'x'.repeat(40000), headers: { 'content-type': 'application/json' } }), 'BODY_TOO_LARGE');
  saw(await h.get(`/api/topics?${'q'.repeat(9000)}`, a.token), 'URI_TOO_LONG');
  saw(await h.request('POST', '/api/topics', { token: a.token, raw: '{"title":"x"}', headers: { 'content-type': 'text/plain' } }), 'UNSUPPORTED_MEDIA_TYPE');
  sawRaw(await rawExchange(h.url, ['GET /api/status HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n'], { endAfter: false }), 'EXPECTATION_FAILED');
  const flood = Array.from({ length: 400 }, (_, i) => `X-Flood-${i}: ${'y'.repeat(60)}\r\n`).join('');
  sawRaw(await rawExchange(h.url, [`GET /api/status HTTP/1.1\r\nHost: x\r\n${flood}\r\n`], { endAfter: false }), 'HEADERS_TOO_LARGE');
  const internal = await h.get('/api/test-boom');
  saw(internal, 'INTERNAL');
  assert.equal(internal.body.requestId, internal.headers['x-request-id']);
  await cli(['--data-dir', h.dataDir, 'writes', 'stop']);
  saw(await h.post('/api/topics', { title: 'x' }, a.token), 'WRITE_STOP');
  await cli(['--data-dir', h.dataDir, 'writes', 'resume']);
  await cli(['--data-dir', h.dataDir, 'registration', 'close']);
  saw(await h.post('/api/register', { name: 'c', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true }), 'REGISTRATION_CLOSED');
  await cli(['--data-dir', h.dataDir, 'registration', 'open']);
  await h.register('c');
  saw(await h.post('/api/register', { name: 'd', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true }), 'PARTICIPANT_LIMIT');
  free = 0;
  clock.advance(DISK_CHECK_INTERVAL_MS);
  saw(await h.post('/api/topics', { title: 'x' }, a.token), 'LOW_DISK_SPACE');
  free = 10 * 1024 ** 3;
  let limited;
  for (let i = 0; i < 40 && !limited; i++) {
    const res = await h.post('/api/topics', { title: `t${i}` }, b.token);
    if (res.status === 429) limited = res;
  }
  saw(limited, 'RATE_LIMITED');
  h.service.protections.shutdown.stopping = true;
  saw(await h.get('/api/status'), 'UNAVAILABLE');
  h.service.protections.shutdown.stopping = false;

  // A2A-only codes, as A2A ErrorInfo reasons.
  const envelope = (parts, extra = {}) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts, ...extra } });
  const statusPart = [{ data: { action: 'status' }, mediaType: 'application/json' }];
  saw(await h.request('GET', '/a2a/tasks/t1', { token: op.token, headers: V }), 'TASK_NOT_FOUND');
  saw(await h.request('GET', '/a2a/extendedAgentCard', { token: op.token, headers: V }), 'UNSUPPORTED_OPERATION');
  saw(await h.request('GET', '/a2a/tasks/t1/pushNotificationConfigs', { token: op.token, headers: V }), 'PUSH_NOTIFICATION_NOT_SUPPORTED');
  saw(await h.post('/a2a/message:send', envelope(statusPart), op.token), 'VERSION_NOT_SUPPORTED');
  saw(await h.post('/a2a/message:send', envelope([{ text: 'hello' }]), op.token, V), 'CONTENT_TYPE_NOT_SUPPORTED');
  // Each field within its character limit, but \u0001 serializes to 6 bytes and € to 3.
  saw(await h.post('/api/work', { clientId: 'w3', title: 'x', description: '\u0001'.repeat(3000), acceptanceCriteria: '€'.repeat(2000) }, op.token), 'WORK_SNAPSHOT_TOO_LARGE');

  // The catalogue walked is the one /openapi.json publishes.
  const published = (await h.get('/openapi.json')).body.components.schemas.ErrorCode.oneOf.map((e) => e.const);
  assert.deepEqual(published, catalogue.map((e) => e.const));
  // Replication's codes need an object store and a second server: their own black-box tests
  // provoke each and check its status and body; here it is checked that they still do.
  for (const [code, file] of PROVOKED_ELSEWHERE) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    assert.ok(text.includes(`'${code}'`) && /status, 503\)/.test(text), `${file} provokes ${code} and checks its 503`);
    seen.set(code, file);
  }
  const missing = published.filter((c) => !seen.has(c));
  assert.deepEqual(missing, [], `codes never provoked: ${missing.join(', ')}`);
});

/** Codes provoked by the replication tests (a real object store, several servers), and where. */
const PROVOKED_ELSEWHERE = [
  ['REPLICA_UNAVAILABLE', 'test/http/replication.test.mjs'],
  ['REPLICA_FENCED', 'test/http/replication.test.mjs'],
  ['FOLLOWER_READ_ONLY', 'test/http/followers.test.mjs'],
];

/** Runs an operator command on the admin channel (a Unix socket in the data folder), as the CLI does. */
async function admin(h, name, args) {
  const res = await request(`http://localhost/${name}`, {
    method: 'POST',
    dispatcher: new Agent({ connect: { socketPath: adminSocketPath(h.dataDir) } }),
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(args),
  });
  return { status: res.statusCode, body: await res.body.json() };
}

test('X-Request-Id: a well-formed one is echoed, a malformed one is replaced by a UUID, and every answer carries one', async (t) => {
  const h = await startInProcess(t);
  const mine = await h.get('/api/status', undefined, { 'x-request-id': 'client-42.a:b_c' });
  assert.equal(mine.headers['x-request-id'], 'client-42.a:b_c');
  const bad = await h.get('/api/status', undefined, { 'x-request-id': 'has spaces and <html>' });
  assert.match(bad.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  const long = await h.get('/api/status', undefined, { 'x-request-id': 'x'.repeat(129) });
  assert.match(long.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  const none = await h.get('/api/nothing', undefined, { 'x-request-id': 'err-1' });
  assert.equal(none.status, 404);
  assert.equal(none.headers['x-request-id'], 'err-1');
  assert.equal(none.body.code, 'NOT_FOUND');
  assert.notEqual((await h.get('/api/status')).headers['x-request-id'], (await h.get('/api/status')).headers['x-request-id']);
  const raw = await rawExchange(h.url, ['NOT HTTP\r\n\r\n'], { endAfter: false });
  assert.match(raw, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/);
  const cors = await h.get('/api/status', undefined, { origin: 'https://example.org' });
  assert.match(cors.headers['access-control-expose-headers'], /X-Request-Id/);
});

test('a 500 is logged as one JSON line with its request id, method, route and agent, and never the token', async (t) => {
  const boom = { method: 'POST', path: '/api/test-boom', auth: 'bearer', operationId: 'testBoom', summary: 'test', tag: 'Test', handler: () => { throw new Error('boom in a handler'); } };
  const h = await startInProcess(t, { routes: [...publicRoutes(), boom] });
  const a = await h.register('a');
  const lines = [];
  t.after(setLogSink((level, line) => lines.push({ level, line })));
  const res = await h.post('/api/test-boom', {}, a.token, { 'x-request-id': 'boom-1' });
  assert.equal(res.status, 500);
  assert.deepEqual(Object.keys(res.body).sort(), ['code', 'error', 'requestId']);
  assert.equal(res.body.requestId, 'boom-1');
  assert.doesNotMatch(JSON.stringify(res.body), /boom in a handler|at /, 'no stack in the answer');
  const errors = lines.filter((l) => l.level === 'error');
  assert.equal(errors.length, 1, JSON.stringify(lines));
  const entry = JSON.parse(errors[0].line);
  assert.equal(entry.event, 'internal_error');
  assert.equal(entry.requestId, 'boom-1');
  assert.equal(entry.method, 'POST');
  assert.equal(entry.route, '/api/test-boom');
  assert.equal(entry.agentId, a.id);
  assert.match(entry.err, /boom in a handler/);
  assert.match(entry.time, /^\d{4}-\d\d-\d\dT/);
  assert.ok(!errors[0].line.includes(a.token), 'the token is not logged');
});

test('FORUM_ACCESS_LOG=on writes one JSON line per request (method, route, status, ms, request id, agent); off writes none', async (t) => {
  const lines = [];
  t.after(setLogSink((level, line) => lines.push(JSON.parse(line))));
  const on = await startInProcess(t, { env: { FORUM_ACCESS_LOG: 'on' } });
  const a = await on.register('a');
  await on.get('/api/topics', a.token, { 'x-request-id': 'acc-1' });
  const entry = lines.find((l) => l.event === 'request' && l.requestId === 'acc-1');
  assert.ok(entry, JSON.stringify(lines));
  assert.equal(entry.level, 'info');
  assert.equal(entry.method, 'GET');
  assert.equal(entry.route, '/api/topics');
  assert.equal(entry.status, 200);
  assert.equal(entry.agentId, a.id);
  assert.equal(typeof entry.ms, 'number');
  assert.ok(!JSON.stringify(lines).includes(a.token), 'no token in any line');
  const off = await startInProcess(t);
  const before = lines.filter((l) => l.event === 'request').length;
  await off.get('/api/status', undefined, { 'x-request-id': 'acc-2' });
  assert.equal(lines.filter((l) => l.event === 'request').length, before);
});
