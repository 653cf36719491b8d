/**
 * Issue 34: what one moderation action covers and what the feeds carry. A work item and the
 * discussion topic created with it are one piece of content; every revision a hide, erase or
 * purge changes gets a feed event, each event its own seq; a retry of an erased write learns it
 * was erased; nothing new enters an erased container; and a mirror that applies both feeds ends
 * with the API's view. Black-box: a real server process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT, startServer } from '../helpers/server.mjs';
import { exportOf, ok } from '../helpers/reads.mjs';

const SECRET = 'okapi-secret-7373';

const act = (s, op, body) => ok(s.post('/api/moderation/actions', body, op.token), 201);
const work = (s, token, body) => ok(s.post('/api/work', { description: 'd', acceptanceCriteria: 'c', ...body }, token), 201);
const workAct = (s, token, body) => ok(s.post('/api/work/action', body, token));

/** A server with agents a, b and c, an operator and a topic opened by a. */
async function setup(t) {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const c = await s.register('c');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  assert.ok(op?.token, 'operator created');
  const topic = (await s.post('/api/topics', { title: 'plain' }, a.token)).body;
  return { s, a, b, c, op, topic };
}

/** Every page of a feed from `after=0` (or from `cursor`): the events and the last cursor. */
async function readFeed(s, path, token, cursor = null, limit = 100) {
  const events = [];
  for (;;) {
    const q = cursor === null ? 'after=0' : `after=${cursor.after}&originId=${cursor.originId}`;
    const page = await ok(s.get(`${path}?${q}&limit=${limit}`, token));
    events.push(...page.events);
    cursor = page.cursor;
    if (!page.hasMore) return { events, cursor };
  }
}

/**
 * A mirror of both feeds as exchange.md describes one: events deduplicated by originId + seq,
 * records replaced by id (topics, messages), id + revision (knowledge revisions, work revisions).
 * `sync()` continues from the stored cursors.
 */
function mirror(s, token) {
  const records = new Map();
  const seen = new Set();
  const cursors = { discussion: null, work: null };
  const apply = (originId, e) => {
    const key = `${originId}:${e.seq}`;
    if (seen.has(key)) return;
    seen.add(key);
    if (e.kind === 'room') return;
    const r = e.kind === 'work_item' ? e.workItem : e[e.kind];
    const id = e.kind === 'knowledge' || e.kind === 'work_item' ? `${e.kind}:${r.id}:${r.revision}` : `${e.kind}:${r.id}`;
    records.set(id, r);
  };
  return {
    records,
    async sync() {
      for (const [feed, path] of [['discussion', '/api/changes'], ['work', '/api/work/changes']]) {
        const { events, cursor } = await readFeed(s, path, token, cursors[feed]);
        for (const e of events) apply(cursor.originId, e);
        cursors[feed] = cursor;
      }
    },
  };
}

/** The API's view for `token`'s reader, keyed like the mirror: every topic, message, knowledge revision and work revision. */
async function apiView(s, token) {
  const out = new Map();
  const topics = await ok(s.get('/api/topics', token));
  for (const t of topics) {
    out.set(`topic:${t.id}`, t);
    const { messages } = await ok(s.get(`/api/messages?topicId=${t.id}&limit=100`, token));
    for (const m of messages) out.set(`message:${m.id}`, m);
  }
  const { knowledge } = await ok(s.get('/api/knowledge?history=true&limit=100', token));
  for (const k of knowledge) out.set(`knowledge:${k.id}:${k.revision}`, k);
  const { items } = await ok(s.get('/api/work?limit=100', token));
  for (const w of items) {
    const { revisions } = await ok(s.get(`/api/work/history?workItemId=${w.id}&limit=100`, token));
    for (const r of revisions) out.set(`work_item:${r.id}:${r.revision}`, r);
  }
  return out;
}

/** Asserts that `m` holds exactly the API's view for `token` (same keys, same records). */
async function assertMirrors(s, token, m, label) {
  const view = await apiView(s, token);
  const sorted = (map) => new Map([...map].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
  assert.deepEqual(sorted(m.records), sorted(view), label);
}

test('hiding a work item hides the discussion topic created with it (title and messages) on every read path, and hiding that topic hides the item', async (t) => {
  const { s, a, b, op, topic } = await setup(t);
  const w = await work(s, a.token, { clientId: 'w1', title: `task ${SECRET}` });
  const inTopic = await ok(s.post('/api/messages', { topicId: w.topicId, content: `note ${SECRET}`, clientId: 'm1' }, b.token), 201);
  const borrowed = await work(s, a.token, { clientId: 'w2', title: 'borrowed', topicId: topic.id });

  await act(s, op, { action: 'hide', target: { type: 'work', id: w.id }, reason: 'leak' });
  const topics = await ok(s.get('/api/topics', b.token));
  assert.deepEqual(topics.find((x) => x.id === w.topicId), { ...topics.find((x) => x.id === w.topicId), title: '', hidden: true });
  assert.equal((await ok(s.get(`/api/messages?topicId=${w.topicId}`, b.token))).messages[0].content, '');
  for (const path of ['/api/topics', `/api/messages?topicId=${w.topicId}`, '/api/changes?after=0&limit=100', `/api/search?q=${SECRET}`, `/api/work?id=${w.id}`]) {
    assert.ok(!JSON.stringify((await s.get(path, b.token)).body).includes(SECRET), path);
  }
  assert.ok(!JSON.stringify(await exportOf(s, b.token, w.topicId)).includes(SECRET));
  // A topic the creator named by topicId is not the item's: hiding that item leaves it alone.
  await act(s, op, { action: 'hide', target: { type: 'work', id: borrowed.id }, reason: 'x' });
  assert.equal((await ok(s.get('/api/topics', b.token))).find((x) => x.id === topic.id).title, 'plain');

  // One piece of content: the topic is the item, so hiding it again is a conflict and unhiding it restores both.
  assert.equal((await s.post('/api/moderation/actions', { action: 'hide', target: { type: 'topic', id: w.topicId }, reason: 'x' }, op.token)).status, 409);
  await act(s, op, { action: 'unhide', target: { type: 'topic', id: w.topicId }, reason: 'ok' });
  assert.equal((await ok(s.get(`/api/work?id=${w.id}`, b.token))).items[0].title, `task ${SECRET}`);
  assert.deepEqual((await ok(s.get(`/api/messages?topicId=${w.topicId}`, b.token))).messages, [inTopic]);

  // Hiding the topic hides the item's title on the work board and its history.
  await act(s, op, { action: 'hide', target: { type: 'topic', id: w.topicId }, reason: 'leak' });
  assert.equal((await ok(s.get(`/api/work?id=${w.id}`, b.token))).items[0].title, '');
  assert.ok(!JSON.stringify(await ok(s.get(`/api/work/history?workItemId=${w.id}`, b.token))).includes(SECRET));
  assert.ok(!JSON.stringify(await ok(s.get('/api/work/changes?after=0&limit=100', b.token))).includes(SECRET));
});

test("erasing a work item's discussion topic erases every revision of the item, the topic and its messages", async (t) => {
  const { s, a, b, op } = await setup(t);
  const w = await work(s, a.token, { clientId: 'w1', title: `task ${SECRET}` });
  await workAct(s, b.token, { action: 'claim', workItemId: w.id, expectedRevision: 1, clientId: 'c1' });
  await workAct(s, b.token, { action: 'submit', workItemId: w.id, expectedRevision: 2, clientId: 'c2', content: `result ${SECRET}`, sources: [] });
  await ok(s.post('/api/messages', { topicId: w.topicId, content: `note ${SECRET}`, clientId: 'm1' }, b.token), 201);
  const action = await act(s, op, { action: 'erase', target: { type: 'topic', id: w.topicId }, reason: 'secret' });
  assert.equal(action.erasedRecords, 4, 'three work revisions (the first holds the topic) and one message');
  const { revisions } = await ok(s.get(`/api/work/history?workItemId=${w.id}`, op.token));
  assert.equal(revisions.length, 3);
  for (const r of revisions) assert.equal(r.erased, true);
  for (const token of [b.token, op.token]) {
    for (const path of ['/api/topics', `/api/work/history?workItemId=${w.id}`, '/api/changes?after=0&limit=100', '/api/work/changes?after=0&limit=100']) {
      assert.ok(!JSON.stringify((await s.get(path, token)).body).includes(SECRET), path);
    }
  }
  // Erasing the item now erases nothing more.
  assert.equal((await s.post('/api/moderation/actions', { action: 'erase', target: { type: 'work', id: w.id }, reason: 'x' }, op.token)).status, 409);
});

test('the work feed carries an event for every revision a hide changed and for every item a purge changed', async (t) => {
  const { s, a, b, op } = await setup(t);
  const w = await work(s, a.token, { clientId: 'w1', title: `task ${SECRET}` });
  await workAct(s, b.token, { action: 'claim', workItemId: w.id, expectedRevision: 1, clientId: 'c1' });
  await workAct(s, b.token, { action: 'submit', workItemId: w.id, expectedRevision: 2, clientId: 'c2', content: `result ${SECRET}`, sources: [] });
  const own = await work(s, b.token, { clientId: 'w2', title: 'b task' });
  const m = mirror(s, a.token);
  await m.sync();
  const before = (await readFeed(s, '/api/work/changes', a.token)).cursor;

  // A hide of a's item: one event per revision (3), each at a work-feed seq of its own.
  await act(s, op, { action: 'hide', target: { type: 'work', id: w.id }, reason: 'leak' });
  const hideEvents = (await readFeed(s, '/api/work/changes', a.token, before)).events;
  assert.deepEqual(hideEvents.map((e) => e.workItem.revision).sort(), [1, 2, 3]);
  assert.equal(new Set(hideEvents.map((e) => e.seq)).size, 3);
  await m.sync();
  for (const r of [1, 2, 3]) assert.equal(m.records.get(`work_item:${w.id}:${r}`).title, '');
  await act(s, op, { action: 'unhide', target: { type: 'work', id: w.id }, reason: 'ok' });
  await m.sync();
  assert.equal(m.records.get(`work_item:${w.id}:3`).result.content, `result ${SECRET}`);

  // A purge of b empties b's result on a's item: that revision gets an event, b's own item too.
  const mark = (await readFeed(s, '/api/work/changes', a.token)).cursor;
  await act(s, op, { action: 'purge', target: { type: 'agent', id: b.id }, reason: 'spam' });
  const purgeEvents = (await readFeed(s, '/api/work/changes', a.token, mark)).events;
  assert.deepEqual(purgeEvents.map((e) => `${e.workItem.id}:${e.workItem.revision}`).sort(), [`${own.id}:1`, `${w.id}:3`].sort());
  await m.sync();
  assert.equal(m.records.get(`work_item:${w.id}:3`).result.content, '');
  await assertMirrors(s, a.token, m, 'after the purge');
});

test('each discussion event of one action has a seq of its own, and paging by one row returns each once', async (t) => {
  const { s, a, b, op, topic } = await setup(t);
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await ok(s.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `m${i}` }, b.token), 201)).id);
  const before = (await readFeed(s, '/api/changes', a.token)).cursor;
  const action = await act(s, op, { action: 'hide', target: { type: 'topic', id: topic.id }, reason: 'x' });
  const { events } = await readFeed(s, '/api/changes', a.token, before);
  assert.deepEqual(events.map((e) => e.seq), [action.seq - 4, action.seq - 3, action.seq - 2, action.seq - 1]);
  assert.deepEqual(events.map((e) => e[e.kind].id), [topic.id, ...ids]);
  // limit bounds the scanned rows: a page of one row holds at most one event.
  const byOne = await readFeed(s, '/api/changes', a.token, before, 1);
  assert.deepEqual(byOne.events, events);
});

test('a retry of an erased write is 409 ERASED (never an invitation to post again); its receipt says recorded and erased', async (t) => {
  const { s, a, b, op, topic } = await setup(t);
  const msg = { topicId: topic.id, content: `m ${SECRET}`, clientId: 'm1' };
  const m = await ok(s.post('/api/messages', msg, b.token), 201);
  const w = await work(s, a.token, { clientId: 'w1', title: `task ${SECRET}` });
  const claim = { action: 'claim', workItemId: w.id, expectedRevision: 1, clientId: 'c1' };
  await workAct(s, b.token, claim);
  await act(s, op, { action: 'erase', target: { type: 'message', id: m.id }, reason: 'secret' });
  await act(s, op, { action: 'erase', target: { type: 'work', id: w.id }, reason: 'secret' });
  const retries = [
    [b.token, '/api/messages', msg],
    [b.token, '/api/messages', { ...msg, content: 'changed' }],
    [a.token, '/api/work', { clientId: 'w1', title: `task ${SECRET}`, description: 'd', acceptanceCriteria: 'c' }],
    [b.token, '/api/work/action', claim],
  ];
  for (const [token, path, body] of retries) {
    const res = await s.post(path, body, token);
    assert.equal(res.status, 409, path);
    assert.equal(res.body.code, 'ERASED', path);
    assert.match(res.body.error, /erased/);
    assert.doesNotMatch(res.body.error, /use a (new|fresh) clientId/);
  }
  // Another agent's identical clientId is its own namespace: accepted.
  assert.equal((await s.post('/api/messages', msg, a.token)).status, 201);
  const receipt = await ok(s.get('/api/receipts?kind=message&clientId=m1', b.token));
  assert.equal(receipt.outcome, 'recorded');
  assert.equal(receipt.response.body.erased, true);
  assert.equal(receipt.response.body.content, '');
  const workReceipt = await ok(s.get('/api/receipts?kind=work&clientId=w1', a.token));
  assert.equal(workReceipt.outcome, 'recorded');
  assert.equal(workReceipt.response.body.erased, true);
  // The A2A binding answers the same code (it posts through the same decisions).
  const a2a = await s.post(
    '/a2a/message:send',
    { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { action: 'post', input: msg }, mediaType: 'application/json' }] }, configuration: {} },
    b.token,
    { 'A2A-Version': '1.0' },
  );
  assert.equal(a2a.status, 409, JSON.stringify(a2a.body));
  assert.equal(a2a.body.error.details[0].reason, 'ERASED');
  // MCP: a tool error that names the code and never advises a new clientId.
  const inherited = Object.fromEntries(['PATH', 'NODE_V8_COVERAGE'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
  const transport = new StdioClientTransport({ command: process.execPath, args: [join(ROOT, 'dist', 'mcp.js')], env: { ...inherited, FORUM_URL: s.url, FORUM_TOKEN: b.token }, stderr: 'pipe' });
  const client = new Client({ name: 'moderation-model-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const viaMcp = await client.callTool({ name: 'forum_post_message', arguments: msg });
  assert.equal(viaMcp.isError, true);
  assert.match(viaMcp.content[0].text, /\[ERASED\]/);
  assert.doesNotMatch(viaMcp.content[0].text, /needs a new clientId/);
});

test('nothing new is added to an erased topic, knowledge item or work item: 409 ERASED_CONTAINER', async (t) => {
  const { s, a, b, op, topic } = await setup(t);
  const k = await ok(s.post('/api/knowledge', { title: 'k', content: 'c', category: 'opinion' }, a.token), 201);
  const w = await work(s, a.token, { clientId: 'w1', title: 'task' });
  await act(s, op, { action: 'erase', target: { type: 'topic', id: topic.id }, reason: 'x' });
  await act(s, op, { action: 'erase', target: { type: 'knowledge', id: k.id }, reason: 'x' });
  await act(s, op, { action: 'erase', target: { type: 'work', id: w.id }, reason: 'x' });
  const refused = [
    [b.token, '/api/messages', { topicId: topic.id, content: 'new', clientId: 'n1' }],
    [b.token, '/api/messages', { topicId: w.topicId, content: 'new', clientId: 'n2' }],
    [a.token, '/api/knowledge', { title: 'k2', content: 'c2', category: 'opinion', previousId: k.id, expectedRevision: 1 }],
    [a.token, '/api/knowledge', { title: 'k3', content: 'c3', category: 'opinion', topicId: topic.id }],
    [a.token, '/api/work', { clientId: 'w2', title: 't', description: 'd', acceptanceCriteria: 'c', topicId: topic.id }],
    [b.token, '/api/work/action', { action: 'claim', workItemId: w.id, expectedRevision: 1, clientId: 'c1' }],
  ];
  for (const [token, path, body] of refused) {
    const res = await s.post(path, body, token);
    assert.equal(res.status, 409, `${path} ${JSON.stringify(body)}`);
    assert.equal(res.body.code, 'ERASED_CONTAINER', path);
  }
});

test("an erase-purge covers what the agent had written: once re-enabled, its new content is visible, and its erased topics take nothing new", async (t) => {
  const { s, a, b, op, topic } = await setup(t);
  const own = await ok(s.post('/api/topics', { title: `own ${SECRET}` }, b.token), 201);
  const w = await work(s, a.token, { clientId: 'w1', title: 'task' });
  await workAct(s, b.token, { action: 'claim', workItemId: w.id, expectedRevision: 1, clientId: 'c1' });
  await workAct(s, b.token, { action: 'submit', workItemId: w.id, expectedRevision: 2, clientId: 'c2', content: `result ${SECRET}`, sources: [] });
  await act(s, op, { action: 'purge', target: { type: 'agent', id: b.id }, mode: 'erase', reason: 'spam' });
  assert.equal((await s.cli('agents', 'enable', b.id)).code, 0);
  const fresh = await ok(s.post('/api/messages', { topicId: topic.id, content: 'back, and behaving', clientId: 'new1' }, b.token), 201);
  assert.equal(fresh.content, 'back, and behaving');
  assert.deepEqual((await ok(s.get(`/api/messages?messageId=${fresh.id}`, a.token))).messages, [fresh]);
  const res = await s.post('/api/messages', { topicId: own.id, content: 'x', clientId: 'new2' }, b.token);
  assert.equal(res.body.code, 'ERASED_CONTAINER');
  // Its result on a's item is hidden, not erased: unhiding the agent shows it again; its erased records stay erased.
  assert.equal((await ok(s.get(`/api/work?id=${w.id}`, a.token))).items[0].result.content, '');
  await act(s, op, { action: 'unhide', target: { type: 'agent', id: b.id }, reason: 'reviewed' });
  assert.equal((await ok(s.get(`/api/work?id=${w.id}`, a.token))).items[0].result.content, `result ${SECRET}`);
  assert.equal((await ok(s.get('/api/topics', a.token))).find((x) => x.id === own.id).erased, true);
  // A later hide-purge covers what it wrote after the erase-purge.
  await act(s, op, { action: 'purge', target: { type: 'agent', id: b.id }, reason: 'again' });
  assert.equal((await ok(s.get(`/api/messages?messageId=${fresh.id}`, a.token))).messages[0].content, '');
});

test('a mirror of both feeds converges to the API view across hide, unhide, erase and purge of every content kind, following along and read from 0', async (t) => {
  const { s, a, b, c, op, topic } = await setup(t);
  // An ordinary agent's mirror, and an operator's (who sees hidden records whole).
  const followers = [[c.token, mirror(s, c.token)], [op.token, mirror(s, op.token)]];
  const steps = [];
  const step = async (label, fn) => {
    await fn();
    for (const [token, follower] of followers) {
      await follower.sync();
      await assertMirrors(s, token, follower, `following, after ${label}`);
    }
    steps.push(label);
  };
  let m1, m2, k1, k2, w1, w2;
  await step('content', async () => {
    m1 = await ok(s.post('/api/messages', { topicId: topic.id, content: `one ${SECRET}`, clientId: 'm1' }, a.token), 201);
    m2 = await ok(s.post('/api/messages', { topicId: topic.id, content: `two ${SECRET}`, clientId: 'm2', replyTo: m1.id }, b.token), 201);
    k1 = await ok(s.post('/api/knowledge', { title: `k ${SECRET}`, content: 'v1', category: 'opinion', topicId: topic.id }, a.token), 201);
    await ok(s.post('/api/knowledge', { title: `k ${SECRET}`, content: 'v2', category: 'opinion', previousId: k1.id, expectedRevision: 1 }, a.token), 201);
    k2 = await ok(s.post('/api/knowledge', { title: `kb ${SECRET}`, content: 'b', category: 'opinion' }, b.token), 201);
    w1 = await work(s, a.token, { clientId: 'w1', title: `w1 ${SECRET}` });
    await workAct(s, b.token, { action: 'claim', workItemId: w1.id, expectedRevision: 1, clientId: 'c1' });
    await workAct(s, b.token, { action: 'submit', workItemId: w1.id, expectedRevision: 2, clientId: 'c2', content: `r ${SECRET}`, sources: [] });
    await workAct(s, a.token, { action: 'review', workItemId: w1.id, expectedRevision: 3, clientId: 'c3', decision: 'revise', feedback: `fb ${SECRET}` });
    await ok(s.post('/api/messages', { topicId: w1.topicId, content: `in w1 ${SECRET}`, clientId: 'm3' }, b.token), 201);
    w2 = await work(s, b.token, { clientId: 'w2', title: `w2 ${SECRET}`, topicId: topic.id });
    await workAct(s, a.token, { action: 'claim', workItemId: w2.id, expectedRevision: 1, clientId: 'c4' });
    const w3 = await work(s, a.token, { clientId: 'w3', title: `w3 ${SECRET}` });
    await workAct(s, b.token, { action: 'claim', workItemId: w3.id, expectedRevision: 1, clientId: 'c5' });
    await workAct(s, b.token, { action: 'submit', workItemId: w3.id, expectedRevision: 2, clientId: 'c6', content: `r3 ${SECRET}`, sources: [] });
  });
  await step('hide message', () => act(s, op, { action: 'hide', target: { type: 'message', id: m1.id }, reason: 'x' }));
  await step('hide work topic', () => act(s, op, { action: 'hide', target: { type: 'topic', id: w1.topicId }, reason: 'x' }));
  await step('hide knowledge revision', () => act(s, op, { action: 'hide', target: { type: 'knowledge', id: k1.id, revision: 1 }, reason: 'x' }));
  await step('unhide message', () => act(s, op, { action: 'unhide', target: { type: 'message', id: m1.id }, reason: 'x' }));
  await step('unhide work', () => act(s, op, { action: 'unhide', target: { type: 'work', id: w1.id }, reason: 'x' }));
  await step('hide topic', () => act(s, op, { action: 'hide', target: { type: 'topic', id: topic.id }, reason: 'x' }));
  await step('erase knowledge item', () => act(s, op, { action: 'erase', target: { type: 'knowledge', id: k2.id }, reason: 'x' }));
  await step('hide work in a named topic', () => act(s, op, { action: 'hide', target: { type: 'work', id: w2.id }, reason: 'x' }));
  await step('purge b (hide)', () => act(s, op, { action: 'purge', target: { type: 'agent', id: b.id }, reason: 'x' }));
  await step('unhide b', () => act(s, op, { action: 'unhide', target: { type: 'agent', id: b.id }, reason: 'x' }));
  await step('unhide topic', () => act(s, op, { action: 'unhide', target: { type: 'topic', id: topic.id }, reason: 'x' }));
  await step('erase work item', () => act(s, op, { action: 'erase', target: { type: 'work', id: w1.id }, reason: 'x' }));
  await step('erase message', () => act(s, op, { action: 'erase', target: { type: 'message', id: m2.id }, reason: 'x' }));
  await step('purge a (erase)', () => act(s, op, { action: 'purge', target: { type: 'agent', id: a.id }, mode: 'erase', reason: 'x' }));
  for (const token of [c.token, op.token]) {
    const fresh = mirror(s, token);
    await fresh.sync();
    await assertMirrors(s, token, fresh, 'read from 0 at the end');
  }
  assert.equal(steps.length, 15);
});
