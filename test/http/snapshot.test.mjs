import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { startServer, logText } from '../helpers/server.mjs';

const SNAPSHOT = (dir) => join(dir, 'index', 'state.snapshot');
const KEY = (dir) => join(dir, 'index', 'derived.key');

/** Raw response text, so answers are compared byte for byte. */
async function raw(server, path, token) {
  const res = await request(server.url + path, { headers: { authorization: `Bearer ${token}` } });
  return `${res.statusCode} ${await res.body.text()}`;
}

/** An archive with every kind of record: messages (replies, escapes, non-ASCII), knowledge revisions, work lifecycles. */
async function fill(s) {
  const a = await s.register('author');
  const b = await s.register('worker');
  const topic = (await s.post('/api/topics', { title: 'snapshots' }, a.token)).body;
  const contents = ['plain words', 'Ünïcödé — 日本 😀 ÉCLAIR', 'quote " backslash \\ newline \n tab \t', 'x'.repeat(2000), 'needle in a haystack'];
  const ids = [];
  for (let i = 0; i < 30; i++) {
    const replyTo = i > 3 && i % 4 === 0 ? ids[i - 3] : undefined;
    const m = await s.post('/api/messages', { topicId: topic.id, content: `${contents[i % contents.length]} #${i}`, clientId: `c-${i}`, ...(replyTo ? { replyTo } : {}) }, i % 2 ? a.token : b.token);
    assert.equal(m.status, 201);
    ids.push(m.body.id);
  }
  const k1 = (await s.post('/api/knowledge', { title: 'Finding', content: 'first Needle', category: 'hypothesis', topicId: topic.id }, a.token)).body;
  await s.post('/api/knowledge', { title: 'Finding', content: 'second', category: 'evidence', sources: ['https://example.org/x'], previousId: k1.id, expectedRevision: 1 }, a.token);
  const w = (await s.post('/api/work', { clientId: 'w1', title: 'Do it', description: 'describe the needle', acceptanceCriteria: 'done' }, a.token)).body;
  const claimed = (await s.post('/api/work/action', { workItemId: w.id, expectedRevision: 1, clientId: 'w2', action: 'claim' }, b.token)).body;
  const submitted = (await s.post('/api/work/action', { workItemId: w.id, expectedRevision: claimed.revision, clientId: 'w3', action: 'submit', content: 'result' }, b.token)).body;
  await s.post('/api/work/action', { workItemId: w.id, expectedRevision: submitted.revision, clientId: 'w4', action: 'review', decision: 'revise', feedback: 'again' }, a.token);
  return { a, b, topic, ids, work: w };
}

/** Every read a client can make of this archive, as raw text (the reader's own lastActive moves with its requests, so /api/agents is left out). */
/** Asserts two answer sets are byte-identical, naming the first differing path and offset (not the whole text). */
function assertSameAnswers(actual, expected, what) {
  assert.deepEqual(Object.keys(actual), Object.keys(expected));
  for (const path of Object.keys(expected)) {
    const a = actual[path];
    const e = expected[path];
    if (a === e) continue;
    let i = 0;
    while (a[i] === e[i]) i++;
    assert.fail(`${what}: ${path} differs at offset ${i}: ${JSON.stringify(a.slice(Math.max(0, i - 40), i + 40))} vs ${JSON.stringify(e.slice(Math.max(0, i - 40), i + 40))}`);
  }
}

async function answers(s, ctx) {
  const { a, topic, ids, work } = ctx;
  const paths = [
    '/api/rooms',
    '/api/topics',
    '/api/messages?limit=100',
    `/api/messages?topicId=${topic.id}&limit=7`,
    `/api/messages?replyTo=${ids[1]}`,
    `/api/messages?agentId=${a.id}&limit=100`,
    `/api/messages?messageId=${ids[5]}`,
    '/api/messages?q=NEEDLE',
    '/api/messages?q=%C3%A9clair',
    '/api/search?q=needle&history=true',
    '/api/knowledge?history=true',
    '/api/changes?after=0&limit=100',
    '/api/work/changes?after=0&limit=100',
    `/api/exchange?topicId=${topic.id}&limit=100`,
    '/api/receipts?kind=message&clientId=c-3',
    '/api/receipts?kind=work&clientId=w3',
    '/api/work?limit=100',
    `/api/work/history?workItemId=${work.id}`,
  ];
  const out = {};
  for (const p of paths) out[p] = await raw(s, p, a.token);
  return out;
}

test('a restart from the state snapshot answers byte-identically to a whole replay of the log, with the record cache on or off', async (t) => {
  const s = await startServer(t);
  const ctx = await fill(s);
  await s.stop();
  assert.ok(existsSync(SNAPSHOT(s.dataDir)), 'a clean shutdown writes the state snapshot');

  // Records after the snapshot, then a crash: the next start resumes from the (older) snapshot.
  await s.start();
  for (let i = 30; i < 36; i++) assert.equal((await s.post('/api/messages', { topicId: ctx.topic.id, content: `tail needle ${i}`, clientId: `c-${i}` }, ctx.a.token)).status, 201);
  await s.kill9();

  await s.start();
  assert.doesNotMatch(logText(s.stderr), /not used/, 'an older snapshot is used, and the records after it replayed');
  const fromSnapshot = await answers(s, ctx);
  assert.match(fromSnapshot['/api/messages?q=NEEDLE'], /tail needle 35/, 'records after the snapshot are there');
  await s.stop();

  rmSync(SNAPSHOT(s.dataDir));
  await s.start();
  const replayed = await answers(s, ctx);
  await s.stop();
  assertSameAnswers(fromSnapshot, replayed, 'snapshot + tail vs whole replay');

  rmSync(SNAPSHOT(s.dataDir));
  const cold = await startServer(t, { dataDir: s.dataDir, env: { FORUM_RECORD_CACHE_MB: '0' } });
  assertSameAnswers(await answers(cold, ctx), replayed, 'every record read back from the segments');
});

test('a damaged or foreign state snapshot is not used: the server says so, replays the log and answers the same', async (t) => {
  const other = await startServer(t);
  await other.register('elsewhere');
  await other.stop();

  const s = await startServer(t);
  const ctx = await fill(s);
  const before = await answers(s, ctx);
  await s.stop();
  const good = readFileSync(SNAPSHOT(s.dataDir));
  const damages = {
    'fails its authentication': () => {
      const bad = Buffer.from(good);
      bad[bad.length - 10] ^= 0x01;
      writeFileSync(SNAPSHOT(s.dataDir), bad);
    },
    'body bytes': () => writeFileSync(SNAPSHOT(s.dataDir), good.subarray(0, good.length - 100)),
    'no header line': () => writeFileSync(SNAPSHOT(s.dataDir), Buffer.alloc(64, 0)),
    // Another archive's snapshot under this folder's key: a forgery without it fails its MAC.
    'fails its authentication \\(HMAC': () => {
      mkdirSync(join(s.dataDir, 'index'), { recursive: true });
      copyFileSync(SNAPSHOT(other.dataDir), SNAPSHOT(s.dataDir));
    },
    // …and with the other folder's key copied too, the lineage check refuses it.
    'belongs to archive': () => {
      copyFileSync(SNAPSHOT(other.dataDir), SNAPSHOT(s.dataDir));
      copyFileSync(KEY(other.dataDir), KEY(s.dataDir));
    },
  };
  for (const [reason, damage] of Object.entries(damages)) {
    damage();
    await s.start();
    assert.match(logText(s.stderr), new RegExp(`state snapshot .* not used: it .*${reason}`), reason);
    const after = await answers(s, ctx);
    // The reader's own requests in `answers` moved nothing that these answers show.
    assertSameAnswers(after, before, reason);
    await s.stop();
    assert.ok(existsSync(SNAPSHOT(s.dataDir)), 'the shutdown wrote a good snapshot again');
  }
});

const SEARCH_DIR = (dir) => join(dir, 'index', 'search');
const shardFiles = (dir) => (existsSync(SEARCH_DIR(dir)) ? readdirSync(SEARCH_DIR(dir)).filter((f) => f.endsWith('.ngram')) : []);

/** Waits until the server's search index covers the log (its catch-up logs so on stdout). */
async function settle(s) {
  for (let i = 0; i < 500 && !/search index: covers the log/.test(s.stdout); i++) await new Promise((r) => setTimeout(r, 20));
  assert.match(s.stdout, /search index: covers the log/);
}

test('searches answer the same when the search index merges its shard files (issue 30), after a restart and a rebuild', async (t) => {
  // Three documents a shard, merged two at a time: ~11 seals leave a handful of merged files.
  const env = { FORUM_SEARCH_SHARD_DOCS: '3', FORUM_SEARCH_MERGE_FACTOR: '2' };
  const s = await startServer(t, { env });
  const ctx = await fill(s);
  const live = await answers(s, ctx);
  // Merges run on a worker thread in the background: wait until they have brought the ~11 files down.
  for (let i = 0; i < 750 && shardFiles(s.dataDir).length > 5; i++) await new Promise((r) => setTimeout(r, 20));
  await s.stop();
  const ranges = () =>
    shardFiles(s.dataDir)
      .sort()
      .map((f) => f.match(/^(\d+)-(\d+)\.ngram$/).slice(1).map(Number));
  const merged = ranges();
  assert.ok(merged.length <= 5 && merged.some(([first, last]) => last - first >= 6), `a few files, merged: ${JSON.stringify(merged)}`);
  for (let i = 1; i < merged.length; i++) assert.equal(merged[i][0], merged[i - 1][1] + 1, 'contiguous files');

  await s.start();
  assertSameAnswers(await answers(s, ctx), live, 'from merged shard files');
  await s.stop();

  rmSync(SEARCH_DIR(s.dataDir), { recursive: true });
  await s.start();
  await settle(s);
  assertSameAnswers(await answers(s, ctx), live, 'index rebuilt from the log, merging as it seals');
  await s.stop();
});

test('searches answer the same through the n-gram index, with its shards deleted, damaged or rebuilt', async (t) => {
  // Three documents a shard and no merging: the archive spans many shard files (merges are
  // tested in test/unit/ngram-merge.test.mjs and in flight by the crash test).
  const env = { FORUM_SEARCH_SHARD_DOCS: '3', FORUM_SEARCH_MERGE_FACTOR: '0' };
  const s = await startServer(t, { env });
  const ctx = await fill(s);
  const live = await answers(s, ctx);
  await s.stop();
  assert.ok(shardFiles(s.dataDir).length >= 5, `shards were sealed (${shardFiles(s.dataDir).length})`);

  await s.start();
  assertSameAnswers(await answers(s, ctx), live, 'from persisted shards');
  await s.stop();

  rmSync(SEARCH_DIR(s.dataDir), { recursive: true });
  await s.start();
  await settle(s);
  assertSameAnswers(await answers(s, ctx), live, 'index rebuilt from the log');
  await s.stop();

  const victim = shardFiles(s.dataDir).sort()[1];
  const path = join(SEARCH_DIR(s.dataDir), victim);
  const bytes = readFileSync(path);
  writeFileSync(path, bytes.subarray(0, bytes.length >> 1));
  await s.start();
  await settle(s);
  assertSameAnswers(await answers(s, ctx), live, 'a shard cut short');
  assert.match(logText(s.stderr), /search index: (dropped|shard)/, 'the damaged shard was reported');
  await s.stop();

  // Flipped bytes anywhere in a shard: found at open or by the query that reads them; either
  // way the answers stay the same (a query that meets one scans).
  for (const f of shardFiles(s.dataDir)) {
    const p = join(SEARCH_DIR(s.dataDir), f);
    const b = readFileSync(p);
    for (let at = 40; at < b.length; at += 97) b[at] ^= 0x10;
    writeFileSync(p, b);
  }
  await s.start();
  assertSameAnswers(await answers(s, ctx), live, 'flipped bytes in every shard');
  await s.stop();

  // Another archive's shards (same seqs, other records) must not be trusted.
  const other = await startServer(t, { env });
  const otherCtx = await fill(other);
  await other.stop();
  const copyForeignShards = () => {
    rmSync(SEARCH_DIR(s.dataDir), { recursive: true });
    mkdirSync(SEARCH_DIR(s.dataDir), { recursive: true });
    for (const f of shardFiles(other.dataDir)) copyFileSync(join(SEARCH_DIR(other.dataDir), f), join(SEARCH_DIR(s.dataDir), f));
  };
  copyForeignShards();
  await s.start();
  await settle(s);
  assert.match(logText(s.stderr), /fails its authentication/, "another folder's shards fail this folder's key");
  assertSameAnswers(await answers(s, ctx), live, "another archive's shards");
  await s.stop();

  // With the other folder's key too, they pass their MAC but not the match against the log.
  copyForeignShards();
  copyFileSync(KEY(other.dataDir), KEY(s.dataDir));
  await s.start();
  await settle(s);
  assert.match(logText(s.stderr), /does not match the log/, 'foreign shards are refused');
  assertSameAnswers(await answers(s, ctx), live, "another archive's shards under its own key");
  assert.ok(otherCtx.ids.length > 0);
});
