import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { api, cli, startServer } from '../helpers/server.mjs';
import { startInProcess } from '../helpers/inprocess.mjs';
import { ManualClock } from '../../dist/clock.js';
import { publicRoutes } from '../../dist/api/routes.js';
import { A2A_ACTIONS } from '../../dist/api/a2a/dispatch.js';
import { commands } from '../../dist/admin/commands.js';
import { loadConfig } from '../../dist/config.js';
import {
  CHANGE_READS_PER_TOKEN_PER_MINUTE,
  CLIENT_SHARE_PERCENT_DEFAULT,
  DISK_CHECK_INTERVAL_MS,
  PUBLIC_REQUESTS_PER_MINUTE,
  REGISTRATIONS_PER_IP_PER_HOUR,
  WRITES_PER_TOKEN_PER_MINUTE,
} from '../../dist/constants.js';

const REGISTER_BODY = { name: 'agent', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true };

/**
 * Starts the service in-process with a ManualClock and rate limits ON unless `env` says
 * otherwise; `register(headers)` registers with extra request headers.
 */
async function inProcess(t, env = {}, opts = {}) {
  const h = await startInProcess(t, { env: { FORUM_RATE_LIMITS: 'on', ...env }, clock: new ManualClock(), ...opts });
  const register = h.register;
  h.register = (headers) => register('agent', headers);
  return h;
}

/**
 * Every POST route of the table, with a concrete path. Dispatching routes (POST /a2a/message:send)
 * apply write stop and low disk per action, to the route they run; test/http/a2a.test.mjs covers them.
 */
const postPaths = () =>
  publicRoutes()
    .filter((r) => r.method === 'POST' && !r.dispatch)
    .map((r) => r.path.replace(/\/\*$/, '/x'));

test('the 31st write of a token in a minute gets 429 with Retry-After and RateLimit headers; the window frees on time', async (t) => {
  const s = await inProcess(t);
  const a = await s.register();
  const b = await s.register();
  const first = await s.post('/api/topics', { title: 't0' }, a.token);
  assert.equal(first.status, 201);
  assert.equal(first.headers['ratelimit-limit'], String(WRITES_PER_TOKEN_PER_MINUTE));
  assert.equal(first.headers['ratelimit-remaining'], String(WRITES_PER_TOKEN_PER_MINUTE - 1));
  assert.equal(first.headers['ratelimit-reset'], '60');
  s.clock.advance(10_000);
  for (let i = 1; i < WRITES_PER_TOKEN_PER_MINUTE; i++) {
    const res = await s.post('/api/topics', { title: `t${i}` }, a.token);
    assert.equal(res.status, 201);
    assert.equal(res.headers['ratelimit-remaining'], String(WRITES_PER_TOKEN_PER_MINUTE - 1 - i));
    assert.equal(res.headers['ratelimit-reset'], '50', 'the first write leaves the window 50 s from now');
  }
  const refused = await s.post('/api/topics', { title: 'one too many' }, a.token);
  assert.equal(refused.status, 429);
  assert.match(refused.body.error, /30 writes per token per minute/);
  assert.equal(refused.headers['retry-after'], '50');
  assert.equal(refused.headers['ratelimit-limit'], '30');
  assert.equal(refused.headers['ratelimit-remaining'], '0');
  assert.equal(refused.headers['ratelimit-reset'], '50');
  // A message write shares the same budget.
  assert.equal((await s.post('/api/messages', { topicId: first.body.id, content: 'x', clientId: 'c1' }, a.token)).status, 429);

  // Another token is unaffected.
  const other = await s.post('/api/topics', { title: 'b' }, b.token);
  assert.equal(other.status, 201);
  assert.equal(other.headers['ratelimit-remaining'], String(WRITES_PER_TOKEN_PER_MINUTE - 1));

  s.clock.advance(49_999);
  const stillRefused = await s.post('/api/topics', { title: 'almost' }, a.token);
  assert.equal(stillRefused.status, 429);
  assert.equal(stillRefused.headers['retry-after'], '1');
  s.clock.advance(1);
  const freed = await s.post('/api/topics', { title: 'on time' }, a.token);
  assert.equal(freed.status, 201, 'exactly one minute after the first write a slot is free');
  assert.equal(freed.headers['ratelimit-remaining'], '0');
  const again = await s.post('/api/topics', { title: 'next' }, a.token);
  assert.equal(again.status, 429);
  assert.equal(again.headers['retry-after'], '10', 'the writes made at +10 s leave the window at +70 s');

  // Refused writes wrote nothing: 30 + 1 by a, 1 by b.
  const topics = await s.get('/api/topics', a.token);
  assert.equal(topics.body.length, WRITES_PER_TOKEN_PER_MINUTE + 2);
});

test('a write refused after authentication still takes a slot; one refused with 401 does not', async (t) => {
  const s = await inProcess(t);
  const a = await s.register();
  for (let i = 0; i < WRITES_PER_TOKEN_PER_MINUTE; i++) {
    const res = await s.post('/api/topics', { title: '' }, a.token);
    assert.equal(res.status, 400);
    assert.equal(res.headers['ratelimit-remaining'], String(WRITES_PER_TOKEN_PER_MINUTE - 1 - i), 'RateLimit headers ride on error responses too');
  }
  assert.equal((await s.post('/api/topics', { title: 'ok' }, a.token)).status, 429);
  const b = await s.register();
  for (let i = 0; i < 50; i++) assert.equal((await s.post('/api/topics', { title: 'x' }, 'wrong-token')).status, 401);
  assert.equal((await s.post('/api/topics', { title: 'ok' }, b.token)).status, 201);
});

test('the 6th registration from one IP in an hour gets 429; every attempt counts, valid or not', async (t) => {
  const s = await inProcess(t);
  for (let i = 0; i < REGISTRATIONS_PER_IP_PER_HOUR - 1; i++) {
    const res = await s.post('/api/register', REGISTER_BODY);
    assert.equal(res.status, 201);
    assert.equal(res.headers['ratelimit-limit'], String(REGISTRATIONS_PER_IP_PER_HOUR));
    assert.equal(res.headers['ratelimit-remaining'], String(REGISTRATIONS_PER_IP_PER_HOUR - 1 - i));
  }
  assert.equal((await s.post('/api/register', { ...REGISTER_BODY, operatorAuthorized: false })).status, 400);
  s.clock.advance(60_000);
  const refused = await s.post('/api/register', REGISTER_BODY);
  assert.equal(refused.status, 429);
  assert.match(refused.body.error, /5 registrations per IP per hour/);
  assert.equal(refused.headers['retry-after'], String(3600 - 60));
  assert.equal(refused.headers['ratelimit-remaining'], '0');
  assert.equal((await s.get('/api/status')).body.registeredAgents, REGISTRATIONS_PER_IP_PER_HOUR - 1);
  // Forwarding headers are ignored while FORUM_TRUST_PROXY is off: a client cannot pick its IP.
  assert.equal((await s.post('/api/register', REGISTER_BODY, undefined, { 'x-forwarded-for': '198.51.100.7' })).status, 429);
  assert.equal((await s.post('/api/register', REGISTER_BODY, undefined, { 'cf-connecting-ip': '198.51.100.8' })).status, 429);
  s.clock.advance(3600_000 - 60_000);
  assert.equal((await s.post('/api/register', REGISTER_BODY)).status, 201, 'an hour after the first attempt a slot is free');
});

test('FORUM_TRUST_PROXY=xff: the right-most X-Forwarded-For hop is the client IP; CF-Connecting-IP is ignored', async (t) => {
  const s = await inProcess(t, { FORUM_TRUST_PROXY: 'xff' });
  const viaProxy = (ip) => ({ 'x-forwarded-for': `203.0.113.50, ${ip}` });
  for (let i = 0; i < REGISTRATIONS_PER_IP_PER_HOUR; i++) await s.register(viaProxy('198.51.100.1'));
  assert.equal((await s.post('/api/register', REGISTER_BODY, undefined, viaProxy('198.51.100.1'))).status, 429);
  // The left-most (client-written) entry does not matter; the right-most hop does.
  assert.equal((await s.post('/api/register', REGISTER_BODY, undefined, { 'x-forwarded-for': '198.51.100.2, 198.51.100.1' })).status, 429);
  // A client behind a non-Cloudflare proxy cannot pick its IP with CF-Connecting-IP.
  assert.equal((await s.post('/api/register', REGISTER_BODY, undefined, { 'cf-connecting-ip': '198.51.100.9', ...viaProxy('198.51.100.1') })).status, 429);
  await s.register(viaProxy('198.51.100.2'));
  // The proxy's own address (no header) is another client.
  await s.register();
});

test('FORUM_TRUST_PROXY=cloudflare: CF-Connecting-IP is the client IP; X-Forwarded-For is ignored', async (t) => {
  const s = await inProcess(t, { FORUM_TRUST_PROXY: 'cloudflare' });
  const viaCloudflare = (ip) => ({ 'cf-connecting-ip': ip });
  for (let i = 0; i < REGISTRATIONS_PER_IP_PER_HOUR; i++) await s.register(viaCloudflare('198.51.100.1'));
  assert.equal((await s.post('/api/register', REGISTER_BODY, undefined, viaCloudflare('198.51.100.1'))).status, 429);
  assert.equal((await s.post('/api/register', REGISTER_BODY, undefined, { 'x-forwarded-for': '198.51.100.7', ...viaCloudflare('198.51.100.1') })).status, 429);
  await s.register(viaCloudflare('198.51.100.2'));
  // Without the header the peer address counts, whatever X-Forwarded-For says.
  for (let i = 0; i < REGISTRATIONS_PER_IP_PER_HOUR; i++) await s.register({ 'x-forwarded-for': `198.51.100.${10 + i}` });
  assert.equal((await s.post('/api/register', REGISTER_BODY, undefined, { 'x-forwarded-for': '198.51.100.99' })).status, 429);
});

test('FORUM_TRUST_PROXY=on (or any value but off, xff, cloudflare) stops startup naming the valid values', async (t) => {
  await assert.rejects(
    startServer(t, { env: { FORUM_TRUST_PROXY: 'on' } }),
    /FORUM_TRUST_PROXY must be one of off, xff, cloudflare, got "on"/,
  );
});

test('the write limit is on exactly the POST routes except /api/register and /api/device-codes/redeem (the registration limit); A2A writes count through the REST route they run', () => {
  const routes = publicRoutes();
  const key = (r) => `${r.method} ${r.path}`;
  const limited = routes.filter((r) => r.rateLimit === 'write').map(key).sort();
  const registrations = ['/api/register', '/api/device-codes/redeem'];
  const posts = routes.filter((r) => r.method === 'POST' && !registrations.includes(r.path) && !r.dispatch).map(key).sort();
  assert.deepEqual(limited, posts);
  assert.deepEqual(limited, [
    'POST /api/admin/agents/disable',
    'POST /api/admin/agents/enable',
    'POST /api/admin/agents/rotate-token',
    'POST /api/admin/registration',
    'POST /api/admin/rooms',
    'POST /api/admin/rooms/update',
    'POST /api/admin/writes',
    'POST /api/flags',
    'POST /api/flags/resolve',
    'POST /api/knowledge',
    'POST /api/me/device-codes',
    'POST /api/me/keys',
    'POST /api/me/keys/revoke',
    'POST /api/me/keys/rotate',
    'POST /api/me/kind',
    'POST /api/me/tokens',
    'POST /api/me/tokens/revoke',
    'POST /api/me/tokens/rotate',
    'POST /api/messages',
    'POST /api/moderation/actions',
    'POST /api/topics',
    'POST /api/work',
    'POST /api/work/action',
  ]);
  // POST /a2a/message:send carries no class itself: each action runs its REST route (ctx.runner),
  // whose class applies, so an A2A write takes one write slot and an A2A read none.
  const send = routes.find((r) => r.path === '/a2a/message:send');
  assert.equal(send.dispatch, true);
  assert.equal(send.rateLimit, undefined);
  for (const action of A2A_ACTIONS) {
    const target = routes.find((r) => r.method === action.method && r.path === action.path);
    assert.ok(target, `${action.method} ${action.path}`);
    if (action.method === 'POST') assert.equal(target.rateLimit, 'write', `${action.method} ${action.path}`);
  }
  for (const path of registrations) assert.equal(routes.find((r) => r.method === 'POST' && r.path === path).rateLimit, 'registration', path);
});

test('the change-read limit is on exactly /api/changes, /api/work/changes, /api/exchange, /api/receipts and /api/inbox', () => {
  const changeRead = publicRoutes().filter((r) => r.rateLimit === 'changeRead').map((r) => `${r.method} ${r.path}`).sort();
  assert.deepEqual(changeRead, ['GET /api/changes', 'GET /api/exchange', 'GET /api/inbox', 'GET /api/receipts', 'GET /api/work/changes']);
});

test('change reads are limited to 60 per token per minute across every change-read route', async (t) => {
  const routes = publicRoutes();
  const changeRoutes = routes.filter((r) => r.rateLimit === 'changeRead');
  assert.equal(changeRoutes.length, 5);
  const s = await inProcess(t, {}, { routes });
  const a = await s.register();
  const b = await s.register();
  for (let i = 0; i < CHANGE_READS_PER_TOKEN_PER_MINUTE; i++) {
    const route = changeRoutes[i % changeRoutes.length];
    const res = await s.get(route.path, a.token);
    assert.notEqual(res.status, 429, `${route.path} #${i}`);
    assert.equal(res.headers['ratelimit-limit'], String(CHANGE_READS_PER_TOKEN_PER_MINUTE));
    assert.equal(res.headers['ratelimit-remaining'], String(CHANGE_READS_PER_TOKEN_PER_MINUTE - 1 - i));
  }
  s.clock.advance(15_000);
  for (const route of changeRoutes) {
    const res = await s.get(route.path, a.token);
    assert.equal(res.status, 429, route.path);
    assert.equal(res.headers['retry-after'], '45');
    assert.match(res.body.error, /60 change reads per token per minute/);
  }
  assert.notEqual((await s.get(changeRoutes[0].path, b.token)).status, 429, 'another token is unaffected');
  assert.equal((await s.post('/api/topics', { title: 'writes are a separate budget' }, a.token)).status, 201);
  assert.equal((await s.get('/api/rooms', a.token)).status, 200, 'other reads are not change reads');
  s.clock.advance(45_000);
  assert.notEqual((await s.get(changeRoutes[0].path, a.token)).status, 429);
});

test('the public listener answers at most 600 requests per minute in total', async (t) => {
  // One client takes the whole total here only because its fair share is set to 100 %.
  const s = await inProcess(t, { FORUM_CLIENT_SHARE_PERCENT: '100' });
  const a = await s.register();
  // 1 request so far; fill the rest of the minute in parallel batches.
  let sent = 1;
  while (sent < PUBLIC_REQUESTS_PER_MINUTE) {
    const n = Math.min(50, PUBLIC_REQUESTS_PER_MINUTE - sent);
    const results = await Promise.all(Array.from({ length: n }, () => s.get('/api/status')));
    for (const r of results) assert.equal(r.status, 200);
    sent += n;
  }
  s.clock.advance(30_000);
  for (const res of [await s.get('/api/status'), await s.get('/api/rooms', a.token), await s.post('/api/topics', { title: 'x' }, a.token)]) {
    assert.equal(res.status, 429);
    assert.match(res.body.error, /600 requests per minute in total/);
    assert.equal(res.headers['retry-after'], '30');
    assert.equal(res.headers['ratelimit-limit'], String(PUBLIC_REQUESTS_PER_MINUTE));
    assert.equal(res.headers['ratelimit-remaining'], '0');
  }
  s.clock.advance(30_000);
  assert.equal((await s.get('/api/status')).status, 200);
});

/** Sends `n` GET /api/status from client address `ip` (behind FORUM_TRUST_PROXY=xff), 50 at a time; resolves to the statuses. */
async function statusBurst(s, n, ip, token) {
  const statuses = [];
  while (statuses.length < n) {
    const k = Math.min(50, n - statuses.length);
    const headers = ip === null ? {} : { 'x-forwarded-for': ip };
    const batch = await Promise.all(Array.from({ length: k }, () => s.request('GET', '/api/status', { headers, token })));
    statuses.push(...batch.map((r) => r.status));
  }
  return statuses;
}

test('fair share: one looping client gets at most its share (25 %: 150 a minute) and cannot push another client below its own', async (t) => {
  const s = await inProcess(t, { FORUM_TRUST_PROXY: 'xff' });
  const share = Math.floor((PUBLIC_REQUESTS_PER_MINUTE * CLIENT_SHARE_PERCENT_DEFAULT) / 100);
  const looper = await statusBurst(s, share + 50, '203.0.113.7');
  assert.equal(looper.filter((x) => x === 200).length, share, 'the looping client got exactly its share');
  assert.equal(looper.filter((x) => x === 429).length, 50);
  const refused = await s.request('GET', '/api/status', { headers: { 'x-forwarded-for': '203.0.113.7' } });
  assert.equal(refused.status, 429);
  assert.match(refused.body.error, /150 requests per minute from one client address/);
  assert.equal(refused.headers['ratelimit-limit'], String(share));
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  // The looper's refused requests took nothing from the total: another client still gets a full share.
  const other = await statusBurst(s, share, '198.51.100.9');
  assert.ok(other.every((x) => x === 200), 'another client gets its whole share');
  s.clock.advance(60_000);
  assert.equal((await s.request('GET', '/api/status', { headers: { 'x-forwarded-for': '203.0.113.7' } })).status, 200, 'the share comes back after the window');
});

test('fair share: operator tokens are not counted against the public limits, and loopback clients are not counted behind a trusted proxy', async (t) => {
  const s = await inProcess(t, { FORUM_TRUST_PROXY: 'xff' });
  const op = (await cli(['--data-dir', s.dataDir, 'operator', 'create', '--name', 'op'])).json;
  assert.ok(op?.token, 'operator created');
  const share = Math.floor((PUBLIC_REQUESTS_PER_MINUTE * CLIENT_SHARE_PERCENT_DEFAULT) / 100);
  // An operator from one address: past its share, and nothing of it counted.
  const operatorStatuses = await statusBurst(s, share + 20, '203.0.113.50', op.token);
  assert.ok(operatorStatuses.every((x) => x === 200), 'an operator is never refused by the public limits');
  const fromSameAddress = await statusBurst(s, share, '203.0.113.50');
  assert.ok(fromSameAddress.every((x) => x === 200), "the operator's requests took none of the address's share");
  // A request from the machine itself (loopback, no forwarded address) is not counted either.
  const local = await statusBurst(s, share + 20, null);
  assert.ok(local.every((x) => x === 200), 'loopback requests are not counted behind a trusted proxy');
  assert.equal((await s.request('GET', '/api/status', { headers: { 'x-forwarded-for': '203.0.113.50' } })).status, 429, 'the address has now used its share');
});

test('without a trusted proxy, loopback clients are counted (the tunnel connects from loopback for everyone)', async (t) => {
  const s = await inProcess(t);
  const share = Math.floor((PUBLIC_REQUESTS_PER_MINUTE * CLIENT_SHARE_PERCENT_DEFAULT) / 100);
  const statuses = await statusBurst(s, share + 10, null);
  assert.equal(statuses.filter((x) => x === 200).length, share);
});

test('FORUM_CLIENT_SHARE_PERCENT must be 1..100', () => {
  assert.equal(loadConfig({ FORUM_DATA_DIR: '/tmp/unused' }).clientSharePercent, CLIENT_SHARE_PERCENT_DEFAULT);
  assert.equal(loadConfig({ FORUM_DATA_DIR: '/tmp/unused', FORUM_CLIENT_SHARE_PERCENT: '100' }).clientSharePercent, 100);
  for (const bad of ['0', '101', 'x', '-5']) assert.throws(() => loadConfig({ FORUM_DATA_DIR: '/tmp/unused', FORUM_CLIENT_SHARE_PERCENT: bad }), /FORUM_CLIENT_SHARE_PERCENT/, bad);
});

test('FORUM_RATE_LIMITS=off lets 100 writes and 10 registrations through and sends no RateLimit headers', async (t) => {
  const s = await inProcess(t, { FORUM_RATE_LIMITS: 'off' });
  assert.equal(s.svc.protections.rateLimits, null);
  for (let i = 0; i < 10; i++) await s.register();
  const { token } = await s.register();
  for (let i = 0; i < 100; i++) {
    const res = await s.post('/api/topics', { title: `t${i}` }, token);
    assert.equal(res.status, 201);
    assert.equal(res.headers['ratelimit-limit'], undefined);
  }
});

test('FORUM_MAX_AGENTS counts registered participants only: with cap 2 and an operator, two registrations succeed, the third is 507', async (t) => {
  const s = await inProcess(t, { FORUM_MAX_AGENTS: '2' });
  const op = await commands['operator.create'](s.svc.app, { name: 'Ops' });
  assert.match(op.id, /^op_/);
  await s.register();
  await s.register();
  const res = await s.post('/api/register', REGISTER_BODY);
  assert.equal(res.status, 507);
  assert.match(res.body.error, /participant limit.*2/);
  const agents = await s.get('/api/agents', op.token);
  assert.equal(agents.body.length, 3, 'the operator and two participants; the refused one was not registered');
});

test('while free disk space is below FORUM_MIN_FREE_BYTES every POST answers 507, nothing is written, reads keep working', async (t) => {
  let freeBytes = 10 * 1024 ** 3;
  const s = await inProcess(t, { FORUM_MIN_FREE_BYTES: String(1024 ** 2) }, { freeBytes: () => freeBytes });
  const a = await s.register();
  freeBytes = 1024 ** 2 - 1;
  s.clock.advance(DISK_CHECK_INTERVAL_MS);
  const head = s.svc.app.log.headSeq;
  for (const path of postPaths()) {
    const res = await s.post(path, {}, a.token);
    assert.equal(res.status, 507, path);
    assert.match(res.body.error, /disk space.*FORUM_MIN_FREE_BYTES/);
  }
  assert.equal(s.svc.app.log.headSeq, head, 'no record was written');
  assert.equal((await s.get('/api/status')).status, 200);
  assert.equal((await s.get('/api/topics', a.token)).status, 200);
  // Near the floor every write measures again, so freed space is seen at once.
  freeBytes = 10 * 1024 ** 3;
  assert.equal((await s.post('/api/topics', { title: 'x' }, a.token)).status, 201);
  // Far from it, the space is measured at most once per interval, not per request.
  const probes = s.svc.protections.disk.probes;
  for (let i = 0; i < 5; i++) assert.equal((await s.post('/api/topics', { title: `t${i}` }, a.token)).status, 201);
  assert.equal(s.svc.protections.disk.probes, probes);
});

test('507 for low disk space still answers with FORUM_RATE_LIMITS=off (that setting disables only rate limits)', async (t) => {
  let freeBytes = 10 * 1024 ** 3;
  const s = await inProcess(t, { FORUM_RATE_LIMITS: 'off', FORUM_MIN_FREE_BYTES: String(1024 ** 2) }, { freeBytes: () => freeBytes });
  assert.equal(s.svc.protections.rateLimits, null);
  const a = await s.register();
  freeBytes = 0;
  s.clock.advance(DISK_CHECK_INTERVAL_MS);
  const head = s.svc.app.log.headSeq;
  const res = await s.post('/api/topics', { title: 'x' }, a.token);
  assert.equal(res.status, 507);
  assert.match(res.body.error, /FORUM_MIN_FREE_BYTES/);
  assert.equal((await s.post('/api/register', REGISTER_BODY)).status, 507);
  assert.equal(s.svc.app.log.headSeq, head);
});

test('during write stop every POST gets 423, never 429 or 507, and a 423 takes no write or registration slot', async (t) => {
  let freeBytes = 10 * 1024 ** 3;
  const s = await inProcess(t, { FORUM_MIN_FREE_BYTES: String(1024 ** 2) }, { freeBytes: () => freeBytes });
  const a = await s.register();
  await commands['writes.stop'](s.svc.app, {});
  // Twice the write budget and more than the registration budget: all 423.
  for (let i = 0; i < 2 * WRITES_PER_TOKEN_PER_MINUTE; i++) {
    const res = await s.post('/api/topics', { title: `t${i}` }, a.token);
    assert.equal(res.status, 423, `write #${i + 1}`);
    assert.equal(res.headers['ratelimit-limit'], undefined, 'no write slot was counted');
  }
  for (let i = 0; i < REGISTRATIONS_PER_IP_PER_HOUR + 1; i++) assert.equal((await s.post('/api/register', REGISTER_BODY)).status, 423);
  // Low disk during write stop: still 423.
  freeBytes = 0;
  s.clock.advance(DISK_CHECK_INTERVAL_MS);
  assert.equal((await s.post('/api/topics', { title: 'low disk' }, a.token)).status, 423);
  assert.equal((await s.post('/api/register', REGISTER_BODY)).status, 423);
  // After resume the whole budgets are intact (disk space back too).
  await commands['writes.resume'](s.svc.app, {});
  freeBytes = 10 * 1024 ** 3;
  s.clock.advance(DISK_CHECK_INTERVAL_MS);
  const first = await s.post('/api/topics', { title: 'after resume' }, a.token);
  assert.equal(first.status, 201);
  assert.equal(first.headers['ratelimit-remaining'], String(WRITES_PER_TOKEN_PER_MINUTE - 1));
  const reg = await s.post('/api/register', REGISTER_BODY);
  assert.equal(reg.status, 201);
  assert.equal(reg.headers['ratelimit-remaining'], String(REGISTRATIONS_PER_IP_PER_HOUR - 2), 'only the registration before the write stop counted');
});

test('the global limit counts and refuses unknown paths and wrong methods too', async (t) => {
  const s = await inProcess(t, { FORUM_CLIENT_SHARE_PERCENT: '100' });
  let sent = 0;
  while (sent < PUBLIC_REQUESTS_PER_MINUTE) {
    const n = Math.min(50, PUBLIC_REQUESTS_PER_MINUTE - sent);
    const results = await Promise.all(Array.from({ length: n }, (_, i) => (i % 2 ? s.get('/api/nope') : s.request('DELETE', '/api/status'))));
    for (const r of results) assert.ok(r.status === 404 || r.status === 405, String(r.status));
    sent += n;
  }
  s.clock.advance(20_000);
  for (const res of [await s.get('/api/nope'), await s.request('DELETE', '/api/status'), await s.get('/api/status')]) {
    assert.equal(res.status, 429);
    assert.match(res.body.error, /600 requests per minute in total/);
    assert.equal(res.headers['retry-after'], '40');
  }
});

/**
 * Sends a registration whose body is still incomplete when shutdown begins, completes it, and
 * sends `nextRequest` (a raw request head) on the same kept-alive connection. Resolves to the raw
 * responses, in order.
 */
async function requestsAcrossShutdown(t, nextRequest) {
  const s = await inProcess(t);
  const { port, hostname } = new URL(s.svc.url);
  const sock = connect(Number(port), hostname);
  t.after(() => sock.destroy());
  let out = '';
  sock.on('data', (d) => (out += d));
  const ended = new Promise((resolve) => sock.on('close', resolve));
  const body = JSON.stringify(REGISTER_BODY);
  const arrived = new Promise((resolve) => s.svc.server.once('request', resolve));
  sock.write(`POST /api/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
  await arrived;
  const closed = s.svc.close();
  sock.write(`${body.slice(5)}${nextRequest}`);
  await ended;
  await closed;
  return out.split(/(?=HTTP\/1\.1 )/);
}

test('during shutdown a request for an unknown path on a busy kept-alive connection gets 503 too', async (t) => {
  const responses = await requestsAcrossShutdown(t, 'GET /no/such/path HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(responses.length, 2, responses.join(''));
  assert.match(responses[0], /^HTTP\/1\.1 201 /);
  assert.match(responses[1], /^HTTP\/1\.1 503 /);
  assert.match(responses[1], /\r\nRetry-After: \d+\r\n/i);
});

test('write stop answers 423 to every POST route but the operator routes (issue 38) while GETs keep working, and survives a restart', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const stop = await s.cli('writes', 'stop');
  assert.equal(stop.code, 0, stop.stderr);
  const check = async () => {
    const paths = postPaths();
    assert.ok(paths.includes('/api/register') && paths.includes('/api/topics'));
    // The operator console's routes answer during a stop, so an operator can end it there.
    const exempt = new Set(publicRoutes().filter((r) => r.duringWriteStop).map((r) => r.path));
    assert.ok([...exempt].every((p) => p.startsWith('/api/admin/')) && exempt.has('/api/admin/writes'));
    for (const path of paths) {
      if (exempt.has(path)) continue;
      const res = await s.post(path, {}, token);
      assert.equal(res.status, 423, path);
      assert.match(res.body.error, /write stop/);
    }
    const status = await s.get('/api/status');
    assert.equal(status.status, 200);
    assert.equal(status.body.writeStop, true);
    for (const r of publicRoutes().filter((r) => r.method === 'GET')) {
      const res = await s.get(r.path.replace(/\/\*$/, '/x'), token);
      assert.notEqual(res.status, 423, r.path);
      assert.ok(res.status < 500, `${r.path}: ${res.status}`);
    }
    assert.equal((await s.get('/api/rooms', token)).status, 200);
  };
  await check();
  await s.restart();
  await check();
  assert.equal((await s.cli('writes', 'resume')).code, 0);
  assert.equal((await s.post('/api/topics', { title: 'after resume' }, token)).status, 201);
});

test('a request arriving on a kept-alive connection during shutdown gets 503 with Retry-After and Connection: close', async (t) => {
  const responses = await requestsAcrossShutdown(t, 'GET /api/status HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(responses.length, 2, responses.join(''));
  assert.match(responses[0], /^HTTP\/1\.1 201 /, 'the in-flight request completes');
  assert.match(responses[1], /^HTTP\/1\.1 503 /);
  assert.match(responses[1], /\r\nRetry-After: \d+\r\n/i);
  assert.match(responses[1], /\r\nConnection: close\r\n/i);
  assert.match(responses[1], /shutting down/);
});
