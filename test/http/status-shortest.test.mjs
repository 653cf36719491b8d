/**
 * Issue 56, the shortest path for GET /api/status: `GET`/`HEAD` of the exact target, without
 * Origin or Authorization, is answered from the status memo without the generic pipeline's target
 * parse, route lookup, request context and runRoute — and must send the very bytes the pipeline
 * sends. Every comparison here sets an answer of the shortest path beside the pipeline's answer to
 * a request that the shortest path deliberately does not take but that the pipeline answers the
 * same way (`/api/status?`, `/api/status?x=1`), on the wire, raw, byte for byte but for the
 * X-Request-Id and Date values. A route table whose status route counts its memo and handler
 * calls proves which path answered each request.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Agent, request } from 'undici';
import { startInProcess } from '../helpers/inprocess.mjs';
import { startServer } from '../helpers/server.mjs';
import { ManualClock } from '../../dist/clock.js';
import { adminSocketPath } from '../../dist/admin/socket-path.js';
import { STATUS_CACHE_MS } from '../../dist/constants.js';
import { publicRoutes } from '../../dist/api/routes.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * The public route table with the status route's memo (the shortest path) and handler (the
 * pipeline) counted: `calls.memo` and `calls.handler`.
 */
function countedRoutes() {
  const calls = { memo: 0, handler: 0 };
  const routes = publicRoutes().map((r) => {
    if (r.path !== '/api/status') return r;
    assert.equal(typeof r.memo, 'function', 'the status route has a memo');
    return {
      ...r,
      memo: (app) => {
        calls.memo++;
        return r.memo(app);
      },
      handler: (ctx) => {
        calls.handler++;
        return r.handler(ctx);
      },
    };
  });
  return { routes, calls };
}

/**
 * One raw keep-alive connection to `url`: `send(text, { head })` writes one request and resolves
 * to the whole answer as sent (head and body, latin1), read by its Content-Length (none for a
 * HEAD request). `close()` ends it.
 */
function connection(t, url) {
  const { hostname, port } = new URL(url);
  const sock = connect(Number(port), hostname);
  t.after(() => sock.destroy());
  let buf = Buffer.alloc(0);
  let waiting = null;
  const check = () => {
    if (waiting === null) return;
    const end = buf.indexOf('\r\n\r\n');
    if (end === -1) return;
    const head = buf.subarray(0, end + 4).toString('latin1');
    const length = waiting.head ? 0 : Number(/\r\ncontent-length: (\d+)\r\n/i.exec(head)?.[1] ?? 0);
    if (buf.length < end + 4 + length) return;
    const answer = buf.subarray(0, end + 4 + length).toString('latin1');
    buf = buf.subarray(end + 4 + length);
    const w = waiting;
    waiting = null;
    w.resolve(answer);
  };
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    check();
  });
  const failed = (err) => waiting?.reject(err ?? new Error(`connection closed; unread: ${buf.toString('latin1').slice(0, 300)}`));
  sock.on('error', failed);
  sock.on('close', () => failed());
  return {
    send: (text, { head = false } = {}) =>
      new Promise((resolve, reject) => {
        waiting = { resolve, reject, head };
        sock.write(text);
      }),
    closed: new Promise((resolve) => sock.on('close', resolve)),
  };
}

/** A request as text: `METHOD target HTTP/1.1`, Host, the `extra` header lines, and `body`. */
const requestText = (method, target, extra = [], body = '') => `${method} ${target} HTTP/1.1\r\nHost: forum.test\r\n${extra.map((l) => `${l}\r\n`).join('')}\r\n${body}`;

/** The value of header `name` in a raw answer. */
const headerOf = (answer, name) => new RegExp(`\r\n${name}: ([^\r]*)\r\n`, 'i').exec(answer)?.[1];

/**
 * An answer with its X-Request-Id value (wherever it appears: a 5xx body carries it too) and its
 * Date value blanked: what must not differ between two requests.
 */
function comparable(answer) {
  const id = headerOf(answer, 'X-Request-Id');
  return (id === undefined ? answer : answer.split(id).join('<id>')).replace(/\r\nDate: [^\r]*/i, '\r\nDate: <date>');
}

/**
 * Sends `fast` (a request the shortest path takes) and each of `generic` (requests it leaves to
 * the pipeline) on `conn`, and asserts that every answer has the same bytes but for the request
 * id and date, that the memo answered `fast` and the handler each of `generic`. Resolves to the
 * shortest path's answer.
 */
async function sameAsPipeline(conn, calls, fast, generic, { head = false } = {}) {
  const before = { ...calls };
  const mine = await conn.send(fast, { head });
  assert.deepEqual(calls, { memo: before.memo + 1, handler: before.handler }, `the shortest path answered ${JSON.stringify(fast)}`);
  for (const other of generic) {
    const theirs = await conn.send(other, { head });
    assert.equal(comparable(mine), comparable(theirs), `${JSON.stringify(fast)} answers as ${JSON.stringify(other)} does`);
  }
  assert.deepEqual(calls, { memo: before.memo + 1, handler: before.handler + generic.length }, 'the pipeline answered the others');
  return mine;
}

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
}

/**
 * Scrapes the metrics listener; returns a lookup of a sample's value by its name (a histogram's
 * `_count` included) and labels (0 when absent).
 */
async function scrape(metricsUrl) {
  const res = await request(metricsUrl);
  assert.equal(res.statusCode, 200);
  const samples = [];
  for (const line of (await res.body.text()).split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m) samples.push({ name: m[1], labels: Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]])), value: Number(m[3]) });
  }
  return (name, labels = {}) => samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))?.value ?? 0;
}

test('GET and HEAD /api/status on the shortest path send the bytes the pipeline sends, renewed with the memo', async (t) => {
  const clock = new ManualClock();
  const { routes, calls } = countedRoutes();
  const h = await startInProcess(t, { clock, routes });
  const conn = connection(t, h.url);
  const GET = (target, extra, body) => requestText('GET', target, extra, body);
  const HEAD = (target, extra) => requestText('HEAD', target, extra);

  const first = await sameAsPipeline(conn, calls, GET('/api/status'), [GET('/api/status?'), GET('/api/status?x=1'), GET('/api/status?x=1&y=%41')]);
  assert.match(first, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(headerOf(first, 'X-Request-Id'), UUID_V4);
  const body = first.slice(first.indexOf('\r\n\r\n') + 4);
  assert.equal(Number(headerOf(first, 'Content-Length')), Buffer.byteLength(body));
  assert.equal(JSON.parse(body).registeredAgents, 0);
  const head = await sameAsPipeline(conn, calls, HEAD('/api/status'), [HEAD('/api/status?'), HEAD('/api/status?x=1')], { head: true });
  assert.equal(comparable(head), comparable(first.slice(0, first.indexOf('\r\n\r\n') + 4)), 'HEAD: the GET head, no body');

  // A well-formed client request id is echoed on both paths; a malformed one is replaced.
  const echoed = await sameAsPipeline(conn, calls, GET('/api/status', ['X-Request-Id: client-id.1']), [GET('/api/status?', ['X-Request-Id: client-id.1'])]);
  assert.equal(headerOf(echoed, 'X-Request-Id'), 'client-id.1');
  const replaced = await sameAsPipeline(conn, calls, GET('/api/status', ['X-Request-Id: bad id!', 'x-request-id: second.ok']), [GET('/api/status?', ['X-Request-Id: bad id!', 'x-request-id: second.ok'])]);
  assert.equal(headerOf(replaced, 'X-Request-Id'), 'second.ok', 'the first well-formed one, as before');
  // A body on a GET is not read, and the connection goes on as it did.
  await sameAsPipeline(conn, calls, GET('/api/status', ['Content-Length: 5'], 'hello'), [GET('/api/status?', ['Content-Length: 5'], 'hello')]);
  await sameAsPipeline(conn, calls, GET('/api/status', ['Transfer-Encoding: chunked'], '5\r\nhello\r\n0\r\n\r\n'), [GET('/api/status?', ['Transfer-Encoding: chunked'], '5\r\nhello\r\n0\r\n\r\n')]);

  // The memo renews (a registration, the clock, a write stop that lengthens the body): the
  // prepared head renews with it, Content-Length included.
  await h.register('a');
  const registered = await sameAsPipeline(conn, calls, GET('/api/status'), [GET('/api/status?')]);
  assert.notEqual(comparable(registered), comparable(first));
  assert.equal(JSON.parse(registered.slice(registered.indexOf('\r\n\r\n') + 4)).registeredAgents, 1);
  clock.advance(STATUS_CACHE_MS);
  const later = await sameAsPipeline(conn, calls, GET('/api/status'), [GET('/api/status?')]);
  assert.notEqual(comparable(later), comparable(registered), 'a new time');
  await admin(h, 'writes.stop', { reason: 'maintenance' });
  const stopped = await sameAsPipeline(conn, calls, GET('/api/status'), [GET('/api/status?')]);
  assert.notEqual(headerOf(stopped, 'Content-Length'), headerOf(later, 'Content-Length'));
  assert.equal(JSON.parse(stopped.slice(stopped.indexOf('\r\n\r\n') + 4)).writeStopReason, 'maintenance');
  await sameAsPipeline(conn, calls, HEAD('/api/status'), [HEAD('/api/status?')], { head: true });

  // Heads that may change the answer go the whole way: Origin (CORS headers), Authorization (an
  // operator's slots), two Host fields (400), HTTP/1.0 without Host; so do other methods.
  for (const [text, status] of [
    [GET('/api/status', ['Origin: https://elsewhere.example']), 200],
    [GET('/api/status', ['Authorization: Bearer nobody']), 200],
    ['GET /api/status HTTP/1.0\r\nConnection: keep-alive\r\n\r\n', 200],
    [requestText('POST', '/api/status', ['Content-Length: 0']), 405],
    [GET('/api/status', ['Host: second.test']), 400],
  ]) {
    const before = { ...calls };
    const answer = await conn.send(text);
    assert.equal(Number(/^HTTP\/1\.[01] (\d+)/.exec(answer)?.[1]), status, text);
    assert.equal(calls.memo, before.memo, `not the shortest path: ${JSON.stringify(text)}`);
    if (status === 400) break; // the connection is closed after a Host error
  }
  const cors = await request(`${h.url}/api/status`, { headers: { origin: 'https://elsewhere.example' } });
  await cors.body.dump();
  assert.equal(cors.headers['access-control-allow-origin'], '*');
});

test('on the shortest path the global rate limit still answers 429 and the metrics count every answer as the pipeline does', async (t) => {
  const clock = new ManualClock();
  const { routes, calls } = countedRoutes();
  const h = await startInProcess(t, { clock, routes, env: { FORUM_RATE_LIMITS: 'on', FORUM_METRICS_PORT: '0' } });
  const metric = await scrape(h.service.metricsUrl);
  const conn = connection(t, h.url);
  const share = h.service.protections.rateLimits.clientShare.limiter.limit;
  let gets = 0;
  let heads = 0;
  for (let i = 0; i < share; i++) {
    const isHead = i % 3 === 2;
    const answer = await conn.send(requestText(isHead ? 'HEAD' : 'GET', '/api/status'), { head: isHead });
    assert.match(answer, /^HTTP\/1\.1 200 /);
    if (isHead) heads++;
    else gets++;
  }
  assert.deepEqual(calls, { memo: share, handler: 0 });
  // The client's share is spent: the next request is refused on either path, with the same bytes
  // (a refusal takes no slot, and the clock stands still).
  const refused = await conn.send(requestText('GET', '/api/status'));
  assert.match(refused, /^HTTP\/1\.1 429 /);
  assert.match(refused, /\r\nRetry-After: \d+\r\n/);
  assert.match(refused, /\r\nRateLimit: "clientShare";r=0;t=\d+\r\n/);
  assert.equal(comparable(refused), comparable(await conn.send(requestText('GET', '/api/status?'))));
  assert.deepEqual(calls, { memo: share, handler: 0 }, 'the guard refuses before the memo or handler');

  const now = await scrape(h.service.metricsUrl);
  const counted = (method, status) => now('forum_http_requests_total', { method, route: '/api/status', status }) - metric('forum_http_requests_total', { method, route: '/api/status', status });
  assert.equal(counted('GET', '200'), gets);
  assert.equal(counted('HEAD', '200'), heads);
  assert.equal(counted('GET', '429'), 2);
  assert.equal(now('forum_http_request_duration_seconds_count', { method: 'GET', route: '/api/status' }) - metric('forum_http_request_duration_seconds_count', { method: 'GET', route: '/api/status' }), gets + 2);
  assert.equal(now('forum_http_request_duration_seconds_count', { method: 'HEAD', route: '/api/status' }) - metric('forum_http_request_duration_seconds_count', { method: 'HEAD', route: '/api/status' }), heads);
  assert.equal(now('forum_rate_limited_total', { limit: 'clientShare' }) - metric('forum_rate_limited_total', { limit: 'clientShare' }), 2);
});

test('on the shortest path a request during shutdown gets the same 503 as the pipeline gives, and the connection closes', async (t) => {
  const { routes, calls } = countedRoutes();
  const h = await startInProcess(t, { clock: new ManualClock(), routes });
  const answers = [];
  h.service.protections.shutdown.stopping = true;
  try {
    for (const target of ['/api/status', '/api/status?']) {
      const conn = connection(t, h.url);
      answers.push(await conn.send(requestText('GET', target)));
      await conn.closed;
    }
  } finally {
    h.service.protections.shutdown.stopping = false;
  }
  assert.match(answers[0], /^HTTP\/1\.1 503 /);
  assert.match(answers[0], /\r\nConnection: close\r\n/);
  assert.match(answers[0], /shutting down/);
  assert.equal(comparable(answers[0]), comparable(answers[1]));
  assert.deepEqual(calls, { memo: 0, handler: 0 });
});

test('the built server answers GET and HEAD /api/status with a new request id each time, the pipeline\'s head, and counts and logs each one', async (t) => {
  const s = await startServer(t, { env: { FORUM_METRICS_PORT: '0', FORUM_ACCESS_LOG: 'on' } });
  const metricsUrl = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"'))).metricsUrl;
  const metric = await scrape(metricsUrl);
  const ids = [];
  const heads = [];
  const GETS = 40;
  const HEADS = 10;
  for (let round = 0; round < 5; round++) {
    // Concurrent requests open several connections; each request has its own id.
    const answers = await Promise.all([
      ...Array.from({ length: GETS / 5 }, () => request(`${s.url}/api/status`)),
      ...Array.from({ length: HEADS / 5 }, () => request(`${s.url}/api/status`, { method: 'HEAD' })),
    ]);
    for (const res of answers) {
      assert.equal(res.statusCode, 200);
      await res.body.dump();
      ids.push(res.headers['x-request-id']);
    }
  }
  for (const id of ids) assert.match(id, UUID_V4);
  assert.equal(new Set(ids).size, ids.length, 'no id repeats');

  // The head (names, order, case and values but the id and date) is the pipeline's: it depends on
  // nothing that changes between two requests, the body's time aside.
  const conn = connection(t, s.url);
  for (const target of ['/api/status', '/api/status?']) {
    const answer = await conn.send(requestText('GET', target));
    heads.push(comparable(answer.slice(0, answer.indexOf('\r\n\r\n'))));
  }
  assert.equal(heads[0], heads[1]);
  assert.match(heads[0], /^HTTP\/1\.1 200 OK\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nContent-Type: application\/json; charset=utf-8\r\nContent-Length: \d+\r\nX-Request-Id: <id>\r\nDate: <date>\r\nConnection: keep-alive\r\nKeep-Alive: timeout=\d+$/);

  const now = await scrape(metricsUrl);
  const counted = (method) => now('forum_http_requests_total', { method, route: '/api/status', status: '200' }) - metric('forum_http_requests_total', { method, route: '/api/status', status: '200' });
  assert.equal(counted('GET'), GETS + 2);
  assert.equal(counted('HEAD'), HEADS);
  // One access-log line per request, with its id.
  const logged = () => s.stdout.split('\n').filter((l) => l.includes('"event":"request"')).map((l) => JSON.parse(l));
  for (let i = 0; i < 500 && logged().length < GETS + HEADS + 2; i++) await new Promise((r) => setTimeout(r, 20));
  const lines = logged();
  assert.equal(lines.length, GETS + HEADS + 2);
  for (const id of ids) {
    const line = lines.find((l) => l.requestId === id);
    assert.ok(line, `a log line for ${id}`);
    assert.equal(line.route, '/api/status');
    assert.equal(line.status, 200);
    assert.ok(line.method === 'GET' || line.method === 'HEAD');
  }
});
