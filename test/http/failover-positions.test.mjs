/**
 * Failover without silent skips (issue 50; docs/operate/replication.md#positions), black box on a
 * real object store: an async leader cut off from the store acknowledges writes the bucket never
 * gets; a follower is promoted. The new leader gives its records positions past a gap, so no id
 * and no feed position the lost branch gave out is ever given to another record: the lost ids
 * name nothing, a cursor taken on the old leader after them gets 409 CURSOR_LOST naming where
 * the histories part, and a cursor at that point continues without a skip. A restart of the new
 * leader on its own folder keeps positions as they are.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { followersCaughtUp, promoteOverChannel, replicaTarget, waitFor } from '../helpers/replica.mjs';

/** The number an id carries (`msg_2000000001` → 2000000001). */
const positionOfId = (id) => Number(id.slice(id.indexOf('_') + 1));

test('after an async failover the new leader never gives a lost record\'s id or feed position to another record, and an old cursor past them learns it (409 CURSOR_LOST)', async (t) => {
  const target = await replicaTarget(t, { mode: 'async', proxy: true, env: { FORUM_PUBLIC_URL: 'http://old.example', FORUM_REPLICA_SHIP_MS: '50' } });
  if (target === null) return;
  const old = await startServer(t, { env: target.serverEnv });
  const a = await old.register('writer');
  const topic = await ok(old.post('/api/topics', { title: 'positions' }, a.token), 201);
  const before = [];
  for (let i = 0; i < 3; i++) before.push(await ok(old.post('/api/messages', { topicId: topic.id, content: `shipped ${i}`, clientId: `s${i}` }, a.token), 201));
  const followerEnv = { ...target.storeEnv, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '50', FORUM_REPLICA_MODE: 'async', FORUM_PUBLIC_URL: 'http://new.example' };
  const f = await startServer(t, { dataDir: tempDir(t, 'forum-follower-'), env: followerEnv });
  await followersCaughtUp(old, [f]);
  // The fork point: everything up to here is in the bucket.
  const fork = (await ok(old.get('/api/changes?after=0&limit=100', a.token))).cursor;

  // The old leader loses the store; in async mode it still acknowledges, and those writes are lost.
  target.proxy.setMode('down');
  const lost = [];
  for (let i = 0; i < 3; i++) lost.push(await ok(old.post('/api/messages', { topicId: topic.id, content: `lost ${i}`, clientId: `l${i}` }, a.token), 201));
  const oldPage = await ok(old.get(`/api/changes?after=${fork.after}&originId=${fork.originId}&limit=100`, a.token));
  assert.deepEqual(oldPage.events.map((e) => e.message?.id), lost.map((m) => m.id), 'the old leader served the lost records in its feed');
  const lostCursor = oldPage.cursor;

  const promoted = await promoteOverChannel(f);
  assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
  const fresh = [];
  for (let i = 0; i < 3; i++) fresh.push(await ok(f.post('/api/messages', { topicId: topic.id, content: `new ${i}`, clientId: `n${i}` }, a.token), 201));

  // Ids: the new leader's start past a gap of at least 1e9, and none is a lost one.
  const lastShipped = positionOfId(before.at(-1).id);
  for (const m of fresh) assert.ok(positionOfId(m.id) >= lastShipped + 1e9, `${m.id} starts past the gap after ${before.at(-1).id}`);
  const lostIds = new Set(lost.map((m) => m.id));
  for (const m of fresh) assert.ok(!lostIds.has(m.id), `${m.id} is not a lost record's id`);
  for (const m of lost) {
    const found = await ok(f.get(`/api/messages?topicId=${topic.id}&messageId=${m.id}`, a.token));
    assert.deepEqual(found.messages, [], `the lost id ${m.id} names no message on the new leader`);
    const reply = await f.post('/api/messages', { topicId: topic.id, content: 'reply to a lost one', clientId: `r-${m.id}`, replyTo: m.id }, a.token);
    assert.equal(reply.status, 404, `a reply to the lost ${m.id} is refused, not attached to another message: ${JSON.stringify(reply.body)}`);
  }

  // Feeds: a cursor at the fork point continues with exactly the new records, no skip.
  const page = await ok(f.get(`/api/changes?after=${fork.after}&originId=${fork.originId}&limit=100`, a.token));
  assert.deepEqual(page.events.map((e) => e.message?.id).filter(Boolean), fresh.map((m) => m.id));
  const oldSeqs = new Set(oldPage.events.map((e) => e.seq));
  for (const e of page.events) assert.ok(!oldSeqs.has(e.seq), `position ${e.seq} was the lost branch's and is not given again`);
  // A cursor taken on the old leader after the lost records: 409, naming the fork point.
  const stale = await f.get(`/api/changes?after=${lostCursor.after}&originId=${lostCursor.originId}&limit=100`, a.token);
  assert.equal(stale.status, 409, JSON.stringify(stale.body));
  assert.equal(stale.body.code, 'CURSOR_LOST');
  assert.match(stale.body.error, new RegExp(`after=${fork.after}\\b`), 'the error names the position to reread from');

  // A restart of the new leader on its own folder (the last writer) keeps positions as they are:
  // its epoch record takes the next position, the next message the one after it.
  const last = positionOfId(fresh.at(-1).id);
  await f.stop();
  const leaderEnv = { ...target.storeEnv, FORUM_REPLICA_URL: target.url, FORUM_REPLICA_MODE: 'async', FORUM_PUBLIC_URL: 'http://new.example' };
  const again = await startServer(t, { dataDir: f.dataDir, env: leaderEnv });
  const next = await waitFor(async () => {
    const r = await again.post('/api/messages', { topicId: topic.id, content: 'after a restart', clientId: 'after-restart' }, a.token);
    return r.status === 201 ? r.body : null;
  }, 30_000, 'the restarted leader to take writes');
  assert.equal(positionOfId(next.id), last + 2, `${next.id}: one epoch record after ${fresh.at(-1).id}, no jump`);
});
