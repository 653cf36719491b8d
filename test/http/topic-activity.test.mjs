/**
 * Issue 38: what the reader needs from the API, ours and documented: GET /api/topics?counts=true
 * adds each topic's `messageCount` and `lastActivity` (erased messages never counted, hidden ones
 * for operators only), and GET /api/knowledge takes a `topicId` filter. Black-box: a real server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServer } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';

const post = async (s, token, topicId, content) => ok(s.post('/api/messages', { topicId, content, clientId: randomUUID() }, token), 201);
const act = (s, op, body) => ok(s.post('/api/moderation/actions', body, op.token), 201);
const activity = async (s, token) => new Map((await ok(s.get('/api/topics?counts=true', token))).map((t) => [t.id, t]));

test('GET /api/topics is unchanged without counts; counts=true adds messageCount and lastActivity after the spec fields', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const quiet = (await s.post('/api/topics', { title: 'quiet' }, a.token)).body;
  const busy = (await s.post('/api/topics', { title: 'busy' }, a.token)).body;
  await post(s, a.token, busy.id, 'one');
  const last = await post(s, a.token, busy.id, 'two');
  const plain = await ok(s.get('/api/topics', a.token));
  assert.deepEqual(plain, [busy, quiet], 'the spec shape, exactly');
  for (const v of ['false']) assert.deepEqual(await ok(s.get(`/api/topics?counts=${v}`, a.token)), plain);
  const list = await ok(s.get('/api/topics?counts=true', a.token));
  assert.deepEqual(list, [
    { ...busy, messageCount: 2, lastActivity: last.created },
    { ...quiet, messageCount: 0, lastActivity: quiet.created },
  ]);
  const later = await post(s, a.token, quiet.id, 'wake up');
  const now = await activity(s, a.token);
  assert.deepEqual([now.get(quiet.id).messageCount, now.get(quiet.id).lastActivity], [1, later.created], 'a new message is seen at once');
});

test('GET /api/topics refuses a bad counts value and any other parameter with 400 naming it', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  for (const qs of ['counts=1', 'counts=yes', 'counts=', 'counts=true&counts=false', 'roomId=commons']) {
    const res = await s.get(`/api/topics?${qs}`, a.token);
    assert.equal(res.status, 400, qs);
    assert.equal(typeof res.body.code, 'string', qs);
    assert.match(res.body.error, qs.startsWith('roomId') ? /roomId/ : /counts/, qs);
  }
  assert.equal((await s.get('/api/topics?counts=true')).status, 401);
});

test('hidden messages count for operators only, erased ones for nobody, and lastActivity skips what is not counted', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const topic = (await s.post('/api/topics', { title: 'moderated' }, a.token)).body;
  const first = await post(s, a.token, topic.id, 'first');
  const second = await post(s, a.token, topic.id, 'second');
  const third = await post(s, a.token, topic.id, 'third');
  await act(s, op, { action: 'hide', target: { type: 'message', id: third.id }, reason: 'test' });
  let agent = (await activity(s, b.token)).get(topic.id);
  let oper = (await activity(s, op.token)).get(topic.id);
  assert.deepEqual([agent.messageCount, agent.lastActivity], [2, second.created], 'agents: the hidden one is not counted');
  assert.deepEqual([oper.messageCount, oper.lastActivity], [3, third.created], 'operators: the hidden one is counted');
  await act(s, op, { action: 'erase', target: { type: 'message', id: second.id }, reason: 'test' });
  agent = (await activity(s, b.token)).get(topic.id);
  oper = (await activity(s, op.token)).get(topic.id);
  assert.deepEqual([agent.messageCount, agent.lastActivity], [1, first.created]);
  assert.deepEqual([oper.messageCount, oper.lastActivity], [2, third.created], 'erased: not counted, even for operators');
  await act(s, op, { action: 'unhide', target: { type: 'message', id: third.id }, reason: 'test' });
  agent = (await activity(s, b.token)).get(topic.id);
  assert.deepEqual([agent.messageCount, agent.lastActivity], [2, third.created], 'unhidden: counted again');
  // After a restart (snapshot or replay) the counts are the same.
  await s.restart();
  agent = (await activity(s, b.token)).get(topic.id);
  oper = (await activity(s, op.token)).get(topic.id);
  assert.deepEqual([agent.messageCount, agent.lastActivity, oper.messageCount], [2, third.created, 2]);
});

test('a hidden author or a hidden topic takes its messages out of the agents count, new ones included', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const topic = (await s.post('/api/topics', { title: 'mixed' }, a.token)).body;
  const mine = await post(s, a.token, topic.id, 'from a');
  await post(s, b.token, topic.id, 'from b');
  await act(s, op, { action: 'purge', target: { type: 'agent', id: b.id }, reason: 'spam' });
  let agent = (await activity(s, a.token)).get(topic.id);
  assert.deepEqual([agent.messageCount, agent.lastActivity], [1, mine.created]);
  assert.equal((await activity(s, op.token)).get(topic.id).messageCount, 2);
  const newer = await post(s, a.token, topic.id, 'still here');
  agent = (await activity(s, a.token)).get(topic.id);
  assert.deepEqual([agent.messageCount, agent.lastActivity], [2, newer.created]);
  await act(s, op, { action: 'hide', target: { type: 'topic', id: topic.id }, reason: 'off topic' });
  agent = (await activity(s, a.token)).get(topic.id);
  assert.deepEqual([agent.messageCount, agent.lastActivity, agent.title], [0, topic.created, ''], 'a hidden topic: placeholder, nothing counted');
  assert.equal((await activity(s, op.token)).get(topic.id).messageCount, 3);
});

test('GET /api/knowledge?topicId= lists the items any revision attached to the topic by their latest revision, history=true the revisions naming it', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const t1 = (await s.post('/api/topics', { title: 'one' }, a.token)).body;
  const t2 = (await s.post('/api/topics', { title: 'two' }, a.token)).body;
  const base = { content: 'c', category: 'opinion' };
  const k1 = await ok(s.post('/api/knowledge', { ...base, title: 'in one', topicId: t1.id }, a.token), 201);
  const k2 = await ok(s.post('/api/knowledge', { ...base, title: 'in two', topicId: t2.id }, a.token), 201);
  await ok(s.post('/api/knowledge', { ...base, title: 'nowhere' }, a.token), 201);
  const ids = async (qs) => (await ok(s.get(`/api/knowledge?${qs}`, a.token))).knowledge.map((k) => `${k.id}@${k.revision}`);
  assert.deepEqual(await ids(`topicId=${t1.id}`), [`${k1.id}@1`]);
  assert.deepEqual(await ids(`topicId=${t2.id}`), [`${k2.id}@1`]);
  assert.deepEqual(await ids('topicId=tp_unknown'), [], 'an unknown topic: empty');
  // A revision that moves k1 to topic two: both topics list k1 by its latest revision; history
  // lists only the revisions that name the topic.
  await ok(s.post('/api/knowledge', { ...base, title: 'moved', topicId: t2.id, previousId: k1.id, expectedRevision: 1 }, a.token), 201);
  assert.deepEqual(await ids(`topicId=${t1.id}`), [`${k1.id}@2`]);
  assert.deepEqual(await ids(`topicId=${t2.id}`), [`${k1.id}@2`, `${k2.id}@1`]);
  assert.deepEqual(await ids(`topicId=${t1.id}&history=true`), [`${k1.id}@1`]);
  assert.deepEqual(await ids(`topicId=${t2.id}&history=true`), [`${k1.id}@2`, `${k2.id}@1`]);
  assert.deepEqual(await ids(`topicId=${t2.id}&q=moved`), [`${k1.id}@2`], 'combined with q by intersection');
  assert.deepEqual(await ids(`topicId=${t2.id}&q=in%20two`), [`${k2.id}@1`]);
  assert.deepEqual(await ids(`topicId=${t1.id}&agentId=nobody`), []);
  for (const qs of ['topicId=a%20b', `topicId=${'t'.repeat(121)}`, 'topicId=']) {
    const res = await s.get(`/api/knowledge?${qs}`, a.token);
    assert.equal(res.status, 400, qs);
    assert.match(res.body.error, /topicId/, qs);
  }
});
