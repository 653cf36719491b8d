import { discussionEvents, eventJson } from '../../dist/domain/feeds/feeds.js';
import { workPageJson } from '../../dist/domain/feeds/pages.js';
import { workReceiptOf, workRowOf } from '../../dist/domain/work/work.js';
import { workJsonOf } from '../../dist/domain/work/views.js';
import { readerOf } from '../../dist/domain/moderation/moderation.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startService } from '../../dist/service.js';
import { loadConfig } from '../../dist/config.js';
import { ManualClock } from '../../dist/clock.js';
import { App } from '../../dist/app.js';
import { api, tempDir } from '../helpers/server.mjs';

async function service(t, dataDir, clock) {
  const config = { ...loadConfig({ FORUM_DATA_DIR: dataDir, PORT: '0', FORUM_RATE_LIMITS: 'off' }), dataDir };
  const svc = await startService(config, { clock });
  t.after(() => svc.close());
  return svc;
}

test('every work revision emits one work feed event with its snapshot, and the receipts index keeps each request as committed', async (t) => {
  const dataDir = tempDir(t);
  const clock = new ManualClock();
  const svc = await service(t, dataDir, clock);
  const call = (method, path, body, token) => api(svc.url, method, path, { body, token });
  const reg = async (name) => (await call('POST', '/api/register', { name, provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true })).body;
  const creator = await reg('creator');
  const worker = await reg('worker');

  const created = await call('POST', '/api/work', { clientId: 'c1', title: 'T', description: 'D', acceptanceCriteria: 'A' }, creator.token);
  clock.advance(1000);
  const claimed = await call('POST', '/api/work/action', { workItemId: created.body.id, expectedRevision: 1, clientId: 'c2', action: 'claim' }, worker.token);
  clock.advance(1000);
  const submitted = await call('POST', '/api/work/action', { workItemId: created.body.id, expectedRevision: 2, clientId: 'c3', action: 'submit', content: ' r ' }, worker.token);
  assert.deepEqual([created.status, claimed.status, submitted.status], [201, 200, 200]);
  assert.equal(claimed.body.updated, '2026-01-01T00:00:01.000Z', 'times come from the injected clock');
  assert.equal(claimed.body.leaseUntil, '2026-01-01T00:30:01.000Z');

  const { state } = svc.app;
  const workFeed = (st) => JSON.parse(workPageJson(st.feeds, st.work, { after: 0, limit: 100 }, 'o', readerOf(st.moderation, 'agent'))).events;
  const events = workFeed(state);
  assert.deepEqual(events.map((e) => [e.seq, e.kind]), [[1, 'work_item'], [2, 'work_item'], [3, 'work_item']]);
  assert.deepEqual(events.map((e) => e.workItem), [created.body, claimed.body, submitted.body]);
  const discussion = discussionEvents(state.feeds);
  const topicEvents = discussion.map((e) => JSON.parse(eventJson(e))).filter((e) => e.kind === 'topic');
  assert.deepEqual(topicEvents.map((e) => e.topic.id), [created.body.topicId], 'the discussion topic is on the discussion feed');
  assert.equal(discussion.some((e) => e.kind === 'work_item'), false, 'no work events on the discussion feed');

  const receipt = workReceiptOf(state.work, worker.id, 'c3');
  assert.equal(receipt.status, 200);
  assert.deepEqual(receipt.request, { workItemId: created.body.id, expectedRevision: 2, clientId: 'c3', action: 'submit', content: 'r', sources: [] });
  assert.deepEqual(receipt.response, submitted.body);
  assert.equal(receipt.responseJson, JSON.stringify(submitted.body));
  assert.equal(receipt.seq, state.feeds.work.at(2));
  const createReceipt = workReceiptOf(state.work, creator.id, 'c1');
  assert.equal(createReceipt.status, 201);
  assert.deepEqual(createReceipt.request, { clientId: 'c1', title: 'T', description: 'D', acceptanceCriteria: 'A', tags: [] });
  assert.equal(workReceiptOf(state.work, worker.id, 'c1'), undefined, 'clientIds are per author');

  // Replay rebuilds byte-identical JSON although the log stores payload keys sorted.
  const receipts = (st) => [[creator.id, 'c1'], [worker.id, 'c2'], [worker.id, 'c3']].map(([a, c]) => {
    const r = workReceiptOf(st.work, a, c);
    return [JSON.stringify(r.request), r.responseJson, r.seq, r.status];
  });
  const liveFeed = workPageJson(state.feeds, state.work, { after: 0, limit: 100 }, 'o', readerOf(state.moderation, 'agent'));
  const liveReceipts = receipts(state);
  await svc.close();
  const app = await App.open({ ...loadConfig({ FORUM_DATA_DIR: dataDir }), dataDir }, { clock });
  t.after(() => app.close());
  assert.equal(workPageJson(app.state.feeds, app.state.work, { after: 0, limit: 100 }, 'o', readerOf(app.state.moderation, 'agent')), liveFeed);
  assert.deepEqual(receipts(app.state), liveReceipts);
  assert.equal(workJsonOf(app.state.work, workRowOf(app.state.work, created.body.id), readerOf(app.state.moderation, 'agent')), JSON.stringify(submitted.body));
});

test('a work q match never spans two fields', async (t) => {
  const svc = await service(t, tempDir(t), new ManualClock());
  const call = (method, path, body, token) => api(svc.url, method, path, { body, token });
  const me = (await call('POST', '/api/register', { name: 'q', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true })).body;
  const item = (await call('POST', '/api/work', { clientId: 'q1', title: 'Alpha', description: 'Beta', acceptanceCriteria: 'Gamma' }, me.token)).body;
  const ids = async (q) => (await call('GET', `/api/work?q=${encodeURIComponent(q)}`, undefined, me.token)).body.items.map((w) => w.id);
  assert.deepEqual(await ids('BETA'), [item.id], 'each field matches on its own, any case');
  assert.deepEqual(await ids('a\nb'), [], 'the end of the title and the start of the description do not join');
  assert.deepEqual(await ids('\n'), []);
  assert.deepEqual(await ids('alphabeta'), []);
});
