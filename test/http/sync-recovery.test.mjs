/**
 * Liveness under a misbehaving object store (issue 50, High item 1 and the async start), black
 * box: a leader as a real process behind the fault proxy (test/helpers/fault-proxy.mjs) in front
 * of the real object store. A store request that stays pending and then fails — a `503 SlowDown`
 * burst answered slowly, a PUT stalled and then dropped — used to leave a sync leader refusing
 * every write until a restart; now writes succeed again on their own once the store answers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { replicaTarget, waitFor } from '../helpers/replica.mjs';

/** Posts until one write is acknowledged (201); resolves to the number of refused attempts. Bounded by `ms`. */
async function writesAgain(s, token, topicId, tag, ms) {
  let refused = 0;
  await waitFor(
    async () => {
      const r = await s.post('/api/messages', { topicId, content: `after ${tag}`, clientId: `after-${tag.replace(/[^A-Za-z0-9_-]/g, '-')}-${refused}` }, token);
      if (r.status === 201) return true;
      assert.equal(r.status, 503, JSON.stringify(r.body));
      refused++;
      return false;
    },
    ms,
    `a write to be acknowledged again after ${tag}`,
  );
  return refused;
}

test('a sync leader takes writes again on its own after slow failures: a 503 SlowDown burst answered late, and a PUT stalled then dropped', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync', proxy: true, env: { FORUM_REPLICA_ACK_TIMEOUT_MS: '2000' } });
  if (target === null) return;
  const s = await startServer(t, { env: target.serverEnv });
  const a = await s.register('writer');
  const topic = await ok(s.post('/api/topics', { title: 'throttled' }, a.token), 201);
  const faults = target.proxy.faults;
  for (const [tag, fault] of [
    ['slowDown', { kind: 'slowDown', methods: ['PUT'], ms: 1500 }],
    ['stall-drop', { kind: 'stall', methods: ['PUT'], ms: 1500, then: 'drop' }],
  ]) {
    const id = faults.addFault(fault);
    // While the store fails slowly, a write is not acknowledged: 503 within the ack timeout.
    const during = await s.post('/api/messages', { topicId: topic.id, content: `during ${tag}`, clientId: `during-${tag}` }, a.token);
    assert.equal(during.status, 503, JSON.stringify(during.body));
    assert.equal(during.body.code, 'REPLICA_UNAVAILABLE');
    faults.removeFault(id);
    // Once it answers again, writes are acknowledged again without a restart (bounded wait).
    await writesAgain(s, a.token, topic.id, tag, 20_000);
    // The write in doubt was committed once (retried with its clientId it is the same message).
    const retry = await ok(s.post('/api/messages', { topicId: topic.id, content: `during ${tag}`, clientId: `during-${tag}` }, a.token), 201);
    assert.equal(retry.clientId, `during-${tag}`);
  }
  const st = await s.cli('replication', 'status');
  assert.equal(st.json.state, 'leading');
});

test('an async leader whose store does not answer at start acknowledges nothing until its start has checked the bucket', async (t) => {
  const target = await replicaTarget(t, { mode: 'async', proxy: true });
  if (target === null) return;
  const first = await startServer(t, { env: target.serverEnv });
  const a = await first.register('writer');
  const topic = await ok(first.post('/api/topics', { title: 'start' }, a.token), 201);
  await first.stop();
  const down = target.proxy.faults.addFault({ kind: 'refuse' });
  const s = await startServer(t, { dataDir: first.dataDir, env: target.serverEnv });
  const refused = await s.post('/api/messages', { topicId: topic.id, content: 'too early', clientId: 'early' }, a.token);
  assert.equal(refused.status, 503, JSON.stringify(refused.body));
  assert.equal(refused.body.code, 'REPLICA_UNAVAILABLE');
  assert.match(refused.body.error, /not taken the leadership/);
  target.proxy.faults.removeFault(down);
  await writesAgain(s, a.token, topic.id, 'the store came back', 30_000);
  assert.equal((await s.cli('replication', 'status')).json.state, 'leading');
});
