/**
 * The JavaScript client helper's retry rules (retry-budget.md) against a scripted fetch: no
 * server, no real waiting. End-to-end use against a server is in test/http/docs.test.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/server.mjs';

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

test('an unknown receipt leads to a retry with the same clientId after a backoff', async () => {
  const { client, calls, waits } = scripted((call, n) => {
    if (n === 1) return json(500, { error: 'internal error' });
    if (call.url.pathname === '/api/receipts') return json(200, { outcome: 'unknown', kind: 'message', clientId: 'c-9' });
    return json(201, { id: 'msg_9' });
  });
  assert.equal((await client.postMessage({ topicId: 'tp_1', content: 'x', clientId: 'c-9' })).id, 'msg_9');
  assert.deepEqual(calls.map((c) => `${c.init.method} ${c.url.pathname}`), ['POST /api/messages', 'GET /api/receipts', 'POST /api/messages']);
  assert.equal(calls[2].body.clientId, 'c-9');
  assert.deepEqual(waits, [500], 'full jitter: random × min(cap, base × 2^0)');
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
