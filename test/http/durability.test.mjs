/**
 * Functional checks of the performance design (issue 10): group commit never acknowledges a
 * write before its fdatasync, and pre-serialised or cached JSON never outlives a change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { open } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { startInProcess } from '../helpers/inprocess.mjs';

/**
 * Instruments both ways the log makes a batch durable — FileHandle.datasync on the thread pool
 * (slowed down by 30 ms) and fdatasyncSync on the main thread (a lone write, issue 56) — and
 * records, for each call, the head it covers and when it finished: [{coveredUpTo, doneAt, lone}].
 */
async function recordSyncs(t, h) {
  const probe = await open(join(h.dataDir, 'meta.json'), 'r');
  const proto = Object.getPrototypeOf(probe);
  await probe.close();
  const original = proto.datasync;
  const originalSync = fs.fdatasyncSync;
  const synced = [];
  proto.datasync = async function () {
    // The batch is fully written before datasync is called, and appends cannot interleave with
    // that synchronous sequence, so the head now is exactly what this call makes durable.
    const coveredUpTo = h.app.log.headSeq;
    await new Promise((r) => setTimeout(r, 30));
    await original.call(this);
    synced.push({ coveredUpTo, doneAt: performance.now(), lone: false });
  };
  fs.fdatasyncSync = function (fd) {
    const coveredUpTo = h.app.log.headSeq;
    originalSync(fd);
    synced.push({ coveredUpTo, doneAt: performance.now(), lone: true });
  };
  syncBuiltinESMExports(); // the log's `import { fdatasyncSync }` now calls the instrumented one
  t.after(() => {
    proto.datasync = original;
    fs.fdatasyncSync = originalSync;
    syncBuiltinESMExports();
  });
  return synced;
}

/** Asserts that each answered write's record was covered by an fdatasync that finished before its answer arrived. */
function assertAckedAfterSync(results, synced) {
  for (const { res, at } of results) {
    assert.equal(res.status, 201);
    const seq = Number(res.body.id.split('_')[1]);
    const covering = synced.find((s) => s.coveredUpTo >= seq);
    assert.ok(covering, `message ${res.body.id} was covered by an fdatasync`);
    assert.ok(covering.doneAt <= at, `message ${res.body.id} was acknowledged before its fdatasync finished`);
  }
}

test('group commit never acknowledges a write before the fdatasync that covers it', async (t) => {
  const h = await startInProcess(t);
  const a = await h.register('durable');
  const topic = (await h.post('/api/topics', { title: 'fsync' }, a.token)).body;
  const synced = await recordSyncs(t, h);
  const results = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const res = await h.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `c${i}` }, a.token);
      return { res, at: performance.now() };
    }),
  );
  assert.ok(synced.length >= 1);
  assert.ok(synced.length < 40, `writes were batched (${synced.length} fdatasyncs for 40 writes)`);
  assertAckedAfterSync(results, synced);
});

test('a lone write is acknowledged only after its fdatasync on the main thread', async (t) => {
  const h = await startInProcess(t, { env: { FORUM_LONE_WRITE_SYNC_MAX_US: '60000000' } });
  const a = await h.register('lone');
  const topic = (await h.post('/api/topics', { title: 'lone' }, a.token)).body;
  const synced = await recordSyncs(t, h);
  const results = [];
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 20)); // nothing else to do: each write is lone
    const res = await h.post('/api/messages', { topicId: topic.id, content: `lone ${i}`, clientId: `l${i}` }, a.token);
    results.push({ res, at: performance.now() });
  }
  assert.ok(synced.filter((s) => s.lone).length >= 5, `the spaced writes synced on the main thread (${JSON.stringify(synced)})`);
  assertAckedAfterSync(results, synced);
});

test('pre-serialised and cached JSON never outlives a change', async (t) => {
  const h = await startInProcess(t);
  const creator = await h.register('creator');
  const worker = await h.register('worker');
  // Work: every revision is visible at once in list, history and feed.
  const item = (await h.post('/api/work', { clientId: 'w1', title: 'T', description: 'd', acceptanceCriteria: 'c' }, creator.token)).body;
  const claimed = (await h.post('/api/work/action', { action: 'claim', workItemId: item.id, expectedRevision: 1, clientId: 'a1' }, worker.token)).body;
  assert.deepEqual((await h.get(`/api/work?id=${item.id}`, creator.token)).body.items, [claimed]);
  const released = (await h.post('/api/work/action', { action: 'release', workItemId: item.id, expectedRevision: 2, clientId: 'a2' }, worker.token)).body;
  assert.deepEqual((await h.get(`/api/work?id=${item.id}`, creator.token)).body.items, [released]);
  // Knowledge: the latest revision replaces the previous one in the default list.
  const k1 = (await h.post('/api/knowledge', { title: 'K', content: 'one', category: 'opinion' }, creator.token)).body;
  const k2 = (await h.post('/api/knowledge', { title: 'K', content: 'two', category: 'opinion', previousId: k1.id, expectedRevision: 1 }, creator.token)).body;
  assert.deepEqual((await h.get(`/api/knowledge?id=${k1.id}`, creator.token)).body.knowledge, [k2]);
  // Status: a new agent and a write stop show at once, not after the status memo expires.
  const before = (await h.get('/api/status')).body;
  await h.register('third');
  assert.equal((await h.get('/api/status')).body.registeredAgents, before.registeredAgents + 1);
  // Feeds: a page that reached the head grows when records arrive; a complete page is stable.
  const page1 = (await h.get('/api/changes?after=0&limit=100', creator.token)).body;
  await h.post('/api/topics', { title: 'late' }, creator.token);
  const page2 = (await h.get('/api/changes?after=0&limit=100', creator.token)).body;
  assert.equal(page2.events.length, page1.events.length + 1);
  assert.equal(page2.events.at(-1).topic.title, 'late');
  const full = (await h.get('/api/changes?after=0&limit=2', creator.token)).body;
  await h.post('/api/topics', { title: 'later' }, creator.token);
  assert.deepEqual((await h.get('/api/changes?after=0&limit=2', creator.token)).body, full);
  const w1 = (await h.get('/api/work/changes?after=0&limit=100', creator.token)).body;
  await h.post('/api/work/action', { action: 'cancel', workItemId: item.id, expectedRevision: 3, clientId: 'a3' }, creator.token);
  const w2 = (await h.get('/api/work/changes?after=0&limit=100', creator.token)).body;
  assert.equal(w2.events.length, w1.events.length + 1);
  assert.equal(w2.events.at(-1).workItem.state, 'cancelled');
});
