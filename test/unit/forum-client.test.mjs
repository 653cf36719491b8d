/**
 * The JavaScript client helper's retry rules (retry-budget.md) against a scripted fetch: no
 * server, no real waiting. The Python client's rules run against a scripted local HTTP server
 * (127.0.0.1) through python3. End-to-end use against the real server is in
 * test/http/clients.test.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { ROOT, tempDir } from '../helpers/server.mjs';

const { ForumClient, ForumError, newClientId, verifyExchangePage } = await import(
  pathToFileURL(join(ROOT, 'src', 'api', 'docs', 'client', 'forum-client.mjs')).href
);

const json = (status, body, headers = {}) =>
  new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

/** A client whose fetch answers from `script(call)`, recording every call and every wait. */
function scripted(script, options = {}) {
  const calls = [];
  const waits = [];
  const client = new ForumClient({
    baseUrl: 'http://forum.test',
    token: 'af_token',
    sleep: async (ms) => { waits.push(ms); },
    random: () => 0.5,
    ...options,
    fetch: async (url, init) => {
      const call = { url: new URL(url), init, body: init.body ? JSON.parse(init.body) : undefined };
      calls.push(call);
      return script(call, calls.length);
    },
  });
  return { client, calls, waits };
}

test('429 and 503 are retried after Retry-After with the identical request', async () => {
  const { client, calls, waits } = scripted((call, n) =>
    n === 1 ? json(429, { error: 'slow down' }, { 'retry-after': '7' }) : n === 2 ? json(503, { error: 'starting' }, { 'retry-after': '2' }) : json(201, { id: 'msg_1' }),
  );
  const msg = await client.postMessage({ topicId: 'tp_1', content: 'hi', clientId: 'c-1' });
  assert.equal(msg.id, 'msg_1');
  assert.equal(calls.length, 3);
  assert.deepEqual(calls.map((c) => c.body.clientId), ['c-1', 'c-1', 'c-1']);
  assert.deepEqual(waits, [7500, 2500], 'Retry-After seconds plus jitter below one second');
});

test('a write whose outcome is unknown is settled by its receipt and never sent with a new clientId', async () => {
  const { client, calls } = scripted((call, n) => {
    if (n === 1) throw new TypeError('fetch failed: ECONNRESET');
    if (call.url.pathname === '/api/receipts') {
      return json(200, { outcome: 'recorded', kind: 'work', clientId: call.url.searchParams.get('clientId'), seq: 9, request: {}, response: { status: 200, body: { id: 'wk_1', revision: 2 } } });
    }
    throw new Error('no second write expected');
  });
  const item = await client.claim('wk_1', 1);
  assert.deepEqual(item, { id: 'wk_1', revision: 2 });
  assert.equal(calls.length, 2);
  assert.equal(calls[1].url.searchParams.get('kind'), 'work');
  assert.equal(calls[1].url.searchParams.get('clientId'), calls[0].body.clientId);
});

test('an unknown receipt raises an in-doubt error with kind and clientId and never resends the write', async () => {
  const { client, calls, waits } = scripted((call, n) => {
    if (n === 1) return json(500, { error: 'internal error' });
    if (call.url.pathname === '/api/receipts') return json(200, { outcome: 'unknown', kind: 'message', clientId: 'c-9' });
    return json(201, { id: 'msg_9' });
  });
  const err = await client.postMessage({ topicId: 'tp_1', content: 'x', clientId: 'c-9' }).catch((e) => e);
  assert.ok(err instanceof ForumError, String(err));
  assert.equal(err.inDoubt, true);
  assert.equal(err.kind, 'message');
  assert.equal(err.clientId, 'c-9');
  assert.equal(err.status, 500, 'the failure that made the write in doubt');
  assert.match(err.message, /unknown \(inconclusive\).*not resent.*SAME clientId/);
  assert.deepEqual(calls.map((c) => `${c.init.method} ${c.url.pathname}`), ['POST /api/messages', 'GET /api/receipts'], 'no automatic resend');
  assert.equal(calls[1].url.searchParams.get('clientId'), 'c-9');
  assert.deepEqual(waits, [], 'nothing was waited for: there is no retry');

  // Later the caller settles it deliberately: recorded → the committed message.
  const later = scripted(() => json(200, { outcome: 'recorded', kind: 'message', clientId: 'c-9', seq: 3, request: {}, response: { status: 201, body: { id: 'msg_9' } } }));
  assert.deepEqual(await later.client.settle(err.kind, err.clientId), { id: 'msg_9' });
  const still = scripted(() => json(200, { outcome: 'unknown', kind: 'message', clientId: 'c-9' }));
  assert.equal(await still.client.settle('message', 'c-9'), undefined, 'unknown stays inconclusive');
});

test('502, 504 and cut-off responses leave a work write in doubt: the receipt settles it without a second write', async () => {
  for (const failure of [502, 504, 'cut']) {
    const { client, calls } = scripted((call, n) => {
      if (n === 1) {
        if (failure === 'cut') return new Response(new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('{"id":')); c.error(new Error('socket closed')); } }), { status: 200 });
        return new Response('<html>bad gateway</html>', { status: failure });
      }
      if (call.url.pathname === '/api/receipts') return json(200, { outcome: 'recorded', kind: 'work', clientId: 'w-1', seq: 4, request: {}, response: { status: 201, body: { id: 'wk_4', revision: 1 } } });
      throw new Error('no second write expected');
    });
    assert.deepEqual(await client.createWork({ clientId: 'w-1', title: 't', description: 'd', acceptanceCriteria: 'a' }), { id: 'wk_4', revision: 1 }, String(failure));
    assert.deepEqual(calls.map((c) => c.url.pathname), ['/api/work', '/api/receipts'], String(failure));
  }
});

test('a write still in doubt when the retry budget or the attempts run out is reported in doubt with its clientId', async () => {
  // The write times out; its receipt answers 429 until the budget (3 retries) is spent.
  const budget = scripted((call, n) => {
    if (n === 1) throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    return json(429, { error: 'slow down' }, { 'retry-after': '1' });
  }, { retry: { maxAttempts: 50, retriesPerMinute: 3, budgetRatio: 0 } });
  const spent = await budget.client.claim('wk_1', 1).catch((e) => e);
  assert.equal(spent.inDoubt, true, spent.message);
  assert.equal(spent.kind, 'work');
  assert.equal(spent.clientId, budget.calls[0].body.clientId);
  assert.match(spent.message, /retry budget exhausted/);
  assert.equal(budget.calls.filter((c) => c.init.method === 'POST').length, 1, 'the write was sent once');

  // The write gets a 500; every receipt read fails until maxAttempts.
  const attempts = scripted((call, n) => (n === 1 ? json(500, { error: 'internal error' }) : json(500, { error: 'still failing' })), { retry: { maxAttempts: 3, retriesPerMinute: 100 } });
  const out = await attempts.client.postMessage({ topicId: 'tp_1', content: 'x', clientId: 'c-4' }).catch((e) => e);
  assert.equal(out.inDoubt, true);
  assert.equal(out.kind, 'message');
  assert.equal(out.clientId, 'c-4');
  assert.deepEqual(attempts.calls.map((c) => c.url.pathname), ['/api/messages', '/api/receipts', '/api/receipts', '/api/receipts']);

  // A write only ever refused (429) was never applied: not in doubt.
  const refused = scripted(() => json(429, { error: 'slow down' }, { 'retry-after': '1' }), { retry: { maxAttempts: 3, retriesPerMinute: 100 } });
  const plain = await refused.client.postMessage({ topicId: 'tp_1', content: 'x', clientId: 'c-5' }).catch((e) => e);
  assert.equal(plain.status, 429);
  assert.equal(plain.inDoubt, false);
  assert.deepEqual(refused.calls.map((c) => c.body.clientId), ['c-5', 'c-5', 'c-5']);
});

test('a2aSend sends A2A-Version 1.0 and reports google.rpc.Status errors by their message', async () => {
  const envelope = { message: { messageId: 'r-1', contextId: 'ctx', role: 'ROLE_AGENT', parts: [{ data: { action: 'status', status: 200, result: { version: '0.4.9' } }, mediaType: 'application/json' }] } };
  const ok = scripted(() => json(200, envelope));
  assert.deepEqual(await ok.client.a2aSend('status'), envelope);
  assert.equal(ok.calls[0].init.headers['a2a-version'], '1.0');
  assert.equal(ok.calls[0].url.pathname, '/a2a/message:send');
  assert.deepEqual(ok.calls[0].body.message.parts, [{ data: { action: 'status' } }]);
  assert.equal(ok.calls[0].body.message.role, 'ROLE_USER');

  const status = { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'unknown action "nope": data.action must be one of status, read', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'VALIDATION', domain: 'forum.test', metadata: {} }] } };
  const bad = scripted(() => json(400, status));
  const err = await bad.client.a2aSend('nope', {}).catch((e) => e);
  assert.equal(err.status, 400);
  assert.doesNotMatch(err.message, /\[object Object\]/);
  assert.match(err.message, /HTTP 400: INVALID_ARGUMENT: unknown action "nope"/);
  assert.deepEqual(err.body, status);
  assert.equal(bad.calls.length, 1);

  // An in-doubt A2A post names the receipt that settles it (its messageId is the clientId).
  const lost = scripted(() => { throw new TypeError('fetch failed'); });
  const doubt = await lost.client.a2aSend('post', { topicId: 'tp_1', content: 'x' }, 'm-77').catch((e) => e);
  assert.equal(doubt.inDoubt, true);
  assert.equal(doubt.kind, 'message');
  assert.equal(doubt.clientId, 'm-77');
  assert.equal(lost.calls.length, 1, 'an A2A write is not resent');
});

test('requests that are wrong, refused or need an operator are never retried', async () => {
  for (const status of [400, 401, 403, 404, 409, 413, 415, 423, 507]) {
    const { client, calls } = scripted(() => json(status, { error: `status ${status}` }));
    await assert.rejects(client.postMessage({ topicId: 'tp_1', content: 'x' }), (err) => err instanceof ForumError && err.status === status);
    assert.equal(calls.length, 1, `${status} is not retried`);
  }
});

test('knowledge, topics and registration are not retried once they may have arrived', async () => {
  const { client, calls } = scripted(() => json(500, { error: 'internal error' }));
  await assert.rejects(client.postKnowledge({ title: 't', content: 'c', category: 'opinion' }), (err) => err.inDoubt === true && err.status === 500);
  assert.equal(calls.length, 1);
  const reg = scripted(() => { throw new TypeError('fetch failed'); });
  await assert.rejects(ForumClient.register({ name: 'a', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true }, { baseUrl: 'http://forum.test', fetch: reg.client.fetchImpl, sleep: async () => {} }), (err) => err.inDoubt === true);
});

test('reads are retried with exponential backoff and full jitter up to maxAttempts', async () => {
  const { client, calls, waits } = scripted(() => { throw new TypeError('fetch failed'); }, { random: () => 0.999, retry: { maxAttempts: 4, retriesPerMinute: 100 } });
  await assert.rejects(client.rooms(), (err) => err.status === 0);
  assert.equal(calls.length, 4);
  assert.deepEqual(waits.map(Math.round), [999, 1998, 3996]);
  const capped = scripted(() => { throw new TypeError('fetch failed'); }, { random: () => 0.999, retry: { maxAttempts: 9, retriesPerMinute: 100, capDelayMs: 5000 } });
  await assert.rejects(capped.client.rooms());
  assert.ok(capped.waits.every((w) => w < 5000), 'the cap bounds every delay');
});

test('the retry budget stops retries once spent within a minute', async () => {
  const { client, calls } = scripted(() => json(429, { error: 'slow down' }, { 'retry-after': '1' }), { retry: { maxAttempts: 50, retriesPerMinute: 3, budgetRatio: 0 } });
  await assert.rejects(client.rooms(), (err) => /retry budget exhausted/.test(err.message) && err.status === 429);
  assert.equal(calls.length, 4, 'the first attempt plus three retries');
  const next = await client.rooms().catch((err) => err);
  assert.match(next.message, /retry budget exhausted/, 'the budget is shared by later calls in the same minute');
});

test('redirects are refused and the token is sent only to the base origin', async () => {
  const { client, calls } = scripted(() => new Response(null, { status: 302, headers: { location: 'http://elsewhere.test/' } }));
  await assert.rejects(client.agents(), (err) => err.status === 302 && /redirect/.test(err.message));
  assert.equal(calls.length, 1);
  assert.equal(calls[0].init.redirect, 'manual');
  assert.equal(calls[0].url.origin, 'http://forum.test');
  await assert.rejects(client.request('GET', '@elsewhere.test/api/agents'), /outside http:\/\/forum\.test/);
});

test('the feed follower stores the cursor only after the page was processed and waits pollAfterSeconds with jitter', async () => {
  const pages = [
    { format: 'forum-changes-v1', cursor: { originId: 'o-1', after: 2 }, hasMore: true, pollAfterSeconds: 1, events: [{ seq: 1, kind: 'room' }, { seq: 2, kind: 'topic' }] },
    { format: 'forum-changes-v1', cursor: { originId: 'o-1', after: 3 }, hasMore: false, pollAfterSeconds: 60, events: [{ seq: 2, kind: 'topic' }, { seq: 3, kind: 'message' }] },
  ];
  const { client, calls, waits } = scripted((call, n) => json(200, pages[n - 1]));
  const order = [];
  const cursor = await client.followFeed({
    onEvents: async (events) => { await new Promise((r) => setTimeout(r, 5)); order.push(`events ${events.map((e) => e.seq).join(',')}`); },
    saveCursor: (c) => { order.push(`save ${c.after}`); },
    stopWhenCaughtUp: true,
  });
  assert.deepEqual(order, ['events 1,2', 'save 2', 'events 3', 'save 3'], 'a redelivered event is filtered; the cursor follows processing');
  assert.deepEqual(cursor, { originId: 'o-1', after: 3 });
  assert.equal(calls[0].url.search, '?after=0&limit=100', 'no originId at after=0');
  assert.equal(calls[1].url.searchParams.get('originId'), 'o-1');
  assert.deepEqual(waits, [1100], 'pollAfterSeconds plus jitter between pages');
});

test('a cursor conflict stops the follower instead of resetting it', async () => {
  const { client } = scripted(() => json(409, { error: 'cursor belongs to another archive' }));
  let saved = 0;
  await assert.rejects(client.followFeed({ cursor: { originId: 'x', after: 5 }, onEvents: () => {}, saveCursor: () => { saved++; } }), (err) => err.status === 409);
  assert.equal(saved, 0);
});

test('exchange pages are verified over the exact UTF-8 bytes before parsing', async () => {
  const canonicalJson = '{"content":"Grüße","id":"msg_1"}';
  const sha256 = createHash('sha256').update(canonicalJson, 'utf8').digest('hex');
  const page = { format: 'forum-exchange-v1', cursor: {}, hasMore: false, records: [{ seq: 4, kind: 'message', canonicalJson, sha256 }] };
  assert.deepEqual(await verifyExchangePage(page), [{ seq: 4, kind: 'message', record: { content: 'Grüße', id: 'msg_1' } }]);
  const tampered = { ...page, records: [{ ...page.records[0], canonicalJson: canonicalJson.replace('ü', 'u') }] };
  await assert.rejects(verifyExchangePage(tampered), /seq 4: sha256 mismatch/);
});

test('minted clientIds are valid Ids and distinct', () => {
  const ids = new Set(Array.from({ length: 100 }, () => newClientId('msg')));
  assert.equal(ids.size, 100);
  for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{1,120}$/);
  assert.throws(() => new ForumClient({ token: 't' }), /pass baseUrl/, 'the unserved source has no default server');
});

// ---------------------------------------------------------------------------------------------
// The Python client (forum_client.py) against a scripted local HTTP server on 127.0.0.1.

const execFileP = promisify(execFile);
const HAS_PYTHON = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).status === 0;
const NO_PYTHON = HAS_PYTHON ? false : 'python3 is not installed on this machine: the Python client (forum_client.py) retry rules were NOT tested';
const PY_CLIENT = join(ROOT, 'src', 'api', 'docs', 'client', 'forum_client.py');

/**
 * A local HTTP server (127.0.0.1 only) answering from `script(request, n)`: `[status, body,
 * headers]`, or 'cut' for response headers announcing Content-Length 100 followed by a few bytes
 * and a closed connection. Records every request.
 */
async function fakeServer(t, script) {
  const requests = [];
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const url = new URL(req.url, 'http://127.0.0.1');
    const r = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body: text ? JSON.parse(text) : undefined };
    requests.push(r);
    const answer = script(r, requests.length);
    if (answer === 'cut') {
      req.socket.end('HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{"id":"ms');
      return;
    }
    const [status, body, headers = {}] = answer;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body === undefined ? '' : JSON.stringify(body));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { server.closeAllConnections(); server.close(); });
  return { url: `http://127.0.0.1:${server.address().port}`, requests };
}

const PY_PRELUDE = `
import json, sys
from forum_client import ForumClient, ForumError
BASE = sys.argv[1]
waits = []
def client(**options):
    kw = dict(base_url=BASE, token="af_token", sleep=waits.append, rand=lambda: 0.5)
    kw.update(options)
    return ForumClient(**kw)
def failure(call):
    try:
        call()
    except ForumError as e:
        return {"error": type(e).__name__, "status": e.status, "in_doubt": e.in_doubt, "kind": e.kind,
                "client_id": e.client_id, "message": str(e)}
    return {"error": None}
`;

/** Runs `code` (after PY_PRELUDE) with a copy of forum_client.py; its last stdout line is JSON. */
async function runPython(t, server, code) {
  const dir = tempDir(t, 'forum-py-unit-');
  copyFileSync(PY_CLIENT, join(dir, 'forum_client.py'));
  writeFileSync(join(dir, 'case.py'), PY_PRELUDE + code);
  const { stdout } = await execFileP('python3', [join(dir, 'case.py'), server.url], { cwd: dir, timeout: 30_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  return JSON.parse(stdout.trim().split('\n').at(-1));
}

test('Python: 429 with Retry-After is retried with the identical body; 400 and other refusals are never retried', { skip: NO_PYTHON }, async (t) => {
  const server = await fakeServer(t, (r, n) => {
    if (r.path === '/api/messages' && n === 1) return [429, { error: 'slow down' }, { 'retry-after': '7' }];
    if (r.path === '/api/messages') return [201, { id: 'msg_1', clientId: r.body.clientId }];
    return [400, { error: 'field "title" is required' }];
  });
  const out = await runPython(t, server, `
c = client()
msg = c.post_message("tp_1", "hi", client_id="c-1")
bad = failure(lambda: c.create_work("", "d", "a", client_id="w-1"))
print(json.dumps({"msg": msg, "bad": bad, "waits": waits}))
`);
  assert.deepEqual(out.msg, { id: 'msg_1', clientId: 'c-1' });
  assert.deepEqual(out.waits, [7.5], 'Retry-After seconds plus jitter');
  const posts = server.requests.filter((r) => r.path === '/api/messages');
  assert.equal(posts.length, 2);
  assert.deepEqual(posts[1].body, posts[0].body, 'the identical body, same clientId');
  assert.equal(out.bad.status, 400);
  assert.equal(out.bad.in_doubt, false);
  assert.match(out.bad.message, /HTTP 400: field "title" is required/);
  assert.equal(server.requests.filter((r) => r.path === '/api/work').length, 1, '400 is not retried');
});

test('Python: an unknown receipt raises in doubt with kind and client_id and the write is not resent', { skip: NO_PYTHON }, async (t) => {
  const server = await fakeServer(t, (r) =>
    r.path === '/api/receipts' ? [200, { outcome: 'unknown', kind: 'message', clientId: r.query.clientId }] : r.path === '/api/messages' ? [500, { error: 'internal error' }] : [201, { id: 'x' }]);
  const out = await runPython(t, server, `
c = client()
err = failure(lambda: c.post_message("tp_1", "x", client_id="c-9"))
print(json.dumps({"err": err, "waits": waits, "later": c.settle("message", "c-9")}))
`);
  assert.equal(out.err.error, 'ForumError');
  assert.equal(out.err.in_doubt, true);
  assert.equal(out.err.kind, 'message');
  assert.equal(out.err.client_id, 'c-9');
  assert.equal(out.err.status, 500);
  assert.match(out.err.message, /unknown \(inconclusive\).*SAME clientId/);
  assert.equal(out.later, null, 'settle() of an unknown receipt is None');
  assert.deepEqual(out.waits, []);
  assert.deepEqual(server.requests.map((r) => `${r.method} ${r.path}`), ['POST /api/messages', 'GET /api/receipts', 'GET /api/receipts']);
  assert.equal(server.requests[1].query.clientId, 'c-9');
  assert.equal(server.requests[1].query.kind, 'message');
});

test('Python: a response cut off after its headers (IncompleteRead) is a lost connection: in doubt, settled by the receipt', { skip: NO_PYTHON }, async (t) => {
  let receipt = 'recorded';
  const server = await fakeServer(t, (r) => {
    if (r.path === '/api/receipts') {
      return receipt === 'recorded'
        ? [200, { outcome: 'recorded', kind: 'message', clientId: r.query.clientId, seq: 5, request: {}, response: { status: 201, body: { id: 'msg_5', clientId: r.query.clientId } } }]
        : [200, { outcome: 'unknown', kind: 'message', clientId: r.query.clientId }];
    }
    return 'cut';
  });
  const recorded = await runPython(t, server, `
print(json.dumps({"msg": client().post_message("tp_1", "x", client_id="c-cut")}))
`);
  assert.deepEqual(recorded.msg, { id: 'msg_5', clientId: 'c-cut' }, 'the committed response, as if the write had just succeeded');
  assert.deepEqual(server.requests.map((r) => r.path), ['/api/messages', '/api/receipts']);

  receipt = 'unknown';
  server.requests.length = 0;
  const unknown = await runPython(t, server, `
c = client()
print(json.dumps({"err": failure(lambda: c.claim("wk_1", 1)), "read": failure(lambda: c.rooms())}))
`);
  assert.equal(unknown.err.error, 'ForumError', 'no raw http.client exception escapes');
  assert.equal(unknown.err.in_doubt, true);
  assert.equal(unknown.err.kind, 'work');
  assert.equal(unknown.err.status, 0);
  assert.match(unknown.err.message, /IncompleteRead/);
  assert.equal(unknown.err.client_id, server.requests[0].body.clientId);
  assert.equal(server.requests.filter((r) => r.path === '/api/work/action').length, 1, 'not resent');
  // A cut-off read is simply retried (up to max_attempts = 5).
  assert.equal(unknown.read.status, 0);
  assert.equal(server.requests.filter((r) => r.path === '/api/rooms').length, 5);
});

test('Python: a write still in doubt when the retry budget runs out is reported in doubt with its client_id', { skip: NO_PYTHON }, async (t) => {
  const server = await fakeServer(t, (r) => (r.path === '/api/receipts' ? [429, { error: 'slow down' }, { 'retry-after': '1' }] : [502, { error: 'bad gateway' }]));
  const out = await runPython(t, server, `
c = client(retries_per_minute=2, budget_ratio=0, max_attempts=50)
print(json.dumps({"err": failure(lambda: c.create_work("t", "d", "a", client_id="w-7"))}))
`);
  assert.equal(out.err.in_doubt, true);
  assert.equal(out.err.kind, 'work');
  assert.equal(out.err.client_id, 'w-7');
  assert.match(out.err.message, /retry budget exhausted/);
  assert.deepEqual(server.requests.map((r) => r.path), ['/api/work', '/api/receipts', '/api/receipts', '/api/receipts']);
});

test('Python: a2a_send sends A2A-Version 1.0 and reports google.rpc.Status errors by their message', { skip: NO_PYTHON }, async (t) => {
  const server = await fakeServer(t, (r) =>
    r.body.message.parts[0].data.action === 'status'
      ? [200, { message: { messageId: 'r', contextId: 'c', role: 'ROLE_AGENT', parts: [{ data: { action: 'status', status: 200, result: { version: '0.4.9' } }, mediaType: 'application/json' }] } }]
      : [400, { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'unknown action "nope"', details: [] } }]);
  const out = await runPython(t, server, `
c = client()
ok = c.a2a_send("status")
print(json.dumps({"ok": ok["message"]["parts"][0]["data"], "bad": failure(lambda: c.a2a_send("nope", {}))}))
`);
  assert.deepEqual(out.ok, { action: 'status', status: 200, result: { version: '0.4.9' } });
  assert.equal(server.requests[0].headers['a2a-version'], '1.0');
  assert.equal(server.requests[0].path, '/a2a/message:send');
  assert.equal(out.bad.status, 400);
  assert.match(out.bad.message, /HTTP 400: INVALID_ARGUMENT: unknown action "nope"/);
  assert.equal(server.requests.length, 2);
});

test('Python: the feed follower stores the cursor only after the callback returned, and never after it raised', { skip: NO_PYTHON }, async (t) => {
  const pages = [
    { format: 'forum-changes-v1', cursor: { originId: 'o-1', after: 2 }, hasMore: true, pollAfterSeconds: 1, events: [{ seq: 1, kind: 'room' }, { seq: 2, kind: 'topic' }] },
    { format: 'forum-changes-v1', cursor: { originId: 'o-1', after: 4 }, hasMore: false, pollAfterSeconds: 60, events: [{ seq: 2, kind: 'topic' }, { seq: 4, kind: 'message' }] },
  ];
  const server = await fakeServer(t, (r) => [200, r.query.after === '0' ? pages[0] : pages[1]]);
  const out = await runPython(t, server, `
order = []
def on_events(events, page):
    order.append("start %s" % ",".join(str(e["seq"]) for e in events))
    order.append("done")
saved = client().follow_feed(on_events, save_cursor=lambda c: order.append("save %d" % c["after"]), stop_when_caught_up=True)

stored = []
def failing(events, page):
    if page["cursor"]["after"] == 4:
        raise RuntimeError("processing failed")
err = None
try:
    client().follow_feed(failing, save_cursor=lambda c: stored.append(c["after"]), stop_when_caught_up=True)
except RuntimeError as e:
    err = str(e)
print(json.dumps({"order": order, "saved": saved, "waits": waits, "stored": stored, "err": err}))
`);
  assert.deepEqual(out.order, ['start 1,2', 'done', 'save 2', 'start 4', 'done', 'save 4'], 'a redelivered event is filtered; each save follows processing');
  assert.deepEqual(out.saved, { originId: 'o-1', after: 4 });
  assert.deepEqual(out.stored, [2], 'the page whose processing failed left the cursor where it was');
  assert.equal(out.err, 'processing failed');
  assert.equal(server.requests[1].query.originId, 'o-1');
  assert.equal(server.requests[0].query.originId, undefined, 'no originId at after=0');
});

test('both client helpers have a call for every API route of the route table', async () => {
  const { publicRoutes } = await import(pathToFileURL(join(ROOT, 'dist', 'api', 'routes.js')).href);
  const { readFileSync } = await import('node:fs');
  const js = readFileSync(join(ROOT, 'src', 'api', 'docs', 'client', 'forum-client.mjs'), 'utf8');
  const py = readFileSync(join(ROOT, 'src', 'api', 'docs', 'client', 'forum_client.py'), 'utf8');
  // Guidance documents, the agent cards (A2A discovery), the A2A catch-all and ListTasks (always the
  // empty page: this agent creates no tasks) are not calls a client makes; POST /mcp is the MCP
  // protocol endpoint, spoken by MCP SDK clients (its tools are the REST calls checked here).
  const api = publicRoutes().filter(
    (r) => r.tag !== 'Docs' && r.tag !== 'MCP' && r.method !== '*' && !r.path.startsWith('/.well-known/') && r.operationId !== 'a2aListTasks',
  );
  assert.ok(api.length >= 20, `expected the whole API in the table, found ${api.length} routes`);
  const missing = [];
  for (const r of api) {
    if (!js.includes(`'${r.method}', '${r.path}'`)) missing.push(`forum-client.mjs: ${r.method} ${r.path}`);
    if (!py.includes(`"${r.method}", "${r.path}"`)) missing.push(`forum_client.py: ${r.method} ${r.path}`);
  }
  assert.deepEqual(missing, []);
});
