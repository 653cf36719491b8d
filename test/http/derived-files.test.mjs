/**
 * Issue 28 items 2 and 3: derived files (the state snapshot, the search index's shard files) are
 * authenticated with the data folder's key and checked whole; a forged or inconsistent one is
 * rebuilt from the log — the server never refuses to start over it and never serves it.
 * Every tamper is done with the server stopped, mtimes restored, then the server is started again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { startServer, logText } from '../helpers/server.mjs';
import { withPostingsRemoved } from '../helpers/tamper.mjs';

const SNAPSHOT = (dir) => join(dir, 'index', 'state.snapshot');
const KEY = (dir) => join(dir, 'index', 'derived.key');
const SEARCH_DIR = (dir) => join(dir, 'index', 'search');
const MAC_FIELD = ',"mac":"';

/** Writes `bytes` to `path` and gives it back its modification time (silent damage keeps it). */
function rewrite(path, bytes) {
  const { atime, mtime } = statSync(path);
  writeFileSync(path, bytes);
  utimesSync(path, atime, mtime);
}

/** The snapshot split into its header (parsed), its header's MAC-covered text, and its body. */
function readSnap(dir) {
  const buf = readFileSync(SNAPSHOT(dir));
  const nl = buf.indexOf(10);
  const line = buf.toString('utf8', 0, nl);
  return { header: JSON.parse(line), body: buf.subarray(nl + 1) };
}

/**
 * Writes a snapshot with `header` and `body`. `key` given: the MAC is made with it (what a writer
 * holding the key does); else the old MAC is kept (an edit made without the key).
 */
function writeSnap(dir, header, body, key) {
  const { mac, ...fields } = header;
  const text = JSON.stringify(fields).slice(0, -1);
  const newMac = key ? createHmac('sha256', key).update(text).update(body).digest('hex') : mac;
  rewrite(SNAPSHOT(dir), Buffer.concat([Buffer.from(`${text}${MAC_FIELD}${newMac}"}\n`), body]));
}

/** Body part `i + 1` of a snapshot (typed array `i` of the packed state), as a Uint32Array over a copy of its bytes, and where it starts in the body. */
function arrayPart(header, body, i) {
  const start = header.partBytes.slice(0, i + 1).reduce((a, b) => a + b, 0);
  const bytes = Buffer.from(body.subarray(start, start + header.partBytes[i + 1]));
  return { start, words: new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) };
}

/** The work states' numbers in the packed state column (domain/work/work.ts WORK_STATES). */
const WORK_STATE_NO = { open: 0, claimed: 1, submitted: 2, completed: 3, cancelled: 4 };

const folderKey = (dir) => Buffer.from(readFileSync(KEY(dir), 'latin1').trim(), 'hex');

/** A small archive: two agents, a topic, messages, a work item claimed; then the server stops (snapshot written). */
async function archive(t) {
  const s = await startServer(t);
  const a = await s.register('author');
  const b = await s.register('worker');
  const topic = (await s.post('/api/topics', { title: 'derived' }, a.token)).body;
  for (let i = 0; i < 5; i++) assert.equal((await s.post('/api/messages', { topicId: topic.id, content: `message ${i}`, clientId: `m-${i}` }, a.token)).status, 201);
  const w = (await s.post('/api/work', { clientId: 'w1', title: 'Do it', description: 'something', acceptanceCriteria: 'done' }, a.token)).body;
  assert.equal((await s.post('/api/work/action', { workItemId: w.id, expectedRevision: 1, clientId: 'w2', action: 'claim' }, b.token)).status, 200);
  const lastCreated = (await s.get(`/api/messages?topicId=${topic.id}&limit=1`, a.token)).body;
  await s.stop();
  assert.ok(existsSync(SNAPSHOT(s.dataDir)));
  return { s, a, b, topic, work: w, lastCreated };
}

/** A new message's creation time, ms. */
async function newMessageTime(s, ctx, n) {
  const res = await s.post('/api/messages', { topicId: ctx.topic.id, content: `after ${n}`, clientId: `after-${n}` }, ctx.a.token);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return Date.parse(res.body.created);
}

const headerCases = {
  'a rewound seq': (h) => ({ ...h, seq: h.seq - 3 }),
  'a lastTime of 2100': (h) => ({ ...h, lastTime: '2100-01-01T00:00:00.000Z' }),
  'a garbage lastTime': (h) => ({ ...h, lastTime: 'not a time' }),
  'its segments removed': (h) => {
    const { segments, ...rest } = h;
    assert.ok(segments.length > 0);
    return rest;
  },
};

for (const withKey of [false, true]) {
  for (const [name, edit] of Object.entries(headerCases)) {
    const how = withKey ? 'with its MAC recomputed under the key' : 'without the key';
    test(`a snapshot header with ${name} (${how}) is not used: the server starts, replays the log and answers as the log says`, async (t) => {
      const ctx = await archive(t);
      const { s } = ctx;
      const { header, body } = readSnap(s.dataDir);
      writeSnap(s.dataDir, edit(header), body, withKey ? folderKey(s.dataDir) : undefined);
      await s.start();
      const log = logText(s.stderr);
      assert.match(log, /state snapshot .* not used: it /, 'the warning says why');
      assert.match(log, withKey ? /(does not match the log|has a header whose)/ : /fails its authentication/);
      const status = await s.get('/api/status');
      assert.equal(status.status, 200);
      assert.equal(status.body.writeStop, false);
      const before = Date.now();
      const t1 = await newMessageTime(s, ctx, 1);
      assert.ok(t1 >= before - 5000 && t1 <= Date.now() + 5000, `a new record gets the current time, not ${new Date(t1).toISOString()}`);
      const all = (await s.get(`/api/messages?topicId=${ctx.topic.id}&limit=100`, ctx.a.token)).body.messages;
      assert.deepEqual(all.map((m) => m.content).slice(0, 6).sort(), ['after 1', 'message 0', 'message 1', 'message 2', 'message 3', 'message 4']);
      await s.stop();
      // The rebuilt state's snapshot is sound again: the next start uses it.
      await s.start();
      assert.doesNotMatch(logText(s.stderr), /not used/);
      assert.equal((await s.get('/api/status')).status, 200);
    });
  }
}

test('a snapshot body edited to open writes, swap tokens and move work (header kept consistent, no key) is detected; state, tokens and work are as the log says, and the next snapshot is sound', async (t) => {
  const ctx = await archive(t);
  const { s, a, b, work } = ctx;
  // The log says: writes stopped.
  await s.start();
  assert.equal((await s.cli('writes', 'stop')).code, 0);
  await s.stop();
  const { header, body } = readSnap(s.dataDir);
  const objectsBytes = header.partBytes[0];
  const packed = deserialize(body.subarray(0, objectsBytes));
  assert.equal(packed.settings.writeStop, true);
  packed.settings.writeStop = false;
  const [e0, e1] = packed.agents.order;
  [e0.profile.tokenHash, e1.profile.tokenHash] = [e1.profile.tokenHash, e0.profile.tokenHash];
  // The work item's state moved to completed in its column (an array part of the body).
  const states = arrayPart(header, body, packed.work.rows.state);
  assert.equal(states.words[0], WORK_STATE_NO.claimed);
  const arraysPart = Buffer.from(body.subarray(objectsBytes));
  arraysPart.writeUInt32LE(WORK_STATE_NO.completed, states.start - objectsBytes);
  const objects = serialize(packed);
  const forged = Buffer.concat([objects, arraysPart]);
  writeSnap(s.dataDir, { ...header, partBytes: [objects.length, ...header.partBytes.slice(1)], bodyBytes: forged.length }, forged);

  await s.start();
  assert.match(logText(s.stderr), /state snapshot .* not used: it fails its authentication/);
  assert.equal((await s.get('/api/status')).body.writeStop, true, 'writes stay stopped, as the log says');
  const refused = await s.post('/api/messages', { topicId: ctx.topic.id, content: 'during the stop', clientId: 'stop-1' }, a.token);
  assert.notEqual(refused.status, 201);
  // Tokens identify whom the log says: a's receipts answer to a's token only.
  assert.equal((await s.get('/api/receipts?kind=message&clientId=m-0', a.token)).body.outcome, 'recorded');
  assert.notEqual((await s.get('/api/receipts?kind=message&clientId=m-0', b.token)).body.outcome, 'recorded');
  const item = (await s.get('/api/work?limit=100', a.token)).body.items.find((w) => w.id === work.id);
  assert.equal(item.state, 'claimed');
  await s.stop();
  // The snapshot written at this stop holds the log's state, not the forgery.
  const snapAgain = readSnap(s.dataDir);
  const again = deserialize(snapAgain.body.subarray(0, snapAgain.header.partBytes[0]));
  assert.equal(again.settings.writeStop, true);
  assert.equal(arrayPart(snapAgain.header, snapAgain.body, again.work.rows.state).words[0], WORK_STATE_NO.claimed);
  await s.start();
  assert.doesNotMatch(logText(s.stderr), /not used/);
  assert.equal((await s.get('/api/status')).body.writeStop, true);
});

test('the derived-file key is made 0600 at the first start, and a folder whose key is gone rebuilds its snapshot and shards', async (t) => {
  const ctx = await archive(t);
  const { s } = ctx;
  assert.equal(statSync(KEY(s.dataDir)).mode & 0o777, 0o600);
  assert.match(readFileSync(KEY(s.dataDir), 'latin1'), /^[0-9a-f]{64}\n$/);
  const old = readFileSync(KEY(s.dataDir), 'latin1');
  rmSync(KEY(s.dataDir));
  await s.start();
  assert.match(logText(s.stderr), /state snapshot .* not used: it fails its authentication/);
  assert.notEqual(readFileSync(KEY(s.dataDir), 'latin1'), old, 'a new key');
  assert.equal(statSync(KEY(s.dataDir)).mode & 0o777, 0o600);
  assert.equal((await s.get(`/api/messages?topicId=${ctx.topic.id}&q=message%203`, ctx.a.token)).body.messages.length, 1);
});

test('a search shard with its postings removed and every CRC recomputed is dropped, and q finds the message again', async (t) => {
  const s = await startServer(t, { env: { FORUM_SEARCH_SHARD_DOCS: '4' } });
  const a = await s.register('author');
  const topic = (await s.post('/api/topics', { title: 'hidden' }, a.token)).body;
  const words = ['zebra crossing', 'zebra stripes', 'zebra herd', 'a zebra', 'lion', 'tiger', 'bear', 'wolf', 'fox', 'owl', 'cat', 'dog'];
  for (const [i, w] of words.entries()) assert.equal((await s.post('/api/messages', { topicId: topic.id, content: w, clientId: `c${i}` }, a.token)).status, 201);
  const q = async () => (await s.get(`/api/messages?q=zebra&limit=100`, a.token)).body.messages.map((m) => m.content).sort();
  const expected = ['a zebra', 'zebra crossing', 'zebra herd', 'zebra stripes'];
  assert.deepEqual(await q(), expected);
  await s.stop();
  const shards = readdirSync(SEARCH_DIR(s.dataDir)).filter((f) => f.endsWith('.ngram')).sort();
  assert.ok(shards.length >= 2, `shards sealed: ${shards}`);
  // The shard holding the zebra messages (the messages are documents 2..5 after the room and topic).
  const victim = shards.find((f) => Number(f.slice(0, 16)) <= 4) ?? shards[0];
  {
    const path = join(SEARCH_DIR(s.dataDir), victim);
    rewrite(path, withPostingsRemoved(readFileSync(path)));
  }

  await s.start();
  assert.match(logText(s.stderr), new RegExp(`search index: dropped .*${victim}: fails its authentication`));
  assert.deepEqual(await q(), expected, 'the hidden messages are found again');
  for (let i = 0; i < 500 && !/search index: covers the log/.test(s.stdout); i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(await q(), expected, 'and through the rebuilt index');
  await s.stop();
  assert.ok(readdirSync(SEARCH_DIR(s.dataDir)).includes(victim), 'the shard was written again');
});
