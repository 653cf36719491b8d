/**
 * Replication of the log to S3-compatible object storage (issue 35; docs/operate/replication.md), black
 * box: real server processes, a real object store (Ceph RGW in CI, started by .ci/run; moto
 * locally), the CLI's `restore --from` and `replication status`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { request } from 'undici';
import { cli, startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { bucketObjects, replicaTarget, restoreFrom, segmentFiles, waitFor } from '../helpers/replica.mjs';

/** `replication status` of a running leader. */
async function status(s) {
  const r = await s.cli('replication', 'status');
  assert.equal(r.code, 0, r.stderr);
  return r.json;
}

/** Writes a small mixed history: a topic with messages, a knowledge entry and a work item. */
async function history(s, token, n = 5) {
  const topic = await ok(s.post('/api/topics', { title: 'replicated' }, token), 201);
  const messages = [];
  for (let i = 0; i < n; i++) messages.push(await ok(s.post('/api/messages', { topicId: topic.id, content: `message ${i}`, clientId: `m${i}` }, token), 201));
  await ok(s.post('/api/knowledge', { title: 'note', content: 'kept knowledge', category: 'opinion', topicId: topic.id }, token), 201);
  await ok(s.post('/api/work', { clientId: 'w1', title: 'task', description: 'd', acceptanceCriteria: 'c' }, token), 201);
  return { topic, messages };
}

/** The answers a client compares across servers: a feed page and a topic's messages (bodies as text). */
async function answers(url, token, topicId) {
  const out = {};
  for (const path of ['/api/changes?limit=100', `/api/messages?topicId=${topicId}`, '/api/knowledge', '/api/work']) {
    const res = await request(url + path, { headers: { authorization: `Bearer ${token}` } });
    out[path] = `${res.statusCode} ${await res.body.text()}`;
  }
  return out;
}

for (const mode of ['async', 'sync']) {
  test(`a leader in ${mode} mode ships every record, and a restore from the bucket is its log byte for byte with the same originId and the same answers`, async (t) => {
    const target = await replicaTarget(t, { mode });
    if (target === null) return;
    const s = await startServer(t, { env: target.serverEnv });
    const a = await s.register('writer');
    const { topic } = await history(s, a.token);
    const st = await waitFor(async () => {
      const x = await status(s);
      return x.lag.records === 0 && x.shippedSeq === x.durableSeq ? x : null;
    }, 5000, 'the leader to ship everything');
    assert.equal(st.state, 'leading');
    assert.equal(st.mode, mode);
    assert.equal(st.epoch, 1);
    const before = await answers(s.url, a.token, topic.id);
    const originId = (await ok(s.get('/api/status'))).originId;
    await s.stop();

    const { dir, result, run } = await restoreFrom(t, target);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(result.sameLineage, true);
    assert.equal(result.lastSeq, st.shippedSeq);
    assert.equal(result.originId, originId);
    assert.deepEqual(segmentFiles(dir), segmentFiles(s.dataDir), 'the restored segments are the leader’s, byte for byte');
    // Served without replication, the restored folder answers exactly as the leader did.
    const r = await startServer(t, { dataDir: dir });
    assert.equal((await ok(r.get('/api/status'))).originId, originId);
    assert.deepEqual(await answers(r.url, a.token, topic.id), before);
    const verify = await r.cli('verify');
    assert.equal(verify.code, 0, verify.stderr);
  });
}

test('a restart takes the next writer epoch and goes on from the bucket’s head; a folder of another archive is refused', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  await history(s, a.token, 2);
  await s.restart();
  const st = await status(s);
  assert.equal(st.epoch, 2);
  assert.equal(st.state, 'leading');
  await ok(s.post('/api/topics', { title: 'after restart' }, a.token), 201);
  assert.equal((await status(s)).shippedSeq, (await status(s)).durableSeq);
  await s.stop();

  // Another archive on the same prefix: the server refuses to start and says why.
  const other = startServer(t, { env: target.serverEnv });
  await assert.rejects(other, /replicates archive .* but this data folder holds archive/);
});

test('every chunk a leader writes names the writer epoch it holds, the chunks its start writes (its fence record) included', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  await history(s, a.token, 2);
  await s.restart();
  await ok(s.post('/api/topics', { title: 'after restart' }, a.token), 201);
  assert.equal((await status(s)).epoch, 2);
  await s.stop();
  const chunks = (await bucketObjects(target)).filter((o) => o.key.startsWith('chunks/'));
  assert.ok(chunks.length > 0);
  const epochs = new Map();
  for (const { key, body } of chunks) {
    const header = JSON.parse(body.toString('utf8', 0, body.indexOf(10)));
    const lines = body.subarray(body.indexOf(10) + 1).toString('utf8').split('\n').filter((l) => l !== '');
    for (const line of lines) {
      const record = JSON.parse(line);
      if (record.type === 'replication.epoch') epochs.set(record.payload.epoch, { key, epoch: header.epoch });
    }
    assert.ok(header.epoch === 1 || header.epoch === 2, `${key} names epoch ${header.epoch}`);
  }
  assert.deepEqual([...epochs.keys()].sort(), [1, 2]);
  for (const [epoch, chunk] of epochs) assert.equal(chunk.epoch, epoch, `the fence record of epoch ${epoch} is in ${chunk.key}, which names epoch ${chunk.epoch}`);
});

/**
 * A stopped leader's data folder copied aside (older), then more writes on the leader: the bucket
 * now holds records beyond the copy's head, as it does after a crash that took a sync-mode batch's
 * fdatasync while its chunk PUT succeeded (the two run together).
 */
async function folderBehindTheBucket(t, target) {
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  const topic = await ok(s.post('/api/topics', { title: 'behind' }, a.token), 201);
  await ok(s.post('/api/messages', { topicId: topic.id, content: 'before the copy', clientId: 'b0' }, a.token), 201);
  await s.stop();
  const older = tempDir(t, 'forum-older-');
  cpSync(s.dataDir, older, { recursive: true });
  await s.start();
  const later = [];
  for (let i = 0; i < 3; i++) later.push(await ok(s.post('/api/messages', { topicId: topic.id, content: `after the copy ${i}`, clientId: `a${i}` }, a.token), 201));
  const bucketHead = (await status(s)).shippedSeq;
  await s.stop();
  return { older, token: a.token, topic, later, bucketHead };
}

test('a leader whose folder lacks records the bucket holds beyond its head takes them back, proven from its head, then takes the next epoch and serves them', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const { older, token, topic, later, bucketHead } = await folderBehindTheBucket(t, target);
  const r = await startServer(t, { dataDir: older, env: target.serverEnv });
  assert.match(r.stdout, /took back records/, 'the start says what it took back');
  const st = await status(r);
  assert.equal(st.state, 'leading');
  assert.equal(st.epoch, 3, 'the epoch after the two earlier starts');
  assert.equal(st.shippedSeq, bucketHead + 1, 'the bucket’s records, then its own epoch record');
  const shown = (await ok(r.get(`/api/messages?topicId=${topic.id}`, token))).messages.map((m) => m.id);
  for (const m of later) assert.ok(shown.includes(m.id), `message ${m.id} written after the copy is served`);
  await ok(r.post('/api/messages', { topicId: topic.id, content: 'on the folder that caught up', clientId: 'c1' }, token), 201);
  const after = await status(r);
  assert.equal(after.shippedSeq, after.durableSeq);
  const verify = await r.cli('verify');
  assert.equal(verify.code, 0, verify.stderr);
});

test('a leader whose folder diverged from the bucket (a record differs at a seq both hold) is refused at start, and its folder is not changed', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const { older, token, topic } = await folderBehindTheBucket(t, target);
  // Served without replication (detached: issue 50's split-brain guard), the copy writes a record of its own where the bucket has another.
  assert.equal((await cli(['--data-dir', older, 'replication', 'detach', '--yes'])).code, 0);
  const alone = await startServer(t, { dataDir: older });
  await ok(alone.post('/api/messages', { topicId: topic.id, content: 'written alone', clientId: 'x1' }, token), 201);
  const headAlone = (await alone.cli('verify')).json.lastSeq;
  await alone.stop();
  await assert.rejects(startServer(t, { dataDir: older, env: target.serverEnv }), /diverged/);
  const again = await startServer(t, { dataDir: older });
  assert.equal((await again.cli('verify')).json.lastSeq, headAlone, 'nothing of the bucket was taken into the folder');
});

test('point-in-time restore to a seq is a new lineage ending at that seq; beyond the bucket it is refused and nothing changes', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  await history(s, a.token, 6);
  const head = (await status(s)).shippedSeq;
  const originId = (await ok(s.get('/api/status'))).originId;
  await s.stop();

  const cut = head - 3;
  const { dir, result, run } = await restoreFrom(t, target, '--to-seq', String(cut));
  assert.equal(run.code, 0, run.stderr);
  assert.equal(result.lastSeq, cut);
  assert.equal(result.sameLineage, false);
  assert.notEqual(result.originId, originId);
  const r = await startServer(t, { dataDir: dir });
  const st = await ok(r.get('/api/status'));
  assert.equal(st.originId, result.originId);
  const verify = await r.cli('verify');
  assert.equal(verify.json.lastSeq, cut);

  const beyond = await restoreFrom(t, target, '--to-seq', String(head + 10));
  assert.notEqual(beyond.run.code, 0);
  assert.match(beyond.run.stderr, /beyond the bucket's last record/);
});

test('two leaders on one bucket: after the new leader takes the epoch the stale one is fenced, acknowledges no write, and the bucket holds one chain with every acknowledged write', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const old = await startServer(t, { env: { ...target.serverEnv, FORUM_PUBLIC_URL: 'http://old.example' } });
  const a = await old.register('writer');
  const topic = await ok(old.post('/api/topics', { title: 'contested' }, a.token), 201);
  const acked = [];
  for (let i = 0; i < 5; i++) acked.push((await ok(old.post('/api/messages', { topicId: topic.id, content: `before ${i}`, clientId: `b${i}` }, a.token), 201)).id);

  old.proc.kill('SIGSTOP');
  try {
    // A second server restored from the bucket takes over while the first is paused.
    const { dir, run } = await restoreFrom(t, target);
    assert.equal(run.code, 0, run.stderr);
    const next = await startServer(t, { dataDir: dir, env: { ...target.serverEnv, FORUM_PUBLIC_URL: 'http://new.example' } });
    assert.equal((await status(next)).epoch, 2);
    acked.push((await ok(next.post('/api/messages', { topicId: topic.id, content: 'on the new leader', clientId: 'n1' }, a.token), 201)).id);
  } finally {
    old.proc.kill('SIGCONT');
  }
  // The old leader's next write loses the chunk key to the new leader's fence record.
  const late = await old.post('/api/messages', { topicId: topic.id, content: 'stale write', clientId: 'late' }, a.token);
  assert.equal(late.status, 503);
  assert.equal(late.body.code, 'REPLICA_FENCED');
  assert.match(late.body.error, /http:\/\/new\.example/);
  const again = await old.post('/api/messages', { topicId: topic.id, content: 'stale write 2', clientId: 'late2' }, a.token);
  assert.equal(again.status, 503, 'a fenced leader keeps refusing writes');
  assert.equal((await status(old)).state, 'fenced');

  const { dir: check } = await restoreFrom(t, target);
  const text = Object.values(segmentFiles(check)).map((b) => b.toString('utf8')).join('');
  for (const id of acked) assert.ok(text.includes(`"id":"${id}"`), `acknowledged message ${id} is in the bucket`);
  assert.ok(!text.includes('stale write'), 'nothing of the fenced leader after the fence is in the bucket');
});

test('a chunk PUT whose answer was lost is recognised as the leader’s own write, not as another leader’s', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync', proxy: true });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  target.proxy.dropNextPutResponse(/\/chunks\//);
  const topic = await ok(s.post('/api/topics', { title: 'answer lost on the way back' }, a.token), 201);
  assert.equal(target.proxy.counts.dropped, 1, 'the PUT reached the store and its answer was dropped');
  const st = await status(s);
  assert.equal(st.state, 'leading');
  assert.equal(st.shippedSeq, st.durableSeq);
  await ok(s.post('/api/messages', { topicId: topic.id, content: 'next', clientId: 'x' }, a.token), 201);
});

test('async mode: with the object store down writes go on and the backlog is reported; once it is back the backlog is shipped', async (t) => {
  const target = await replicaTarget(t, { mode: 'async', proxy: true });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  await waitFor(async () => (await status(s)).lag.records === 0, 5000, 'the first records to ship');
  target.proxy.setMode('down');
  const topic = await ok(s.post('/api/topics', { title: 'written while the store is down' }, a.token), 201);
  for (let i = 0; i < 3; i++) await ok(s.post('/api/messages', { topicId: topic.id, content: `down ${i}`, clientId: `d${i}` }, a.token), 201);
  const down = await waitFor(async () => {
    const x = await status(s);
    return x.state === 'unavailable' ? x : null;
  }, 10_000, 'the leader to report the store unavailable');
  assert.ok(down.lag.records >= 4, `the backlog is reported (${down.lag.records} records)`);
  assert.ok(down.lag.seconds > 0, `its age is reported (${down.lag.seconds} s)`);
  assert.ok(down.lastError);
  target.proxy.setMode('up');
  const up = await waitFor(async () => {
    const x = await status(s);
    return x.state === 'leading' && x.lag.records === 0 ? x : null;
  }, 15_000, 'the backlog to ship');
  assert.equal(up.shippedSeq, up.durableSeq);
});

test('sync mode: with the object store down a write, and a read that would show it, get 503 REPLICA_UNAVAILABLE within the bounded wait; once it is back the write in doubt is committed once', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync', proxy: true, env: { FORUM_REPLICA_ACK_TIMEOUT_MS: '1500' } });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  const topic = await ok(s.post('/api/topics', { title: 'sync' }, a.token), 201);
  target.proxy.setMode('down');
  const started = Date.now();
  const first = await s.post('/api/messages', { topicId: topic.id, content: 'in doubt', clientId: 'doubt' }, a.token);
  assert.equal(first.status, 503);
  assert.equal(first.body.code, 'REPLICA_UNAVAILABLE');
  assert.ok(Date.now() - started < 10_000, 'answered within the bounded wait');
  // Once the leader knows the store is down, a write is refused before anything is appended.
  const refused = await s.post('/api/messages', { topicId: topic.id, content: 'refused', clientId: 'refused' }, a.token);
  assert.equal(refused.status, 503);
  assert.equal(refused.body.code, 'REPLICA_UNAVAILABLE');
  assert.ok(refused.headers['retry-after']);
  // A read would show the write in doubt (it is applied, not confirmed): it gets the same bounded 503.
  const read = await s.get(`/api/messages?topicId=${topic.id}`, a.token);
  assert.equal(read.status, 503);
  assert.equal(read.body.code, 'REPLICA_UNAVAILABLE');
  target.proxy.setMode('up');
  await waitFor(async () => (await status(s)).state === 'leading', 15_000, 'the leader to find the store again');
  const retried = await waitFor(async () => {
    const r = await s.post('/api/messages', { topicId: topic.id, content: 'in doubt', clientId: 'doubt' }, a.token);
    return r.status === 201 || r.status === 200 ? r : null;
  }, 15_000, 'the retried write to be acknowledged');
  assert.equal(retried.body.content, 'in doubt');
  const all = (await ok(s.get(`/api/messages?topicId=${topic.id}`, a.token))).messages;
  assert.equal(all.filter((m) => m.content === 'in doubt').length, 1, 'the write in doubt exists once, whether its first attempt was committed or not');
  const st = await status(s);
  assert.equal(st.shippedSeq, st.durableSeq);
});

test('an erasure removes the erased bytes from every object in the bucket: chunks and sealed segments', async (t) => {
  const target = await replicaTarget(t, { mode: 'async', env: { FORUM_SEGMENT_KB: '2', FORUM_REPLICA_SHIP_MS: '20' } });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const topic = await ok(s.post('/api/topics', { title: 'erasure' }, a.token), 201);
  const secret = 'SECRET-e7f3a9-leaked-key';
  const early = await ok(s.post('/api/messages', { topicId: topic.id, content: `early ${secret}-1`, clientId: 'e1' }, a.token), 201);
  // Enough records after it that its segment is sealed and compacted into a segment object.
  for (let i = 0; i < 30; i++) await ok(s.post('/api/messages', { topicId: topic.id, content: `filler ${i} ${'x'.repeat(60)}`, clientId: `f${i}` }, a.token), 201);
  const late = await ok(s.post('/api/messages', { topicId: topic.id, content: `late ${secret}-2`, clientId: 'e2' }, a.token), 201);
  await waitFor(async () => {
    const x = await status(s);
    return x.lag.records === 0 && x.segments > 0 ? x : null;
  }, 10_000, 'segments to be sealed and everything shipped');
  const holding = (await bucketObjects(target)).filter((o) => o.body.includes(secret)).map((o) => o.key);
  assert.ok(holding.some((k) => k.startsWith('segments/')), `a sealed segment object holds the text (${holding})`);
  assert.ok(holding.some((k) => k.startsWith('chunks/')), `a chunk holds the text (${holding})`);

  for (const m of [early, late]) await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: m.id }, reason: 'leaked key' }, op.token), 201);
  await waitFor(async () => (await bucketObjects(target)).every((o) => !o.body.includes(secret)), 10_000, 'no object in the bucket to hold the erased text');
  await s.stop();
  // The bucket's log is still whole: a restore verifies and shows the placeholders.
  const { dir, run } = await restoreFrom(t, target);
  assert.equal(run.code, 0, run.stderr);
  const r = await startServer(t, { dataDir: dir });
  const msgs = (await ok(r.get(`/api/messages?topicId=${topic.id}&limit=100`, a.token))).messages;
  assert.equal(msgs.find((m) => m.id === early.id).erased, true);
  assert.ok(Object.values(segmentFiles(dir)).every((b) => !b.includes(secret)));
});

test('async mode: a record erased before its chunk is shipped reaches the bucket only as its tombstone', async (t) => {
  // A long shipping interval: the erasure (and its local rewrite) is done before the first chunk.
  const target = await replicaTarget(t, { mode: 'async', env: { FORUM_REPLICA_SHIP_MS: '2500' } });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  await waitFor(async () => ((await status(s)).lag.records === 0 ? true : null), 10_000, 'the set-up to be shipped');
  const topic = await ok(s.post('/api/topics', { title: 'erased before shipping' }, a.token), 201);
  const secret = 'SECRET-4b1d77-unshipped';
  const m = await ok(s.post('/api/messages', { topicId: topic.id, content: `leak ${secret}`, clientId: 'u1' }, a.token), 201);
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: m.id }, reason: 'leaked key' }, op.token), 201);
  const before = await status(s);
  assert.ok(before.lag.records > 0, 'nothing of it was shipped before the erasure');
  await waitFor(async () => ((await status(s)).lag.records === 0 ? true : null), 15_000, 'everything to be shipped');
  const holding = (await bucketObjects(target)).filter((o) => o.body.includes(secret)).map((o) => o.key);
  assert.deepEqual(holding, [], 'no object in the bucket holds the erased text');
  await s.stop();
  const { dir, run } = await restoreFrom(t, target);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(Object.values(segmentFiles(dir)).every((b) => !b.includes(secret)));
});

test('a point-in-time restore between an erased record and its erasure reaches that point, and what was erased stays erased', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const topic = await ok(s.post('/api/topics', { title: 'erased before the cut' }, a.token), 201);
  const m = await ok(s.post('/api/messages', { topicId: topic.id, content: 'to be erased', clientId: 'e1' }, a.token), 201);
  const kept = await ok(s.post('/api/messages', { topicId: topic.id, content: 'stays readable', clientId: 'e2' }, a.token), 201);
  const item = await ok(s.post('/api/work', { title: 'secret work title', description: 'secret work text', acceptanceCriteria: 'done', clientId: 'w1' }, a.token), 201);
  const cut = (await status(s)).shippedSeq;
  const later = await ok(s.post('/api/messages', { topicId: topic.id, content: 'after the point', clientId: 'e3' }, a.token), 201);
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: m.id }, reason: 'leaked key' }, op.token), 201);
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'work', id: item.id }, reason: 'leaked work' }, op.token), 201);
  await waitFor(async () => !(await bucketObjects(target)).some((o) => o.body.includes('to be erased') || o.body.includes('secret work')), 10_000, 'the bucket to lose the erased text');
  const originId = (await ok(s.get('/api/status'))).originId;
  await s.stop();

  const { dir, result, run } = await restoreFrom(t, target, '--to-seq', String(cut));
  assert.equal(run.code, 0, run.stderr);
  assert.equal(result.pointSeq, cut);
  assert.equal(result.carriedErasures, 2, 'one erase record carried per later erasure of a kept record');
  assert.equal(result.lastSeq, cut + 2);
  assert.equal(result.sameLineage, false);
  assert.notEqual(result.originId, originId);
  for (const b of Object.values(segmentFiles(dir))) {
    assert.ok(!b.includes('to be erased') && !b.includes('secret work'), 'no restored segment holds the erased text');
    assert.ok(!b.includes('after the point'), 'nothing after the point is kept');
  }
  const r = await startServer(t, { dataDir: dir });
  const verify = await r.cli('verify');
  assert.equal(verify.code, 0, verify.stderr);
  assert.equal(verify.json.lastSeq, cut + 2);
  const msgs = (await ok(r.get(`/api/messages?topicId=${topic.id}`, a.token))).messages;
  assert.deepEqual(msgs.map((x) => x.id).sort(), [m.id, kept.id].sort(), 'the messages up to the point, none after it');
  assert.equal(msgs.find((x) => x.id === m.id).erased, true);
  assert.ok(!JSON.stringify(msgs).includes('to be erased'));
  assert.equal(msgs.find((x) => x.id === kept.id).content, 'stays readable');
  assert.ok(!msgs.some((x) => x.id === later.id));
  const work = await ok(r.get(`/api/work?limit=100`, a.token));
  assert.ok(!JSON.stringify(work).includes('secret work'), 'the erased work item reads as erased');
  // The restored archive can be written to and restarts from its log.
  await ok(r.post('/api/messages', { topicId: topic.id, content: 'on the restored archive', clientId: 'e4' }, a.token), 201);
  await r.stop();
  const again = await startServer(t, { dataDir: dir });
  assert.equal((await again.cli('verify')).json.lastSeq, cut + 3);
});

test('a point-in-time restore before an erase-purge keeps the agent erased: its registration, messages and work, and it stays disabled', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  const x = await s.register('spammer-name-to-erase');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const topic = await ok(s.post('/api/topics', { title: 'purged later' }, a.token), 201);
  const xm = await ok(s.post('/api/messages', { topicId: topic.id, content: 'spam text to erase', clientId: 'x1' }, x.token), 201);
  const xw = await ok(s.post('/api/work', { clientId: 'xw', title: 'spam work to erase', description: 'd', acceptanceCriteria: 'c' }, x.token), 201);
  const cut = (await status(s)).shippedSeq;
  const xLater = await ok(s.post('/api/work', { clientId: 'xw2', title: 'after the point', description: 'd', acceptanceCriteria: 'c' }, x.token), 201);
  await ok(s.post('/api/moderation/actions', { action: 'purge', target: { type: 'agent', id: x.id }, reason: 'spam', mode: 'erase' }, op.token), 201);
  await waitFor(async () => !(await bucketObjects(target)).some((o) => o.body.includes('to erase')), 10_000, 'the bucket to lose the erased text');
  await s.stop();

  const { dir, result, run } = await restoreFrom(t, target, '--to-seq', String(cut));
  assert.equal(run.code, 0, run.stderr);
  assert.equal(result.carriedErasures, 1);
  for (const b of Object.values(segmentFiles(dir))) assert.ok(!b.includes('to erase'), 'no restored segment holds the erased text');
  const r = await startServer(t, { dataDir: dir });
  assert.equal((await r.cli('verify')).code, 0);
  const profile = (await ok(r.get('/api/agents', a.token))).find((g) => g.id === x.id);
  assert.equal(profile.erased, true);
  assert.equal(profile.disabled, 1);
  const msgs = (await ok(r.get(`/api/messages?topicId=${topic.id}`, a.token))).messages;
  assert.equal(msgs.find((m) => m.id === xm.id).erased, true);
  const work = await ok(r.get(`/api/work?id=${xw.id}`, a.token));
  assert.ok(!JSON.stringify(work).includes('to erase'));
  assert.equal((await r.get(`/api/work?id=${xLater.id}`, a.token)).body.items?.length ?? 0, 0, 'the work item written after the point is not there');
  assert.equal((await r.post('/api/messages', { topicId: topic.id, content: 'again', clientId: 'x2' }, x.token)).status, 401, 'the purged agent stays disabled: its token is refused, as on the live archive');
});

test('replication settings are checked at start: a malformed FORUM_REPLICA_URL or mode stops the server with the rule', async (t) => {
  const dir = tempDir(t);
  await assert.rejects(startServer(t, { dataDir: dir, env: { FORUM_REPLICA_URL: 'https://bucket/x' } }), /FORUM_REPLICA_URL: a replica URL must be s3:\/\/BUCKET/);
  await assert.rejects(startServer(t, { dataDir: dir, env: { FORUM_REPLICA_URL: 's3://bucket/x', FORUM_REPLICA_MODE: 'maybe' } }), /FORUM_REPLICA_MODE must be async or sync/);
});
