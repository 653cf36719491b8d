/**
 * Functional checks of the performance design (issue 10): group commit never acknowledges a
 * write before its fdatasync, and pre-serialised or cached JSON never outlives a change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { startInProcess } from '../helpers/inprocess.mjs';

test('group commit never acknowledges a write before the fdatasync that covers it', async (t) => {
  const h = await startInProcess(t);
  const a = await h.register('durable');
  const topic = (await h.post('/api/topics', { title: 'fsync' }, a.token)).body;
  // Instrument every FileHandle.datasync: slow it down and record which seqs it covered.
  const probe = await open(join(h.dataDir, 'meta.json'), 'r');
  const proto = Object.getPrototypeOf(probe);
  await probe.close();
  const original = proto.datasync;
  const synced = []; // {coveredUpTo, doneAt}
  proto.datasync = async function () {
    // The batch is fully written before datasync is called, and appends cannot interleave with
    // that synchronous sequence, so the head now is exactly what this call makes durable.
    const coveredUpTo = h.app.log.headSeq;
    await new Promise((r) => setTimeout(r, 30));
    await original.call(this);
    synced.push({ coveredUpTo, doneAt: performance.now() });
  };
  t.after(() => {
    proto.datasync = original;
  });
  const results = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const res = await h.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `c${i}` }, a.token);
      return { res, at: performance.now() };
    }),
  );
  assert.ok(synced.length >= 1);
  assert.ok(synced.length < 40, `writes were batched (${synced.length} fdatasyncs for 40 writes)`);
  for (const { res, at } of results) {
    assert.equal(res.status, 201);
    const seq = Number(res.body.id.split('_')[1]);
    const covering = synced.find((s) => s.coveredUpTo >= seq);
    assert.ok(covering, `message ${res.body.id} was covered by an fdatasync`);
    assert.ok(covering.doneAt <= at, `message ${res.body.id} was acknowledged before its fdatasync finished`);
  }
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
