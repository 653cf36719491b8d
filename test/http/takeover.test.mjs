/**
 * Take-overs under a live, writing leader (issue 50, High items 1 and 2), black box: real server
 * processes on one bucket of a real object store (Ceph RGW in CI). A promotion or a second
 * leader's start fences first (takes the epoch, then the next chunk key), then drains to that
 * bounded head; the previous leader sees the new epoch and stops; the forum always ends with
 * exactly one leader and every acknowledged sync write on it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { promoteOverChannel, replicaTarget, replicationStatus, restoreFrom, segmentFiles, waitFor } from '../helpers/replica.mjs';
import { s3Proxy } from '../helpers/s3-proxy.mjs';

const status = replicationStatus;

const promote = promoteOverChannel;

/**
 * `n` writers posting to whichever server `target()` names until `stop.done`; every answer is
 * kept: { acked: [clientId], refused: Map<code, count> }.
 */
function writers(n, target, token, topicId, stop) {
  const acked = [];
  const refused = new Map();
  const loops = [];
  for (let w = 0; w < n; w++) {
    loops.push(
      (async () => {
        for (let i = 0; !stop.done; i++) {
          const clientId = `w${w}-${i}`;
          const r = await target().post('/api/messages', { topicId, content: `writer ${w} post ${i}`, clientId }, token);
          if (r.status === 201) acked.push(clientId);
          else {
            refused.set(r.body?.code ?? r.status, (refused.get(r.body?.code ?? r.status) ?? 0) + 1);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      })(),
    );
  }
  return { acked, refused, done: () => Promise.all(loops) };
}

test('a promotion under a writing sync leader answers, fences the old leader, and every acknowledged write is on the new one', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync', env: { FORUM_PUBLIC_URL: 'http://old.example' } });
  if (target === null) return;
  const old = await startServer(t, { env: target.serverEnv });
  const a = await old.register('writer');
  const topic = await ok(old.post('/api/topics', { title: 'take-over' }, a.token), 201);
  const f = await startServer(t, {
    dataDir: tempDir(t, 'forum-follower-'),
    env: { ...target.storeEnv, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '50', FORUM_REPLICA_MODE: 'sync', FORUM_PUBLIC_URL: 'http://new.example' },
  });
  const stop = { done: false };
  const w = writers(3, () => old, a.token, topic.id, stop);
  // Let the writers get going, then promote while they write.
  await waitFor(() => w.acked.length >= 10, 30_000, 'the first acknowledged writes');
  const promoted = await promote(f);
  assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
  assert.equal(promoted.body.state, 'leading');
  // The old leader sees the new epoch and stops acknowledging on its own.
  await waitFor(async () => (await status(old)).state === 'fenced', 15_000, 'the old leader to fence itself');
  stop.done = true;
  await w.done();
  assert.ok(w.refused.has('REPLICA_FENCED'), `the old leader refused writes once fenced (${[...w.refused.keys()].join(', ')})`);
  // Exactly one leader: the new one takes writes, the old one does not.
  await ok(f.post('/api/messages', { topicId: topic.id, content: 'after', clientId: 'after' }, a.token), 201);
  const late = await old.post('/api/messages', { topicId: topic.id, content: 'late', clientId: 'late' }, a.token);
  assert.equal(late.status, 503);
  assert.equal(late.body.code, 'REPLICA_FENCED');
  assert.equal((await status(f)).state, 'leading');
  // Every acknowledged write is on the new leader and in the bucket's one chain.
  const served = new Set(await clientIdsOf(f, a.token));
  for (const id of w.acked) assert.ok(served.has(id), `acknowledged write ${id} is on the new leader`);
  const { dir, run } = await restoreFrom(t, target);
  assert.equal(run.code, 0, run.stderr);
  const text = Object.values(segmentFiles(dir)).map((b) => b.toString('utf8')).join('');
  for (const id of w.acked) assert.ok(text.includes(`"clientId":"${id}"`), `acknowledged write ${id} is in the bucket`);
});

test('a promotion of a lagging follower takes the epoch before it takes back the backlog, so the writing leader stops at once', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const old = await startServer(t, { env: target.serverEnv });
  const a = await old.register('writer');
  const topic = await ok(old.post('/api/topics', { title: 'lagging take-over' }, a.token), 201);
  // The follower reaches the store through a proxy of its own, which holds its chunk GETs: it lags.
  const proxy = await s3Proxy(t, target.store.endpoint);
  const f = await startServer(t, {
    dataDir: tempDir(t, 'forum-follower-'),
    env: { ...target.storeEnv, AWS_ENDPOINT_URL_S3: proxy.endpoint, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '50', FORUM_REPLICA_MODE: 'sync', FORUM_PUBLIC_URL: 'http://new.example' },
  });
  const held = proxy.faults.addFault({ kind: 'stall', methods: ['GET'], key: /\/chunks\//, ms: 600_000, then: 'drop' });
  const stop = { done: false };
  const w = writers(3, () => old, a.token, topic.id, stop);
  await waitFor(() => w.acked.length >= 60, 120_000, 'a backlog of acknowledged writes the follower has not read');
  proxy.faults.removeFault(held);
  proxy.faults.journal(true);
  const promoted = await promote(f);
  proxy.faults.journal(false);
  assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
  stop.done = true;
  await w.done();
  // In the follower's requests: the epoch (the manifest PUT) comes before the backlog's chunk GETs.
  const requests = proxy.faults.requests;
  const epochAt = requests.findIndex((r) => r.kind === 'PUT' && r.key.endsWith('/manifest.json'));
  assert.ok(epochAt >= 0, `the promotion wrote the manifest (${JSON.stringify(requests.slice(0, 20))})`);
  const chunkGets = (from, to) => requests.slice(from, to).filter((r) => r.kind === 'GET' && r.key.includes('/chunks/')).length;
  // Before it: the newest chunk (the bucket's head), the chunk after the follower's head (it must
  // prove against it) and a poll of the stopped tailing loop still on its way.
  const before = requests.slice(0, epochAt).filter((r) => r.kind === 'GET' && r.key.includes('/chunks/'));
  assert.ok(before.length <= 3, `only the bucket's head and the chunk after the follower's head are read before the epoch is taken (${JSON.stringify(before)})`);
  assert.ok(chunkGets(epochAt, requests.length) >= 20, `the backlog is taken back after the epoch (${chunkGets(epochAt, requests.length)} chunk GETs)`);
  // And the forum has one leader holding every acknowledged write.
  await waitFor(async () => (await status(old)).state === 'fenced', 15_000, 'the old leader to fence itself');
  const served = new Set(await clientIdsOf(f, a.token));
  for (const id of w.acked) assert.ok(served.has(id), `acknowledged write ${id} is on the new leader`);
});

test('a second leader started on a copy while the first writes takes over: the last started wins and the first is fenced', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const first = await startServer(t, { env: target.serverEnv });
  const a = await first.register('writer');
  const topic = await ok(first.post('/api/topics', { title: 'restart race' }, a.token), 201);
  const stop = { done: false };
  const w = writers(2, () => first, a.token, topic.id, stop);
  await waitFor(() => w.acked.length >= 10, 30_000, 'the first acknowledged writes');
  const { dir, run } = await restoreFrom(t, target);
  assert.equal(run.code, 0, run.stderr);
  const second = await startServer(t, { dataDir: dir, env: target.serverEnv });
  assert.equal((await status(second)).state, 'leading');
  await waitFor(async () => (await status(first)).state === 'fenced', 15_000, 'the first leader to fence itself');
  stop.done = true;
  await w.done();
  await ok(second.post('/api/messages', { topicId: topic.id, content: 'after', clientId: 'after' }, a.token), 201);
  assert.equal((await first.post('/api/messages', { topicId: topic.id, content: 'late', clientId: 'late' }, a.token)).status, 503);
  const served = new Set(await clientIdsOf(second, a.token));
  for (const id of w.acked) assert.ok(served.has(id), `acknowledged write ${id} is on the second leader`);
});

/** Every clientId in the discussion change feed `s` serves (all pages). */
async function clientIdsOf(s, token) {
  const out = [];
  let cursor = null;
  for (;;) {
    const page = await ok(s.get(cursor === null ? '/api/changes?limit=100' : `/api/changes?limit=100&after=${cursor.after}&originId=${cursor.originId}`, token));
    for (const m of JSON.stringify(page.events).matchAll(/"clientId":"([^"]+)"/g)) out.push(m[1]);
    cursor = page.cursor;
    if (!page.hasMore) return out;
  }
}
