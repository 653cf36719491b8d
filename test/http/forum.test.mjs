import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, logText } from '../helpers/server.mjs';
import { startInProcess } from '../helpers/inprocess.mjs';
import { TOPICS_LIST_MAX } from '../../dist/constants.js';

test('registration returns a token once and the agent can authenticate with it', async (t) => {
  const s = await startServer(t);
  const res = await s.post('/api/register', { name: 'alpha', provider: 'lab', description: 'd', acceptsPublicArchive: true, operatorAuthorized: true });
  assert.equal(res.status, 201);
  assert.match(res.body.token, /^af_[A-Za-z0-9_-]{43}$/);
  assert.equal(res.body.kind, 'agent');
  assert.equal(res.body.disabled, 0);
  const agents = await s.get('/api/agents', res.body.token);
  assert.equal(agents.status, 200);
  assert.deepEqual(agents.body.map((a) => a.name), ['alpha']);
  assert.equal('token' in agents.body[0], false);
  assert.equal('tokenHash' in agents.body[0], false);
});

test('registration refuses missing consent, bad lengths and unknown fields with 400 naming the field', async (t) => {
  const s = await startServer(t);
  const base = { name: 'a', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true };
  const cases = [
    [{ ...base, acceptsPublicArchive: false }, /acceptsPublicArchive/],
    [{ ...base, operatorAuthorized: false }, /operatorAuthorized/],
    [{ ...base, name: '' }, /name/],
    [{ ...base, name: 'x'.repeat(81) }, /name.*80/],
    [{ ...base, provider: 'x'.repeat(101) }, /provider.*100/],
    [{ ...base, description: 'x'.repeat(501) }, /description.*500/],
    [{ ...base, extra: 1 }, /unknown field "extra"/],
    [{ name: 'a', provider: 'p', acceptsPublicArchive: true }, /operatorAuthorized/],
  ];
  for (const [body, rule] of cases) {
    const res = await s.post('/api/register', body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match(res.body.error, rule);
  }
  const status = await s.get('/api/status');
  assert.equal(status.body.registeredAgents, 0);
});

test('registration name and provider are trimmed and must keep 1..80 and 1..100 characters (400 naming the field)', async (t) => {
  const h = await startInProcess(t);
  const base = { name: 'a', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true };
  for (const [body, field] of [
    [{ ...base, name: '   ' }, 'name'],
    [{ ...base, name: '\t\n ' }, 'name'],
    [{ ...base, provider: '   ' }, 'provider'],
  ]) {
    const res = await h.post('/api/register', body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match(res.body.error, new RegExp(`field "${field}" must NOT have fewer than 1 characters`));
  }
  const long = await h.post('/api/register', { ...base, name: 'n'.repeat(81) });
  assert.equal(long.status, 400);
  assert.match(long.body.error, /field "name" must NOT have more than 80 characters/);
  assert.equal((await h.get('/api/status')).body.registeredAgents, 0);
  const ok = await h.post('/api/register', { ...base, name: '  scout  ', provider: ' lab ' });
  assert.equal(ok.status, 201);
  assert.equal(ok.body.name, 'scout');
  assert.equal(ok.body.provider, 'lab');
  const padded = await h.post('/api/register', { ...base, name: ` ${'n'.repeat(80)}  `, provider: ` ${'p'.repeat(100)} ` });
  assert.equal(padded.status, 201, 'the limits apply to the trimmed text');
  assert.equal(padded.body.name, 'n'.repeat(80));
});

test('registration is not idempotent: a retry creates another identity', async (t) => {
  const s = await startServer(t);
  const a = await s.register('same');
  const b = await s.register('same');
  assert.notEqual(a.id, b.id);
  assert.notEqual(a.token, b.token);
});

test('missing, malformed and unknown tokens get 401 with WWW-Authenticate', async (t) => {
  const s = await startServer(t);
  for (const headers of [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer nope' }]) {
    const res = await s.request('GET', '/api/rooms', { headers });
    assert.equal(res.status, 401);
    assert.equal(res.headers['www-authenticate'], 'Bearer');
    assert.equal(typeof res.body.error, 'string');
  }
});

test('status is public and reports counts and flags', async (t) => {
  const s = await startServer(t);
  await s.register('a');
  const res = await s.get('/api/status');
  assert.equal(res.status, 200);
  assert.equal(res.body.version, '0.4.9');
  assert.equal(res.body.registeredAgents, 1);
  assert.equal(res.body.writeStop, false);
  assert.equal(res.body.registrationOpen, true);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
});

test('the commons room exists from the first start and topics default to it', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const rooms = await s.get('/api/rooms', token);
  assert.deepEqual(rooms.body.map((r) => r.id), ['commons']);
  const topic = await s.post('/api/topics', { title: '  First  ' }, token);
  assert.equal(topic.status, 201);
  assert.equal(topic.body.roomId, 'commons');
  assert.equal(topic.body.title, 'First');
  assert.equal((await s.post('/api/topics', { title: 'x', roomId: 'nope' }, token)).status, 404);
  assert.equal((await s.post('/api/topics', { title: '' }, token)).status, 400);
  assert.equal((await s.post('/api/topics', { title: 'x'.repeat(161) }, token)).status, 400);
  assert.equal((await s.post('/api/topics', { title: 'x', roomId: 'bad id' }, token)).status, 400);
});

test('topics are listed newest first', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  for (const title of ['one', 'two', 'three']) await s.post('/api/topics', { title }, token);
  const res = await s.get('/api/topics', token);
  assert.deepEqual(res.body.map((x) => x.title), ['three', 'two', 'one']);
});

test('message content is trimmed and limited to 1..8000 characters', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const topic = (await s.post('/api/topics', { title: 't' }, token)).body;
  const ok = await s.post('/api/messages', { topicId: topic.id, content: '  hi  ', clientId: 'c1' }, token);
  assert.equal(ok.status, 201);
  assert.equal(ok.body.content, 'hi');
  assert.equal(ok.body.replyTo, null);
  assert.equal((await s.post('/api/messages', { topicId: topic.id, content: '   ', clientId: 'c2' }, token)).status, 400);
  assert.equal((await s.post('/api/messages', { topicId: topic.id, content: 'x'.repeat(8001), clientId: 'c3' }, token)).status, 400);
  assert.equal((await s.post('/api/messages', { topicId: topic.id, content: 'x'.repeat(8000), clientId: 'c4' }, token)).status, 201);
  assert.equal((await s.post('/api/messages', { topicId: 'nope', content: 'x', clientId: 'c5' }, token)).status, 404);
  assert.equal((await s.post('/api/messages', { topicId: topic.id, content: 'x', clientId: 'bad id!' }, token)).status, 400);
});

test('an identical message retry returns the stored message with 201; a changed payload is 409', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register('a');
  const other = await s.register('b');
  const topic = (await s.post('/api/topics', { title: 't' }, token)).body;
  const first = await s.post('/api/messages', { topicId: topic.id, content: 'hello', clientId: 'same' }, token);
  const retry = await s.post('/api/messages', { topicId: topic.id, content: ' hello ', clientId: 'same' }, token);
  assert.equal(retry.status, 201);
  assert.deepEqual(retry.body, first.body);
  const changed = await s.post('/api/messages', { topicId: topic.id, content: 'bye', clientId: 'same' }, token);
  assert.equal(changed.status, 409);
  assert.match(changed.body.error, /clientId/);
  const byOther = await s.post('/api/messages', { topicId: topic.id, content: 'bye', clientId: 'same' }, other.token);
  assert.equal(byOther.status, 201, 'clientIds are per author');
  const all = await s.get(`/api/messages?topicId=${topic.id}`, token);
  assert.equal(all.body.messages.length, 2);
});

test('replyTo must name a message in the same topic', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const t1 = (await s.post('/api/topics', { title: 't1' }, token)).body;
  const t2 = (await s.post('/api/topics', { title: 't2' }, token)).body;
  const m1 = (await s.post('/api/messages', { topicId: t1.id, content: 'root', clientId: 'm1' }, token)).body;
  const cross = await s.post('/api/messages', { topicId: t2.id, content: 'r', clientId: 'm2', replyTo: m1.id }, token);
  assert.equal(cross.status, 400);
  assert.match(cross.body.error, /replyTo/);
  assert.equal((await s.post('/api/messages', { topicId: t1.id, content: 'r', clientId: 'm3', replyTo: 'msg_nope' }, token)).status, 404);
  const reply = await s.post('/api/messages', { topicId: t1.id, content: 'r', clientId: 'm4', replyTo: m1.id }, token);
  assert.equal(reply.status, 201);
  assert.equal(reply.body.replyTo, m1.id);
});

test('message filters intersect, order newest first and respect limit and before', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const t1 = (await s.post('/api/topics', { title: 't1' }, a.token)).body;
  const t2 = (await s.post('/api/topics', { title: 't2' }, a.token)).body;
  const posted = [];
  for (let i = 0; i < 6; i++) {
    const who = i % 2 ? b : a;
    const topicId = i < 4 ? t1.id : t2.id;
    const body = { topicId, content: i === 3 ? 'The NEEDLE here' : `msg ${i}`, clientId: `c${i}` };
    if (i === 2) body.replyTo = posted[0].id;
    posted.push((await s.post('/api/messages', body, who.token)).body);
  }
  const ids = (res) => res.body.messages.map((m) => m.id);
  const get = (qs) => s.get(`/api/messages?${qs}`, a.token);
  assert.deepEqual(ids(await get('')), posted.map((m) => m.id).reverse());
  assert.deepEqual(ids(await get(`topicId=${t1.id}`)), posted.slice(0, 4).map((m) => m.id).reverse());
  assert.deepEqual(ids(await get(`agentId=${b.id}`)), [posted[5].id, posted[3].id, posted[1].id]);
  assert.deepEqual(ids(await get(`agentId=${b.id}&topicId=${t1.id}`)), [posted[3].id, posted[1].id]);
  assert.deepEqual(ids(await get('q=needle')), [posted[3].id]);
  assert.deepEqual(ids(await get(`messageId=${posted[2].id}`)), [posted[2].id]);
  assert.deepEqual(ids(await get(`replyTo=${posted[0].id}`)), [posted[2].id]);
  assert.deepEqual(ids(await get('limit=2')), [posted[5].id, posted[4].id]);
  assert.deepEqual(ids(await get(`before=${encodeURIComponent(posted[0].created)}`)), []);
  const beforeLast = await get(`before=${encodeURIComponent(posted[5].created)}`);
  const earlier = posted.filter((m) => m.created < posted[5].created).map((m) => m.id).reverse();
  assert.deepEqual(ids(beforeLast), earlier, 'strictly before: every earlier message, not the boundary one (ties may be skipped)');
  // More digits than milliseconds: …06.5771Z is strictly after …06.577Z, so that message is included.
  const finer = (created, digits) => created.replace(/Z$/, `${digits}Z`);
  assert.deepEqual(ids(await get(`before=${encodeURIComponent(finer(posted[5].created, '1'))}`)).slice(0, 1), [posted[5].id]);
  assert.ok(!ids(await get(`before=${encodeURIComponent(finer(posted[5].created, '000'))}`)).includes(posted[5].id), 'trailing zeros are the same instant');
  assert.deepEqual(ids(await get('messageId=unknown')), []);
  assert.deepEqual(ids(await get('topicId=unknown')), []);
});

test('a before that is not a real instant (leap second 23:59:60) gets 400 naming before on /api/messages and /api/search', async (t) => {
  const h = await startInProcess(t);
  const { token } = await h.register();
  const topic = (await h.post('/api/topics', { title: 't' }, token)).body;
  assert.equal((await h.post('/api/messages', { topicId: topic.id, content: 'm', clientId: 'c1' }, token)).status, 201);
  for (const path of ['/api/messages', '/api/search']) {
    const res = await h.get(`${path}?before=${encodeURIComponent('2026-06-30T23:59:60Z')}`, token);
    assert.equal(res.status, 400, path);
    assert.match(res.body.error, /query parameter "before" must be a date-time that denotes a real instant/);
    const fine = await h.get(`${path}?before=${encodeURIComponent('2999-06-30T23:59:59Z')}`, token);
    assert.equal(fine.status, 200, path);
    assert.equal(fine.body.messages.length, 1, path);
  }
});

test('GET /api/topics lists at most 500 topics, newest first: the newest 500 of 505', async (t) => {
  const h = await startInProcess(t);
  const { token } = await h.register();
  const total = TOPICS_LIST_MAX + 5;
  const created = [];
  for (let i = 0; i < total; i += 25) {
    const batch = Array.from({ length: Math.min(25, total - i) }, (_, j) => h.post('/api/topics', { title: `t${i + j}` }, token));
    for (const r of await Promise.all(batch)) {
      assert.equal(r.status, 201);
      created.push(r.body);
    }
  }
  assert.equal(TOPICS_LIST_MAX, 500);
  // Ids carry the zero-padded log sequence, so sorting them gives creation order.
  const newestFirst = created.map((x) => x.id).sort().reverse();
  const listed = (await h.get('/api/topics', token)).body;
  assert.equal(listed.length, 500);
  assert.deepEqual(listed.map((x) => x.id), newestFirst.slice(0, 500), 'the newest 500, newest first; the 5 oldest are left out');
});

test('bad query parameters get 400 naming the parameter', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  for (const [qs, rule] of [
    ['limit=0', /limit/],
    ['limit=101', /limit/],
    ['limit=abc', /limit/],
    ['limit=01', /limit/],
    ['before=yesterday', /before/],
    ['messageId=bad!id', /messageId/],
    [`q=${'x'.repeat(201)}`, /q/],
    ['nope=1', /unknown query parameter "nope"/],
    ['limit=1&limit=2', /more than once/],
  ]) {
    const res = await s.get(`/api/messages?${qs}`, token);
    assert.equal(res.status, 400, qs);
    assert.match(res.body.error, rule, qs);
  }
});

test('a query whose percent-escapes are not UTF-8 is refused with 400 instead of searching for U+FFFD', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  for (const qs of ['q=%FF', 'q=a%C3', 'q=%ED%A0%80']) {
    const res = await s.get(`/api/messages?${qs}`, token);
    assert.equal(res.status, 400, qs);
    assert.match(res.body.error, /not percent-encoded UTF-8/, qs);
  }
  for (const qs of ['q=%E2%82%AC', 'q=100%25', 'q=%F0%9F%98%80']) assert.equal((await s.get(`/api/messages?${qs}`, token)).status, 200, qs);
  // A % without two hex digits is malformed too (RFC 3986 section 2.1; issue 28 item 7).
  for (const qs of ['q=100%', 'q=%zz']) assert.equal((await s.get(`/api/messages?${qs}`, token)).status, 400, qs);
});

test('lists that take no parameters refuse one instead of ignoring it (a topic list does not filter by room)', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  for (const path of ['/api/topics?roomId=commons', '/api/rooms?x=1', '/api/agents?limit=5']) {
    const res = await s.get(path, token);
    assert.equal(res.status, 400, path);
    assert.match(res.body.error, /unknown query parameter "(roomId|x|limit)"/, path);
  }
  for (const path of ['/api/topics', '/api/rooms', '/api/agents']) assert.equal((await s.get(path, token)).status, 200, path);
  assert.equal((await s.get('/api/status?nocache=1')).status, 200, 'public documents still ignore a cache-busting query');
});

test('POST bodies: 415 for other content types, 413 over 32 KiB, 400 for malformed JSON', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const text = await s.request('POST', '/api/topics', { token, raw: '{"title":"x"}', headers: { 'content-type': 'text/plain' } });
  assert.equal(text.status, 415);
  const big = await s.request('POST', '/api/topics', { token, raw: JSON.stringify({ title: 'x'.repeat(33 * 1024) }), headers: { 'content-type': 'application/json' } });
  assert.equal(big.status, 413);
  const bad = await s.request('POST', '/api/topics', { token, raw: '{"title":', headers: { 'content-type': 'application/json' } });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error, /malformed JSON/);
  const notObject = await s.request('POST', '/api/topics', { token, raw: '[1]', headers: { 'content-type': 'application/json; charset=utf-8' } });
  assert.equal(notObject.status, 400);
  const badUtf8 = await s.request('POST', '/api/topics', { token, raw: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]), headers: { 'content-type': 'application/json' } });
  assert.equal(badUtf8.status, 400);
  assert.match(badUtf8.body.error, /UTF-8/);
});

test('unknown paths get 404 and wrong methods 405, both as {error}', async (t) => {
  const s = await startServer(t);
  const nf = await s.get('/api/nope');
  assert.equal(nf.status, 404);
  assert.equal(typeof nf.body.error, 'string');
  const mna = await s.request('DELETE', '/api/status');
  assert.equal(mna.status, 405);
  assert.equal(mna.headers.allow, 'GET');
});

test('everything survives a graceful restart', async (t) => {
  const s = await startServer(t);
  const { token, id } = await s.register('keeper');
  const topic = (await s.post('/api/topics', { title: 'persist' }, token)).body;
  const msg = (await s.post('/api/messages', { topicId: topic.id, content: 'kept', clientId: 'k1' }, token)).body;
  assert.equal(await s.stop(), 0, 'graceful stop exits 0');
  await s.start();
  const res = await s.get(`/api/messages?topicId=${topic.id}`, token);
  assert.deepEqual(res.body.messages, [msg]);
  const agents = await s.get('/api/agents', token);
  assert.equal(agents.body[0].id, id);
  const retry = await s.post('/api/messages', { topicId: topic.id, content: 'kept', clientId: 'k1' }, token);
  assert.deepEqual(retry.body, msg, 'idempotency survives restarts');
});

test('a second server on the same data folder exits with a clear message', async (t) => {
  const s = await startServer(t);
  const { spawnSync } = await import('node:child_process');
  const { SERVER_JS } = await import('../helpers/server.mjs');
  const r = spawnSync(process.execPath, [SERVER_JS], { env: { ...process.env, PORT: '0', FORUM_DATA_DIR: s.dataDir }, encoding: 'utf8', timeout: 10000 });
  assert.equal(r.status, 1);
  assert.match(logText(r.stderr), /in use by another Agent Forum process/);
});

test('browsers on other origins may call the API: preflights for served routes get 204, responses to an Origin carry Access-Control-Allow-Origin', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const origin = { origin: 'https://agent.example' };
  const preflight = await s.request('OPTIONS', '/api/messages', {
    headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers['access-control-allow-origin'], '*');
  assert.equal(preflight.headers['access-control-allow-methods'], 'POST');
  assert.match(preflight.headers['access-control-allow-headers'], /Authorization/);
  assert.match(preflight.headers['access-control-allow-headers'], /Content-Type/);
  assert.match(preflight.headers['access-control-max-age'], /^[1-9][0-9]*$/);
  const a2a = await s.request('OPTIONS', '/a2a/message:send', { headers: { ...origin, 'access-control-request-method': 'POST' } });
  assert.equal(a2a.status, 204);

  const unknown = await s.request('OPTIONS', '/api/nowhere', { headers: { ...origin, 'access-control-request-method': 'GET' } });
  assert.equal(unknown.status, 404, 'nothing is allowed for a path nothing serves');
  const wrongMethod = await s.request('OPTIONS', '/api/status', { headers: { ...origin, 'access-control-request-method': 'DELETE' } });
  assert.equal(wrongMethod.status, 405);

  const read = await s.get('/api/topics', token, origin);
  assert.equal(read.status, 200);
  assert.equal(read.headers['access-control-allow-origin'], '*');
  assert.match(read.headers['access-control-expose-headers'], /Retry-After/);
  const refused = await s.get('/api/topics', 'af_wrong', origin);
  assert.equal(refused.status, 401);
  assert.equal(refused.headers['access-control-allow-origin'], '*', 'errors are readable cross-origin too');
  assert.equal((await s.get('/api/topics', token)).headers['access-control-allow-origin'], undefined, 'no CORS headers without an Origin');
});
