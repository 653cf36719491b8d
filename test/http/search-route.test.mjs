/**
 * Issue 30, `/api/search` as fast as its halves: messages and knowledge revisions have one n-gram
 * index each, so a knowledge search never walks message documents. Whatever the mix of the log,
 * GET /api/search answers exactly what GET /api/messages and GET /api/knowledge answer with the
 * same parameters, live and through persisted shards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startServer } from '../helpers/server.mjs';

const SEARCH_DIR = (dir) => join(dir, 'index', 'search');
const KNOWLEDGE_DIR = (dir) => join(SEARCH_DIR(dir), 'knowledge');
const shardsIn = (dir) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.ngram')) : []);
const WORDS = ['needle', 'hay', 'Straw', 'ÉCLAIR', 'stack', 'bale'];

/** Sends `bodies` as POSTs to `path`, 16 at a time; resolves to the answers in order. */
async function postAll(s, token, path, bodies) {
  const pool = new Pool(s.url, { connections: 16 });
  const out = [];
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const i = next++;
      const res = await pool.request({ path, method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(bodies[i]) });
      const text = await res.body.text();
      assert.equal(res.statusCode, 201, text.slice(0, 200));
      out[i] = JSON.parse(text);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  await pool.close();
  return out;
}

/** The raw body of GET `path`. */
async function rawGet(s, path, token) {
  const res = await fetch(s.url + path, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: ${text.slice(0, 200)}`);
  return text;
}

/** The archive: more knowledge revisions than one scan reads (all early), then many more messages. */
async function fill(s) {
  const a = await s.register('a');
  const b = await s.register('b');
  const topic = (await s.post('/api/topics', { title: 'search route' }, a.token)).body;
  const items = await postAll(s, a.token, '/api/knowledge', Array.from({ length: 300 }, (_, i) => ({
    title: `${WORDS[i % 6]} finding ${i}`, content: `${WORDS[(i * 5) % 6]} ${WORDS[(i * 7) % 6]} note ${i}`, category: 'opinion',
  })));
  await postAll(s, a.token, '/api/knowledge', items.slice(0, 40).map((k, i) => ({
    title: `${k.title} revised`, content: `${WORDS[i % 6]} corrected`, category: 'opinion', previousId: k.id, expectedRevision: 1,
  })));
  await postAll(s, b.token, '/api/messages', Array.from({ length: 900 }, (_, i) => ({
    topicId: topic.id, content: `${WORDS[(i * 3) % 6]} ${WORDS[i % 5]} message ${i}${i % 300 === 7 ? ' zephyrine' : ''}`, clientId: `m${i}`,
  })));
  return { token: a.token, agents: [a.id, b.id] };
}

const QUERIES = ['needle', 'éclair', 'STRAW', 'zephyrine', 'finding', 'absentword', 'e', 'ha', 'é'];

/** Asserts that /api/search's body starts byte for byte with the two halves' bodies joined (its topics list follows), for every query. */
async function assertHalves(s, { token, agents }, what) {
  for (const q of QUERIES) {
    for (const extra of ['', '&limit=7', '&limit=100', `&agentId=${agents[0]}`, `&agentId=${agents[1]}`, '&history=true&limit=60']) {
      const common = `q=${encodeURIComponent(q)}${extra.replace('&history=true', '')}`;
      const search = await rawGet(s, `/api/search?q=${encodeURIComponent(q)}${extra}`, token);
      const messages = await rawGet(s, `/api/messages?${common}`, token);
      const knowledge = await rawGet(s, `/api/knowledge?q=${encodeURIComponent(q)}${extra}`, token);
      // The spec's two lists byte for byte, then ours: the topics whose title matches (issue 55, search-topics.test.mjs).
      const joined = `{"messages":${messages.slice('{"messages":'.length, -1)},"knowledge":${knowledge.slice('{"knowledge":'.length, -1)}`;
      assert.equal(search.slice(0, joined.length), joined, `${what}: q=${q}${extra}`);
      assert.ok(Array.isArray(JSON.parse(search).topics) && search.slice(joined.length).startsWith(',"topics":['), `${what}: q=${q}${extra}: the topics list follows`);
    }
  }
}

/** Waits until the server's search index covers the log (its catch-up logs so on stdout). */
async function settle(s) {
  for (let i = 0; i < 500 && !/search index: covers the log/.test(s.stdout); i++) await new Promise((r) => setTimeout(r, 20));
  assert.match(s.stdout, /search index: covers the log/);
}

test('GET /api/search answers byte for byte what /api/messages and /api/knowledge answer, with knowledge only early in the log', async (t) => {
  // Merging off: the test counts the sealed files per folder (merges are tested in snapshot.test.mjs).
  const s = await startServer(t, { env: { FORUM_SEARCH_SHARD_DOCS: '64', FORUM_SEARCH_MERGE_FACTOR: '0' } });
  const ctx = await fill(s);
  await assertHalves(s, ctx, 'live');
  const sample = await rawGet(s, '/api/search?q=needle&limit=100', ctx.token);
  assert.ok(JSON.parse(sample).knowledge.length > 0 && JSON.parse(sample).messages.length > 0, 'both halves have hits');
  await s.stop();
  assert.ok(shardsIn(SEARCH_DIR(s.dataDir)).length >= 10, 'message shards were sealed');
  assert.ok(shardsIn(KNOWLEDGE_DIR(s.dataDir)).length >= 4, 'knowledge shards were sealed in their own folder');

  await s.start();
  await settle(s);
  await assertHalves(s, ctx, 'from persisted shards');
  assert.equal(await rawGet(s, '/api/search?q=needle&limit=100', ctx.token), sample);
});
