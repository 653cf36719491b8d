/**
 * Holes are loud and repaired (issue 50): the leader's periodic bucket check (FORUM_REPLICA_CHECK_MS)
 * names a chunk deleted from the middle of the bucket, puts it back from its own log, and a
 * restore of the bucket then succeeds. Black box: a leader on the real object store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { startServer } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { bucketObjects, replicaTarget, restoreFrom, waitFor } from '../helpers/replica.mjs';

test('a chunk deleted from the middle of the bucket is named by the leader’s bucket check and put back from its log; a restore then succeeds', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync', env: { FORUM_REPLICA_CHECK_MS: '1000' } });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  const topic = await ok(s.post('/api/topics', { title: 'holes' }, a.token), 201);
  // Sync mode: one chunk per group commit, so sequential posts make several chunks.
  for (let i = 0; i < 5; i++) await ok(s.post('/api/messages', { topicId: topic.id, content: `post ${i}`, clientId: `p${i}` }, a.token), 201);
  const chunks = (await bucketObjects(target)).map((o) => o.key).filter((k) => k.startsWith('chunks/'));
  assert.ok(chunks.length >= 4, `several chunks (${chunks.length})`);
  const hole = chunks[Math.floor(chunks.length / 2)];
  const original = (await bucketObjects(target)).find((o) => o.key === hole).body;
  await target.store.client.send(new DeleteObjectCommand({ Bucket: target.store.bucket, Key: `${target.prefix}/${hole}` }));

  const status = await waitFor(async () => {
    const r = await s.cli('replication', 'status');
    return r.json.bucketCheck?.missing.includes(hole) ? r.json : null;
  }, 30_000, `the bucket check to name ${hole}`);
  assert.deepEqual(status.bucketCheck.repaired, [hole]);
  assert.match(status.lastError, new RegExp(hole.replace('/', '\\/')));
  const back = (await bucketObjects(target)).find((o) => o.key === hole);
  assert.ok(back, `${hole} is in the bucket again`);
  // The same records (the header may name this leader's epoch and writer; the lines are the same bytes).
  const linesOf = (b) => b.subarray(b.indexOf(10) + 1);
  assert.ok(linesOf(back.body).equals(linesOf(original)), 'the put-back chunk holds the same log lines');

  const { run } = await restoreFrom(t, target);
  assert.equal(run.code, 0, run.stderr);
});
