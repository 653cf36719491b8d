/**
 * A follower's segment files are the leader's (issue 50), black box on a real object store: a
 * log that follows a bucket never rolls over by size on its own — only where the leader's objects
 * begin a segment — so a follower configured with a smaller segment size than its leader
 * (FORUM_SEGMENT_KB) keeps the leader's larger segments, and once promoted it ships chunks naming
 * segments the bucket's earlier objects share: a restore of the bucket afterwards proves. Before,
 * such a follower rolled over at its own size, at other records, and every restore after its
 * promotion refused the bucket.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cli, startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { followersCaughtUp, promoteOverChannel, replicaTarget, restoreFrom, segmentFiles, waitFor } from '../helpers/replica.mjs';

/** The first seqs of a data folder's segment files, in order (their names are the zero-padded first seq). */
const segmentStarts = (dataDir) => Object.keys(segmentFiles(dataDir)).map((name) => Number(name.slice(0, 16)));

/** Bytes in a data folder's segment files together; the name and size of its last one. */
const logBytes = (dataDir) => Object.values(segmentFiles(dataDir)).reduce((n, b) => n + b.length, 0);
const lastSegment = (dataDir) => {
  const [name, bytes] = Object.entries(segmentFiles(dataDir)).at(-1);
  return { name, bytes: bytes.length };
};

test("a follower's segments start where the leader's do, whatever its own segment size; promoted, it rolls over at its own size and the bucket still restores", { timeout: 300_000 }, async (t) => {
  // The leader rolls over at 8 KiB, the follower would at 2 KiB: without following the leader's
  // layout it would start segments at other records (every few messages).
  const target = await replicaTarget(t, { mode: 'async', env: { FORUM_SEGMENT_KB: '8', FORUM_REPLICA_SHIP_MS: '50' } });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'segment layout' }, a.token), 201);
  const follower = await startServer(t, {
    dataDir: tempDir(t, 'forum-follower-'),
    env: { ...target.storeEnv, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '50', FORUM_SEGMENT_KB: '2' },
  });
  const filler = 'x'.repeat(300);
  const acked = [];
  // Two writers, so the leader's group commits (and the chunks the follower applies) vary in size.
  await Promise.all(
    [0, 1].map(async (w) => {
      for (let i = 0; i < 40; i++) acked.push((await ok(leader.post('/api/messages', { topicId: topic.id, content: `writer ${w} post ${i} ${filler}`, clientId: `w${w}-${i}` }, a.token), 201)).clientId);
    }),
  );
  await followersCaughtUp(leader, [follower]);
  // Restarted, it opens segments larger than its own limit as they are and follows on.
  assert.ok(Object.values(segmentFiles(follower.dataDir)).some((b) => b.length > 2 * 1024), 'the follower holds segments past its own 2 KiB');
  await follower.restart();
  // Then one write at a time, each applied by the follower before the next (a batch of its own),
  // until the leader's active segment holds more than 3 KiB of them: a follower rolling over at
  // its own size (2 KiB) would have started a segment inside it, at a record the leader did not.
  const before = lastSegment(leader.dataDir);
  const onesInActive = () => {
    const now = lastSegment(leader.dataDir);
    return now.name === before.name ? now.bytes - before.bytes : now.bytes;
  };
  for (let i = 0; onesInActive() <= 3 * 1024; i++) {
    assert.ok(i < 40, 'the leader’s active segment grows past 3 KiB');
    acked.push((await ok(leader.post('/api/messages', { topicId: topic.id, content: `one at a time ${i} ${filler}`, clientId: `s${i}` }, a.token), 201)).clientId);
    await waitFor(() => logBytes(follower.dataDir) >= logBytes(leader.dataDir), 10_000, `the follower to apply message ${i}`);
  }
  const head = await followersCaughtUp(leader, [follower]);
  const leaderStarts = segmentStarts(leader.dataDir);
  assert.ok(leaderStarts.length >= 3, `the leader rolled over at its size: segments ${leaderStarts.join(', ')}`);
  const followerStarts = segmentStarts(follower.dataDir);
  const leaderBytes = segmentFiles(leader.dataDir);
  await leader.stop();

  // Promoted, the follower leads: its fence record follows the leader's last record.
  const promoted = await promoteOverChannel(follower);
  assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
  assert.equal(promoted.body.state, 'leading');
  assert.equal(promoted.body.durableSeq, head + 1, 'the fence record follows the leader’s last record');
  // As a leader it rolls over at its own size again (2 KiB): more than that written makes new segments.
  for (let i = 0; i < 20; i++) acked.push((await ok(follower.post('/api/messages', { topicId: topic.id, content: `after promotion ${i} ${filler}`, clientId: `p${i}` }, a.token), 201)).clientId);
  const after = segmentStarts(follower.dataDir).filter((s) => s > head);
  assert.ok(after.length >= 2, `the promoted follower rolled over at its own size: segments after record ${head}: ${after.join(', ')}`);
  await follower.stop();

  // The bucket proves from record 1 (what every later fresh follower does at its start).
  const { dir, run } = await restoreFrom(t, target);
  assert.equal(run.code, 0, run.stderr);
  const verify = await cli(['--data-dir', dir, 'verify'], target.storeEnv);
  assert.equal(verify.code, 0, verify.stderr);
  const restored = Object.values(segmentFiles(dir)).map((b) => b.toString('utf8')).join('');
  for (const id of acked) assert.ok(restored.includes(`"clientId":"${id}"`), `acknowledged write ${id} is in the bucket`);
  assert.deepEqual(segmentStarts(dir), segmentStarts(follower.dataDir), 'the restored log has the promoted follower’s segments');

  // While following, its segment files were the leader's, byte for byte.
  assert.deepEqual(followerStarts, leaderStarts, "the follower's segments started at the leader's records");
  const mine = segmentFiles(follower.dataDir);
  for (const name of Object.keys(leaderBytes).slice(0, -1)) assert.ok(mine[name]?.equals(leaderBytes[name]), `${name} is the leader's`);
});
