/**
 * Issue 30 "hot paths": GET /api/status is served from prebuilt bytes yet answers every change of
 * what it reports at once; generated request ids come from a per-process random prefix and a
 * counter, UUID-shaped and unique.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startInProcess } from '../helpers/inprocess.mjs';
import { rawExchange } from '../helpers/raw.mjs';
import { startServer } from '../helpers/server.mjs';
import { ManualClock } from '../../dist/clock.js';
import { adminSocketPath } from '../../dist/admin/socket-path.js';
import { SERVICE_NAME, SERVICE_VERSION, STATUS_CACHE_MS } from '../../dist/constants.js';
import { Agent, request } from 'undici';
import { connect } from 'node:net';

/** Runs an operator command on the admin channel (a Unix socket in the data folder), as the CLI does. */
async function admin(h, name, args = {}) {
  const res = await request(`http://localhost/${name}`, {
    method: 'POST',
    dispatcher: new Agent({ connect: { socketPath: adminSocketPath(h.dataDir) } }),
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(args),
  });
  const body = await res.body.json();
  assert.equal(res.statusCode, 200, `${name}: ${JSON.stringify(body)}`);
  return body;
}

/** GET /api/status as its exact body text and parsed. */
async function statusOf(h) {
  const res = await request(`${h.url}/api/status`);
  assert.equal(res.statusCode, 200);
  const text = await res.body.text();
  assert.equal(Number(res.headers['content-length']), Buffer.byteLength(text));
  return { text, body: JSON.parse(text) };
}

/** The status body as the route documents it, field by field in its order. */
function expectedStatus(h, fields) {
  return JSON.stringify({
    name: SERVICE_NAME,
    version: SERVICE_VERSION,
    registeredAgents: fields.registeredAgents,
    activeAgents: fields.activeAgents,
    writeStop: fields.writeStop,
    registrationOpen: fields.registrationOpen,
    originId: h.app.log.originId,
    time: new Date(h.clock.now()).toISOString(),
    archiveDamaged: fields.archiveDamaged,
    ...(h.app.checkpoints === null ? {} : { checkpointKey: h.app.checkpoints.keyText }),
  });
}

test('the status body changes with the very next request after each change it reports, and not otherwise', async (t) => {
  const clock = new ManualClock();
  const h = await startInProcess(t, { clock });
  const fields = { registeredAgents: 0, activeAgents: 0, writeStop: false, registrationOpen: true, archiveDamaged: false };
  assert.equal((await statusOf(h)).text, expectedStatus(h, fields));

  // A registration (a write): counted at once, although the clock has not moved. (Registering is
  // not activity: an agent becomes active with its first authenticated request.)
  const a = await h.register('a');
  fields.registeredAgents = 1;
  assert.equal((await statusOf(h)).text, expectedStatus(h, fields));

  // A message write and a moderation action change nothing the status reports: same bytes.
  const before = (await statusOf(h)).text;
  const topic = await h.post('/api/topics', { title: 'status topic' }, a.token);
  assert.equal(topic.status, 201);
  const message = await h.post('/api/messages', { topicId: topic.body.id, content: 'hello', clientId: 'm1' }, a.token);
  assert.equal(message.status, 201);
  await admin(h, 'moderation.hide', { type: 'message', id: message.body.id, reason: 'test' });
  assert.equal((await statusOf(h)).text, before);

  // Operator switches: each shows on the next request (with `activeAgents` recounted: the
  // agent's requests above made it active).
  await admin(h, 'writes.stop');
  fields.writeStop = true;
  fields.activeAgents = 1;
  assert.equal((await statusOf(h)).text, expectedStatus(h, fields));
  await admin(h, 'registration.close');
  fields.registrationOpen = false;
  assert.equal((await statusOf(h)).text, expectedStatus(h, fields));
  await admin(h, 'writes.resume');
  fields.writeStop = false;
  assert.equal((await statusOf(h)).text, expectedStatus(h, fields));

  // Damage found by the scrub or a proven read.
  h.app.integrity.reportDamage({ file: 'log/00000000000000000001.jsonl', offset: 0, reason: 'test damage', source: 'scrub' });
  fields.archiveDamaged = true;
  assert.equal((await statusOf(h)).text, expectedStatus(h, fields));

  // Time: `time` (and `activeAgents`) are at most STATUS_CACHE_MS old.
  clock.advance(STATUS_CACHE_MS - 1);
  assert.equal((await statusOf(h)).body.time, new Date(clock.now() - (STATUS_CACHE_MS - 1)).toISOString());
  clock.advance(1);
  assert.equal((await statusOf(h)).text, expectedStatus(h, fields));
});

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('generated request ids are UUID-shaped, unique over many concurrent requests, and count up behind one per-process prefix', async (t) => {
  const h = await startInProcess(t);
  const ids = [];
  for (let round = 0; round < 5; round++) {
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => request(`${h.url}${i % 2 ? '/api/status' : '/api/nothing'}`)));
    for (const res of answers) {
      await res.body.dump();
      ids.push(res.headers['x-request-id']);
    }
  }
  for (const id of ids) assert.match(id, UUID_V4);
  assert.equal(new Set(ids).size, ids.length, 'no id repeats');
  assert.equal(new Set(ids.map((id) => id.slice(0, 24))).size, 1, 'one prefix per process');
  const counters = ids.map((id) => parseInt(id.slice(24), 16)).sort((x, y) => x - y);
  for (let i = 1; i < counters.length; i++) assert.ok(counters[i] > counters[i - 1]);
  // A reply written for a parser error (no request object) draws from the same sequence.
  const raw = await rawExchange(h.url, ['NOT HTTP\r\n\r\n'], { endAfter: false });
  const rawId = /\r\nX-Request-Id: ([^\r]+)\r\n/.exec(raw)?.[1];
  assert.match(rawId, UUID_V4);
  assert.equal(rawId.slice(0, 24), ids[0].slice(0, 24));
  assert.ok(!ids.includes(rawId));
});

test('another server process draws another request-id prefix', async (t) => {
  const s = await startServer(t);
  const res = await request(`${s.url}/api/status`);
  await res.body.dump();
  const h = await startInProcess(t);
  const mine = await request(`${h.url}/api/status`);
  await mine.body.dump();
  assert.match(res.headers['x-request-id'], UUID_V4);
  assert.notEqual(res.headers['x-request-id'].slice(0, 24), mine.headers['x-request-id'].slice(0, 24));
});

test('a client that stops reading its responses is cut off once no byte has moved for the idle timeout, while others are served', async (t) => {
  const socketIdleTimeoutMs = 1000;
  const h = await startInProcess(t, { timeouts: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5000, checkIntervalMs: 100, socketIdleTimeoutMs } });
  const doc = await request(`${h.url}/openapi.json`);
  const docBytes = (await doc.body.arrayBuffer()).byteLength;
  // Enough pipelined requests to fill both kernel buffers many times over; the client never reads.
  const requests = Math.ceil((64 * 1024 * 1024) / docBytes);
  const { hostname, port } = new URL(h.url);
  const sock = connect(Number(port), hostname);
  sock.pause();
  sock.on('error', () => {});
  t.after(() => sock.destroy());
  // The server's end of this connection, to watch it close.
  const serverSide = new Promise((resolve) => {
    const onConnection = (s) => {
      if (s.remotePort !== sock.localPort) return;
      h.service.server.off('connection', onConnection);
      resolve(s);
    };
    h.service.server.on('connection', onConnection);
  });
  await new Promise((r) => sock.once('connect', r));
  const stalled = await serverSide;
  let closedAt = null;
  stalled.once('close', () => (closedAt = Date.now()));
  sock.write('GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(requests));
  const wrote = Date.now();
  // While the stalled connection is open, another client is answered.
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(closedAt, null);
  assert.equal((await h.get('/api/status')).status, 200);
  while (closedAt === null) {
    assert.ok(Date.now() - wrote < socketIdleTimeoutMs + 5000, 'the stalled connection is closed by the server');
    await new Promise((r) => setTimeout(r, 50));
  }
  // Not before its idle time: bytes moved until the kernel buffers filled, after the write.
  assert.ok(closedAt - wrote >= socketIdleTimeoutMs, `closed ${closedAt - wrote} ms after the requests were sent`);
});
