/**
 * Issue 28 "every request gets its answer": a busy server answers late instead of dropping the
 * connection (item 8), a refused body still lets the client read its 413 and nothing pipelined
 * after it runs unanswered (item 5).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startInProcess } from '../helpers/inprocess.mjs';
import { rawExchange } from '../helpers/raw.mjs';
import { startServer } from '../helpers/server.mjs';
import { BODY_DRAIN_BYTES_MAX, BODY_DRAIN_MS } from '../../dist/constants.js';

/**
 * A client in its own process (so it keeps running while the test blocks the server's event
 * loop): opens one connection, sends `GET /api/status`, prints `first` once the answer is in,
 * sends the same request again `gapMs` later on the same connection and prints, as one JSON line,
 * every status line it got and whether the server closed the connection.
 */
const KEEP_ALIVE_CLIENT = `
import { connect } from 'node:net';
const [port, gapMs] = process.argv.slice(1).map(Number);
const req = 'GET /api/status HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n';
const sock = connect(port, '127.0.0.1');
let got = '';
let error = null;
const statuses = () => got.match(/HTTP\\/1\\.1 \\d+/g) ?? [];
const done = (closed) => { console.log(JSON.stringify({ statuses: statuses(), closed, error })); process.exit(0); };
sock.on('error', (e) => (error = e.code));
sock.on('close', () => done(true));
sock.on('data', (d) => {
  const before = statuses().length;
  got += d;
  const n = statuses().length;
  if (before === 0 && n === 1) {
    console.log('first');
    setTimeout(() => sock.write(req), gapMs);
  }
  if (n === 2) setTimeout(() => done(false), 100);
});
sock.on('connect', () => sock.write(req));
setTimeout(() => done(false), 15000);
`;

/** Busy-waits `ms` on this thread: the event loop (and the in-process server on it) stands still. */
function blockEventLoop(ms) {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

test('a request that arrives on a kept-alive connection while the server is busy past its keep-alive timeout is answered, not dropped', async (t) => {
  const keepAliveTimeoutMs = 1000;
  const h = await startInProcess(t, {
    timeouts: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs, checkIntervalMs: 1000, socketIdleTimeoutMs: 30_000 },
  });
  const { port } = new URL(h.url);
  // The client sends its second request 400 ms after the first answer, well inside the keep-alive
  // window; the server is then busy (background work runs in setImmediate slices) from ~100 ms to
  // ~2,100 ms, past the keep-alive deadline, with the request unread in the socket buffer.
  const child = spawn(process.execPath, ['--input-type=module', '-e', KEEP_ALIVE_CLIENT, String(port), '400'], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  const result = new Promise((resolve) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.startsWith('first\n') && !out.includes('{')) {
        if (!child.blocked) {
          child.blocked = true;
          setTimeout(() => setImmediate(() => blockEventLoop(keepAliveTimeoutMs + 1000)), 100);
        }
      }
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line));
    });
  });
  const { statuses, closed, error } = await result;
  assert.deepEqual(statuses, ['HTTP/1.1 200', 'HTTP/1.1 200'], `the second request was dropped (closed ${closed}, ${error})`);
  assert.equal(closed, false);
});

test('an idle kept-alive connection is still closed once its keep-alive timeout has passed', async (t) => {
  const h = await startInProcess(t, {
    timeouts: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 300, checkIntervalMs: 100, socketIdleTimeoutMs: 30_000 },
  });
  const started = Date.now();
  const out = await rawExchange(h.url, ['GET /api/status HTTP/1.1\r\nHost: x\r\n\r\n'], { endAfter: false });
  assert.match(out, /^HTTP\/1.1 200/);
  assert.ok(Date.now() - started < 5000, 'closed long after the keep-alive timeout');
});

/**
 * A client in its own process: connects, sends `GET /api/status` `delayMs` after the connection is
 * up, and prints the status line it got (or what ended the connection) after `waitMs`.
 */
const FRESH_CLIENT = `
import { connect } from 'node:net';
const [port, delayMs, waitMs] = process.argv.slice(1).map(Number);
const sock = connect(port, '127.0.0.1');
let got = '';
sock.on('data', (d) => (got += d));
sock.on('error', (e) => (got += ' [' + e.code + ']'));
sock.on('connect', () => setTimeout(() => sock.write('GET /api/status HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'), delayMs));
setTimeout(() => { console.log(JSON.stringify(got.split('\\r\\n')[0] || got)); process.exit(0); }, waitMs);
`;

test('a request sent in time on a new connection is answered even when the server stalls past the head timeout right after accepting it', async (t) => {
  const headersTimeoutMs = 1000;
  const h = await startInProcess(t, {
    timeouts: { headersTimeoutMs, requestTimeoutMs: 2000, keepAliveTimeoutMs: 5000, checkIntervalMs: 100, socketIdleTimeoutMs: 30_000 },
  });
  // Accepted, then the event loop is busy for longer than the head timeout; the head (sent
  // 200 ms after connecting) waits unread in the socket buffer meanwhile.
  h.service.server.once('connection', () => setImmediate(() => blockEventLoop(headersTimeoutMs + 1500)));
  const { port } = new URL(h.url);
  const child = spawn(process.execPath, ['--input-type=module', '-e', FRESH_CLIENT, String(port), '200', String(headersTimeoutMs + 3000)], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(JSON.parse(out.trim()), 'HTTP/1.1 200 OK');
});

test('a new connection that sends nothing still gets 408 once the head timeout has passed', async (t) => {
  const h = await startInProcess(t, {
    timeouts: { headersTimeoutMs: 500, requestTimeoutMs: 1000, keepAliveTimeoutMs: 5000, checkIntervalMs: 100, socketIdleTimeoutMs: 30_000 },
  });
  const started = Date.now();
  const out = await rawExchange(h.url, [], { endAfter: false });
  assert.match(out, /^HTTP\/1.1 408 /);
  assert.ok(Date.now() - started < 5000, `closed after ${Date.now() - started} ms`);
});

/** A started server with one agent and one topic. */
async function withTopic(t) {
  const s = await startServer(t);
  const a = await s.register('answers');
  const topic = (await s.post('/api/topics', { title: 'answers' }, a.token)).body;
  return { s, a, topic };
}

test('fetch posting a body of 64 KiB, 1 MiB or 5 MiB reads the 413 JSON answer instead of failing with EPIPE', async (t) => {
  const { s, a, topic } = await withTopic(t);
  for (const size of [64 * 1024, 1024 * 1024, 5 * 1024 * 1024]) {
    const body = JSON.stringify({ topicId: topic.id, content: 'x'.repeat(size), clientId: `big-${size}` });
    // Node's own fetch, as the MCP binary and most agents use it.
    const res = await fetch(`${s.url}/api/messages`, { method: 'POST', headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' }, body });
    assert.equal(res.status, 413, `size ${size}`);
    assert.equal((await res.json()).code, 'BODY_TOO_LARGE', `size ${size}`);
    assert.ok(res.headers.get('x-request-id'));
  }
  // The same through a chunked body (no Content-Length), so the server cannot refuse it up front.
  const chunks = async function* () {
    yield Buffer.from(`{"topicId":"${topic.id}","content":"`);
    for (let i = 0; i < 16; i++) yield Buffer.alloc(64 * 1024, 0x78);
    yield Buffer.from('"}');
  };
  const res = await fetch(`${s.url}/api/messages`, { method: 'POST', headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' }, body: chunks(), duplex: 'half' });
  assert.equal(res.status, 413);
  assert.equal((await res.json()).code, 'BODY_TOO_LARGE');
});

test('a write pipelined after a refused (413) body on the same connection is not committed, since it is never answered', async (t) => {
  const { s, a, topic } = await withTopic(t);
  const big = 'x'.repeat(40_000);
  const post = (body) => `POST /api/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const after = JSON.stringify({ topicId: topic.id, content: 'pipelined after the 413', clientId: 'after-413' });
  const out = await rawExchange(s.url, [post(JSON.stringify({ topicId: topic.id, content: big, clientId: 'refused' })) + post(after)], { endAfter: false });
  const statuses = [...out.matchAll(/HTTP\/1.1 (\d{3}) /g)].map((m) => Number(m[1]));
  assert.deepEqual(statuses, [413], out.slice(0, 400));
  const receipt = await s.get('/api/receipts?kind=message&clientId=after-413', a.token);
  assert.equal(receipt.body.outcome, 'unknown', 'the unanswered pipelined write was committed');
  // The same refused body followed by the write in a later packet.
  const out2 = await rawExchange(s.url, [post(JSON.stringify({ topicId: topic.id, content: big, clientId: 'refused-2' })), post(after)], { delayMs: 50, endAfter: false });
  assert.deepEqual([...out2.matchAll(/HTTP\/1.1 (\d{3}) /g)].map((m) => Number(m[1])), [413]);
  assert.equal((await s.get('/api/receipts?kind=message&clientId=after-413', a.token)).body.outcome, 'unknown');
});

test('a body declared larger than BODY_DRAIN_BYTES_MAX is not read: 413 at once and the connection closed', async (t) => {
  const { s, a } = await withTopic(t);
  const head = `POST /api/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.token}\r\nContent-Type: application/json\r\nContent-Length: ${BODY_DRAIN_BYTES_MAX + 1}\r\n\r\n{"content":"`;
  const started = Date.now();
  const out = await rawExchange(s.url, [head], { endAfter: false });
  assert.match(out, /^HTTP\/1.1 413 /);
  assert.match(out, /"code":"BODY_TOO_LARGE"/);
  assert.ok(Date.now() - started < BODY_DRAIN_MS, 'the server waited for a body it will not read');
});

test('a refused body that stalls is answered 413 once BODY_DRAIN_MS has passed, and the connection closed', async (t) => {
  const { s, a } = await withTopic(t);
  const head = `POST /api/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.token}\r\nContent-Type: application/json\r\nContent-Length: 40000\r\n\r\n{"content":"`;
  const started = Date.now();
  const out = await rawExchange(s.url, [head], { endAfter: false });
  assert.match(out, /^HTTP\/1.1 413 /);
  assert.ok(Date.now() - started >= BODY_DRAIN_MS - 100, `answered after ${Date.now() - started} ms`);
});
