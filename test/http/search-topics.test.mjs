/**
 * GET /api/search finds topics by their title (issue 55): an extension, `topics` beside the spec's
 * `messages` and `knowledge` (which keep their meaning), documented in /openapi.json. Black box:
 * the built server over HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { startServer } from '../helpers/server.mjs';
import { fromSnapshotThenReplay, snapshotPath as SNAPSHOT } from '../helpers/snapshot.mjs';


const ok = async (p, status = 200) => {
  const res = await p;
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
};

test('GET /api/search lists topics whose title contains q, beside messages and knowledge, with the filters and moderation rules of messages', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  assert.ok(op?.token, 'operator created');
  const first = await ok(s.post('/api/topics', { title: 'Which language should a person start with?' }, a.token), 201);
  const other = await ok(s.post('/api/topics', { title: 'Harbour lights' }, a.token), 201);
  const message = await ok(s.post('/api/messages', { topicId: other.id, content: 'Any person may light them.', clientId: 'm1' }, a.token), 201);
  const second = await ok(s.post('/api/topics', { title: 'PERSONAL projects' }, b.token), 201);

  await t.test('a topic titled "…should a person start with?" is found by "person", case-insensitively, newest first', async () => {
    const found = await ok(s.get('/api/search?q=person', b.token));
    assert.deepEqual(Object.keys(found), ['messages', 'knowledge', 'topics']);
    assert.deepEqual(found.topics, [second, first], 'titles only, newest first, as GET /api/topics shows them');
    assert.deepEqual(found.messages, [message], 'the spec\'s message list is unchanged');
    assert.deepEqual(found.knowledge, []);
    assert.deepEqual((await ok(s.get('/api/search?q=SHOULD%20A%20PERSON', b.token))).topics, [first]);
    assert.deepEqual((await ok(s.get('/api/search?q=nowhere', b.token))).topics, []);
  });

  await t.test('agentId, topicId, before and limit apply to topics as to messages', async () => {
    assert.deepEqual((await ok(s.get(`/api/search?q=person&agentId=${a.id}`, b.token))).topics, [first]);
    assert.deepEqual((await ok(s.get(`/api/search?q=person&topicId=${second.id}`, b.token))).topics, [second]);
    assert.deepEqual((await ok(s.get(`/api/search?q=person&before=${encodeURIComponent(first.created)}`, b.token))).topics, [], 'strictly before the oldest match: none');
    assert.deepEqual((await ok(s.get('/api/search?q=person&before=2999-01-01T00:00:00Z', b.token))).topics, [second, first]);
    assert.deepEqual((await ok(s.get('/api/search?q=person&limit=1', b.token))).topics, [second]);
  });

  await t.test('a hidden topic is found by operators only (marked hidden); an erased one by nobody', async () => {
    await ok(s.post('/api/moderation/actions', { action: 'hide', target: { type: 'topic', id: second.id }, reason: 'test' }, op.token), 201);
    assert.deepEqual((await ok(s.get('/api/search?q=person', b.token))).topics, [first]);
    assert.deepEqual((await ok(s.get('/api/search?q=person', op.token))).topics, [{ ...second, hidden: true }, first]);
    await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'topic', id: first.id }, reason: 'test' }, op.token), 201);
    for (const who of [b, op]) assert.deepEqual((await ok(s.get('/api/search?q=start%20with', who.token))).topics, []);
    const late = await ok(s.post('/api/topics', { title: 'A person arrives late' }, a.token), 201);
    assert.deepEqual((await ok(s.get('/api/search?q=person', b.token))).topics, [late], 'a topic created after the first search is found');
  });

  await t.test('/openapi.json documents the topics list of the search answer', async () => {
    const doc = await ok(s.get('/openapi.json'));
    const result = doc.components.schemas.SearchResult;
    assert.deepEqual(result.required, ['messages', 'knowledge', 'topics']);
    assert.equal(result.properties.topics.items.$ref, '#/components/schemas/Topic');
  });
});

test('titles are found right after a restart, from the state snapshot and from a whole replay; an erased title is found by nobody and is not in the snapshot', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  assert.ok(op?.token, 'operator created');
  const kept = await ok(s.post('/api/topics', { title: 'Lighthouse keepers compare lamps' }, a.token), 201);
  const hidden = await ok(s.post('/api/topics', { title: 'Lighthouse rumours' }, b.token), 201);
  const gone = await ok(s.post('/api/topics', { title: 'Lighthouse qzxwvt secret' }, a.token), 201);
  // A work item's discussion topic is a topic too (created inside the work.create record).
  const item = await ok(s.post('/api/work', { clientId: 'w1', title: 'Repaint the lighthouse', description: 'White and red.', acceptanceCriteria: 'Both colours.' }, a.token), 201);
  const all = (await ok(s.get('/api/search?q=lighthouse', b.token))).topics;
  assert.deepEqual(all.map((x) => x.id), [item.topicId, gone.id, hidden.id, kept.id], 'every title found before any moderation');
  await ok(s.post('/api/moderation/actions', { action: 'hide', target: { type: 'topic', id: hidden.id }, reason: 'test' }, op.token), 201);
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'topic', id: gone.id }, reason: 'test' }, op.token), 201);
  const expected = async () => {
    const forReader = (await ok(s.get('/api/search?q=lighthouse', b.token))).topics;
    const forOperator = (await ok(s.get('/api/search?q=lighthouse', op.token))).topics;
    assert.deepEqual(forReader, all.filter((x) => x.id !== gone.id && x.id !== hidden.id));
    assert.deepEqual(forOperator, all.filter((x) => x.id !== gone.id).map((x) => (x.id === hidden.id ? { ...x, hidden: true } : x)));
    for (const who of [b, op]) assert.deepEqual((await ok(s.get('/api/search?q=qzxwvt', who.token))).topics, [], 'the erased title is found by nobody');
    assert.deepEqual((await ok(s.get(`/api/search?q=lighthouse&agentId=${b.id}`, op.token))).topics, [{ ...hidden, hidden: true }]);
    assert.deepEqual((await ok(s.get(`/api/search?q=keepers&topicId=${kept.id}`, b.token))).topics, [kept]);
    return { forReader, forOperator };
  };
  const before = await expected();

  await s.stop();
  assert.ok(existsSync(SNAPSHOT(s.dataDir)), 'a stop writes the state snapshot');
  assert.ok(!readFileSync(SNAPSHOT(s.dataDir)).includes('qzxwvt'), 'the erased title is not in the snapshot');
  assert.ok(readFileSync(SNAPSHOT(s.dataDir)).includes('lighthouse keepers compare lamps'), 'the kept titles are (lower-cased)');
  await fromSnapshotThenReplay(s, async (from) => assert.deepEqual(await expected(), before, from));
  const late = await ok(s.post('/api/topics', { title: 'A lighthouse after the replay' }, a.token), 201);
  assert.deepEqual((await ok(s.get('/api/search?q=lighthouse&limit=1', b.token))).topics, [late], 'a topic created after the start is found');
});
