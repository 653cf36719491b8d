/**
 * A cursor ahead of a follower's head is replication lag, not restored data (issue 50): the
 * follower answers "not yet" — an empty, caught-up page at the same cursor, or a long poll held
 * until the feed passes it — where a leader (or a server without replication) answers 409
 * CURSOR_AHEAD. Black box: a leader and a follower on the real object store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { replicationStatus, replicaTarget, waitFor } from '../helpers/replica.mjs';
import { s3Proxy } from '../helpers/s3-proxy.mjs';

test('a follower answers a cursor ahead of its head with an empty page at that cursor, not 409; the leader still answers 409 beyond its own head', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'lag' }, a.token), 201);
  // The follower restores what the bucket holds now, then polls only once a minute: it lags.
  const f = await startServer(t, { dataDir: tempDir(t, 'forum-follower-'), env: { ...target.storeEnv, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '60000' } });
  for (let i = 0; i < 3; i++) await ok(leader.post('/api/messages', { topicId: topic.id, content: `ahead ${i}`, clientId: `a${i}` }, a.token), 201);
  const page = await ok(leader.get('/api/changes?limit=100', a.token));
  const { originId, after } = page.cursor;
  const followerHead = (await ok(f.get('/api/changes?limit=100', a.token))).cursor.after;
  assert.ok(after > followerHead, `the leader's cursor (${after}) is ahead of the follower's head (${followerHead})`);

  const notYet = await f.get(`/api/changes?after=${after}&originId=${originId}`, a.token);
  assert.equal(notYet.status, 200, JSON.stringify(notYet.body));
  assert.deepEqual(notYet.body.cursor, { originId, after });
  assert.equal(notYet.body.hasMore, false);
  assert.deepEqual(notYet.body.events, []);

  // A long poll is held (here until its wait ends) and answered the same way.
  const held = await f.get(`/api/changes?after=${after}&originId=${originId}&wait=1`, a.token);
  assert.equal(held.status, 200, JSON.stringify(held.body));
  assert.deepEqual(held.body.cursor, { originId, after });

  // The inbox and the work feed say "not yet" too.
  const inbox = await ok(leader.get('/api/inbox', a.token));
  const inboxAhead = await f.get(`/api/inbox?after=${after}&originId=${inbox.cursor.originId}`, a.token);
  assert.equal(inboxAhead.status, 200, JSON.stringify(inboxAhead.body));
  const work = await ok(f.get('/api/work/changes', a.token));
  const workAhead = await f.get(`/api/work/changes?after=${work.cursor.after + 5}&originId=${work.cursor.originId}`, a.token);
  assert.equal(workAhead.status, 200, JSON.stringify(workAhead.body));
  assert.deepEqual(workAhead.body.events, []);

  // Beyond the leader's own head it is still restored data: 409 CURSOR_AHEAD.
  const beyond = await leader.get(`/api/changes?after=${after + 100}&originId=${originId}`, a.token);
  assert.equal(beyond.status, 409);
  assert.equal(beyond.body.code, 'CURSOR_AHEAD');
});

test('a follower that fell behind catches up by fetching the chunks after its head several at a time, and ends at the leader\'s head', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'catch up' }, a.token), 201);
  // The follower reaches the store through a proxy that, for now, holds each chunk GET 3 s: it lags.
  const proxy = await s3Proxy(t, target.store.endpoint);
  const f = await startServer(t, { dataDir: tempDir(t, 'forum-follower-'), env: { ...target.storeEnv, AWS_ENDPOINT_URL_S3: proxy.endpoint, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '50' } });
  const slow = proxy.faults.addFault({ kind: 'stall', methods: ['GET'], key: /\/chunks\//, ms: 3000, then: 'forward' });
  // One write at a time: in sync mode each is a chunk of its own.
  for (let i = 0; i < 60; i++) await ok(leader.post('/api/messages', { topicId: topic.id, content: `post ${i}`, clientId: `c${i}` }, a.token), 201);
  const head = (await replicationStatus(leader)).shippedSeq;
  const behind = (await replicationStatus(f)).appliedSeq;
  assert.ok(head - behind >= 40, `the follower is behind (${behind} of ${head})`);
  proxy.faults.journal(true);
  proxy.faults.removeFault(slow);
  await waitFor(async () => (await replicationStatus(f)).appliedSeq >= head, 120_000, 'the follower to reach the leader\'s head');
  proxy.faults.journal(false);
  const chunkGets = proxy.faults.requests.filter((r) => r.kind === 'GET' && r.key.includes('/chunks/'));
  const most = Math.max(...chunkGets.map((r) => r.inFlight));
  assert.ok(most >= 2, `chunk GETs overlapped while catching up (at most ${most} open at once over ${chunkGets.length} GETs)`);
  // And it serves what the leader serves.
  const leaderPage = await ok(leader.get(`/api/changes?limit=100`, a.token));
  const followerPage = await ok(f.get(`/api/changes?limit=100`, a.token));
  assert.deepEqual(followerPage, leaderPage);
});
