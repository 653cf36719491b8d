/**
 * A bucket of many small chunks (issue 50, `promote-bound`), black box on a real object store:
 * a sync leader writes small records until it has sealed a segment for its chunk count
 * (REPLICA_SEAL_CHUNKS) and holds more chunks after it. Then a follower started fresh catches up
 * with the leader's log byte for byte, and a follower that was paused through all of it is
 * promoted: it answers, leads, holds every acknowledged write, its segment files are the
 * leader's (it rolled over where the leader sealed), and a restore of the bucket afterwards
 * proves. Correctness only: the waits are generous bounds, not speed assertions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { promoteOverChannel, replicaTarget, replicationStatus, restoreFrom, segmentFiles, waitFor } from '../helpers/replica.mjs';

/** The chunk count at which the leader seals its active segment (src/constants.ts REPLICA_SEAL_CHUNKS). */
const { REPLICA_SEAL_CHUNKS } = await import('../../dist/constants.js');

test('a fresh follower catches up over a bucket of many chunks, and a far-behind follower is promoted without losing a write', { timeout: 600_000 }, async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'many chunks' }, a.token), 201);
  const followEnv = { ...target.storeEnv, FORUM_FOLLOW: target.url, FORUM_REPLICA_MODE: 'sync' };
  // Started now, then paused through every write below: it is as far behind as it can be.
  const lagging = await startServer(t, { dataDir: tempDir(t, 'forum-lagging-'), env: followEnv });
  lagging.proc.kill('SIGSTOP');
  t.after(() => lagging.proc.kill('SIGCONT'));

  // Two sequential writers (sync: each acknowledged write is in the bucket) until the leader
  // has sealed a segment for its chunk count and holds chunks after it again.
  const acked = [];
  const stop = { done: false };
  const loops = [0, 1].map(async (w) => {
    for (let i = 0; !stop.done; i++) {
      const r = await leader.post('/api/messages', { topicId: topic.id, content: `writer ${w} post ${i}`, clientId: `w${w}-${i}` }, a.token);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      acked.push(`w${w}-${i}`);
    }
  });
  await waitFor(async () => {
    const s = await replicationStatus(leader);
    return s.segments >= 1 && s.chunks >= 20;
  }, 300_000, `the leader to seal a segment after ${REPLICA_SEAL_CHUNKS} chunks and ship 20 more`);
  stop.done = true;
  await Promise.all(loops);
  const shipped = await waitFor(async () => {
    const s = await replicationStatus(leader);
    return s.lag.records === 0 ? s.shippedSeq : null;
  }, 60_000, 'the leader to ship everything');
  assert.ok(acked.length >= REPLICA_SEAL_CHUNKS, `${acked.length} writes acknowledged`);
  const leaderSegments = segmentFiles(leader.dataDir);
  assert.ok(Object.keys(leaderSegments).length >= 2, `the leader sealed a segment for the chunk count: ${Object.keys(leaderSegments).join(', ')}`);

  // A fresh follower restores from the bucket (segment, then chunks) and tails to the head.
  const fresh = await startServer(t, { dataDir: tempDir(t, 'forum-fresh-'), env: followEnv });
  await waitFor(async () => (await replicationStatus(fresh)).appliedSeq >= shipped, 300_000, `the fresh follower to reach record ${shipped}`);
  assert.deepEqual(segmentFiles(fresh.dataDir), leaderSegments, "the fresh follower's log is the leader's, byte for byte");
  await fresh.stop();

  // The paused follower resumes and is promoted at once: it takes back the whole run.
  lagging.proc.kill('SIGCONT');
  const promoted = await promoteOverChannel(lagging);
  assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
  assert.equal(promoted.body.state, 'leading');
  assert.ok(promoted.body.durableSeq > shipped, `the new leader holds records up to ${shipped} and its fence (${promoted.body.durableSeq})`);
  // Its segment files are the leader's: the sealed one equal, the active one with the fence after it.
  const mine = segmentFiles(lagging.dataDir);
  assert.deepEqual(Object.keys(mine), Object.keys(leaderSegments), 'the promoted follower rolled over where the leader sealed');
  const names = Object.keys(leaderSegments);
  for (const name of names.slice(0, -1)) assert.ok(mine[name].equals(leaderSegments[name]), `${name} is the leader's`);
  const last = names.at(-1);
  assert.ok(mine[last].subarray(0, leaderSegments[last].length).equals(leaderSegments[last]), `${last} begins with the leader's bytes`);
  const text = Object.values(mine).map((b) => b.toString('utf8')).join('');
  for (const id of acked) assert.ok(text.includes(`"clientId":"${id}"`), `acknowledged write ${id} is on the new leader`);
  await ok(lagging.post('/api/messages', { topicId: topic.id, content: 'after', clientId: 'after' }, a.token), 201);

  // The bucket still proves from record 1: a restore (what the next fresh follower does) succeeds.
  await lagging.stop();
  await leader.stop();
  const { dir, run } = await restoreFrom(t, target);
  assert.equal(run.code, 0, run.stderr);
  const restored = Object.values(segmentFiles(dir)).map((b) => b.toString('utf8')).join('');
  for (const id of [...acked, 'after']) assert.ok(restored.includes(`"clientId":"${id}"`), `acknowledged write ${id} is in the bucket`);
});
