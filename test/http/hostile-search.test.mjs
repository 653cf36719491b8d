import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Pool } from 'undici';
import { startServer } from '../helpers/server.mjs';

/** Posts every content in `contents` to `topicId`, 16 at a time. */
async function postAll(pool, token, topicId, contents, prefix) {
  let next = 0;
  const worker = async () => {
    while (next < contents.length) {
      const i = next++;
      const res = await pool.request({
        path: '/api/messages',
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ topicId, content: contents[i], clientId: `${prefix}-${i}` }),
      });
      const text = await res.body.text();
      assert.equal(res.statusCode, 201, text.slice(0, 200));
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

/** GET `path` as JSON with its latency in ms. */
async function timedGet(pool, path, token) {
  const started = performance.now();
  const res = await pool.request({ path, method: 'GET', headers: token ? { authorization: `Bearer ${token}` } : {} });
  const body = await res.body.json();
  return { status: res.statusCode, body, ms: performance.now() - started };
}

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

/**
 * While `loops` clients repeat `search`, one client polls GET /api/status; resolves to the
 * status latencies (ms) and the search latencies.
 */
async function statusUnderSearch(s, token, searches, ms) {
  const pool = new Pool(s.url, { connections: searches.length + 1 });
  const until = performance.now() + ms;
  const status = [];
  const search = [];
  const searchLoop = async (path) => {
    while (performance.now() < until) {
      const r = await timedGet(pool, path, token);
      assert.equal(r.status, 200);
      search.push(r.ms);
    }
  };
  const statusLoop = async () => {
    while (performance.now() < until) {
      status.push((await timedGet(pool, '/api/status')).ms);
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  await Promise.all([statusLoop(), ...searches.map(searchLoop)]);
  await pool.close();
  return { status, search };
}

// Issue 21 case 1: content built so that a match attempt inside escapes rescans the message
// (was O(L²) per message: 2.8 s for 28 such messages, and every other request waited).
test('a search over messages made of escapes is linear and never holds the event loop', async (t) => {
  const s = await startServer(t);
  const a = await s.register('hostile');
  const topic = (await s.post('/api/topics', { title: 'escapes' }, a.token)).body;
  const pool = new Pool(s.url, { connections: 16 });
  t.after(() => pool.close());
  const crafted = `x${'\n'.repeat(7990)}x<i>`;
  await postAll(pool, a.token, topic.id, Array(28).fill(crafted), 'esc');
  await postAll(pool, a.token, topic.id, ['a plain line with an n in it'], 'plain');

  for (const path of ['/api/search?q=n', '/api/messages?q=n', '/api/messages?q=%0Ax%3C']) {
    const r = await timedGet(pool, path, a.token);
    assert.equal(r.status, 200);
    const expected = path.endsWith('%3C') ? 28 : 1;
    assert.equal(r.body.messages.length, expected, path);
  }
  const { status, search } = await statusUnderSearch(s, a.token, Array(4).fill('/api/search?q=n'), 2000);
  t.diagnostic(`status p50 ${percentile(status, 50).toFixed(2)} ms, p99 ${percentile(status, 99).toFixed(2)} ms over ${status.length}; search p50 ${percentile(search, 50).toFixed(2)} ms`);
  assert.ok(search.length >= 8, `searches ran (${search.length})`);
  // The measure is status p99 <= 10 ms (the benchmark reports it). On a test machine
  // shared with other test files the tail belongs to the scheduler, so the test bounds p90 and
  // the worst case: the behaviour it guards held every request for seconds.
  assert.ok(percentile(status, 90) <= 50, `status p90 ${percentile(status, 90).toFixed(1)} ms while crafted searches run`);
  assert.ok(Math.max(...status) <= 1000, `slowest status ${Math.max(...status).toFixed(1)} ms while crafted searches run`);
  assert.ok(percentile(search, 50) <= 250, `search p50 ${percentile(search, 50).toFixed(1)} ms`);
});

// Issue 21 case 2: a query whose characters are common in old messages and absent from the newest
// ones (the old scan chose its anchor from the newest 256 messages: 19.6 s on the event loop).
test('a query whose characters fill old messages costs time linear in the text and does not stall other requests', async (t) => {
  const s = await startServer(t);
  const a = await s.register('hostile');
  const topic = (await s.post('/api/topics', { title: 'anchors' }, a.token)).body;
  const pool = new Pool(s.url, { connections: 16 });
  t.after(() => pool.close());
  await postAll(pool, a.token, topic.id, Array(600).fill('a'.repeat(7990)), 'a');
  await postAll(pool, a.token, topic.id, Array(300).fill('aA'.repeat(3995)), 'aA');
  await postAll(pool, a.token, topic.id, [`${'a'.repeat(198)}Ab here`], 'hit');
  await postAll(pool, a.token, topic.id, Array(300).fill('zzz yyy www'), 'z');
  const q = encodeURIComponent(`${'a'.repeat(198)}Ab`);

  const r = await timedGet(pool, `/api/search?q=${q}`, a.token);
  assert.equal(r.status, 200);
  assert.equal(r.body.messages.length, 1, 'the one message that holds the query is found');
  const { status, search } = await statusUnderSearch(s, a.token, Array(4).fill(`/api/messages?q=${q}`), 2000);
  t.diagnostic(`status p50 ${percentile(status, 50).toFixed(2)} ms, p99 ${percentile(status, 99).toFixed(2)} ms over ${status.length}; search p50 ${percentile(search, 50).toFixed(2)} ms`);
  assert.ok(percentile(status, 90) <= 50, `status p90 ${percentile(status, 90).toFixed(1)} ms while crafted searches run`);
  assert.ok(Math.max(...status) <= 1000, `slowest status ${Math.max(...status).toFixed(1)} ms while crafted searches run`);
  assert.ok(percentile(search, 50) <= 1000, `search p50 ${percentile(search, 50).toFixed(1)} ms`);
});
