/**
 * The per-agent inbox (issue 37): GET /api/inbox lists what concerns the caller — replies to its
 * messages, mentions of it, others' corrections of its knowledge, others' revisions of its work
 * items, its flags' outcomes — never its
 * own actions, never other agents' entries, never hidden or erased content; cursor-paged and
 * long-pollable like the feeds, kept across restarts, and the same over MCP and A2A.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startServer, tempDir, which } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { bodyValidator } from '../../dist/http/validate.js';

const conforms = (schema, body) => bodyValidator(schema)(structuredClone(body));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let clientIds = 0;
const cid = () => `ib-${++clientIds}`;

/** A server with agents alice, bob and carol, an operator and a topic alice opened. */
async function setup(t) {
  const s = await startServer(t);
  const alice = await s.register('alice');
  const bob = await s.register('bob');
  const carol = await s.register('carol');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const topic = await ok(s.post('/api/topics', { title: 'inbox' }, alice.token), 201);
  const say = (who, content, extra = {}) => ok(s.post('/api/messages', { topicId: topic.id, content, clientId: cid(), ...extra }, who.token), 201);
  return { s, alice, bob, carol, op, topic, say };
}

/** Every entry of `who`'s inbox, read page by page with `limit`; checks each page's shape. */
async function inboxOf(s, who, limit = 100) {
  const entries = [];
  let q = 'after=0';
  for (let pages = 0; pages < 100; pages++) {
    const page = await ok(s.get(`/api/inbox?${q}&limit=${limit}`, who.token));
    conforms('InboxPage', page);
    entries.push(...page.entries);
    q = `after=${page.cursor.after}&originId=${page.cursor.originId}`;
    if (!page.hasMore) return entries;
  }
  throw new Error('the inbox never ended');
}

/** An entry as [reason, id of its record]. */
const brief = (e) => [e.reason, (e.message ?? e.knowledge ?? e.workItem ?? e.flag).id];

const workAct = (s, who, item, action, extra = {}) =>
  ok(s.post('/api/work/action', { workItemId: item.id, expectedRevision: item.revision, clientId: cid(), action, ...extra }, who.token));

test('the inbox lists replies to the caller, mentions of its id or name, others\' revisions of its work and its flags\' outcomes, never its own actions or other agents\' entries', async (t) => {
  const { s, alice, bob, carol, op, say } = await setup(t);
  const mine = await say(alice, 'first');
  const reply = await say(bob, 'an answer', { replyTo: mine.id });
  await say(alice, 'my own follow-up', { replyTo: mine.id });
  await say(alice, `talking to myself @alice @${alice.id}`);
  const byName = await say(bob, 'ping @ALICE, are you there?');
  const byId = await say(carol, `cc @${alice.id}`);
  await say(bob, 'mail alice@example.org or @alicey or @bobby');
  const both = await say(bob, '@alice again', { replyTo: mine.id });

  const w1 = await ok(s.post('/api/work', { clientId: cid(), title: 'w', description: 'd', acceptanceCriteria: 'c' }, alice.token), 201);
  const claimed = await workAct(s, bob, w1, 'claim', { leaseMinutes: 30 });
  const submitted = await workAct(s, bob, claimed, 'submit', { content: 'done', sources: [] });
  const reviewed = await workAct(s, alice, submitted, 'review', { decision: 'revise', feedback: 'more' });

  const f1 = await ok(s.post('/api/flags', { target: { type: 'message', id: reply.id }, reason: 'other', clientId: cid() }, carol.token), 201);
  await ok(s.post('/api/flags/resolve', { flagId: f1.id, resolution: 'dismiss', note: 'fine' }, op.token));
  const spam = await say(bob, 'spam');
  const f2 = await ok(s.post('/api/flags', { target: { type: 'message', id: spam.id }, reason: 'spam', clientId: cid() }, carol.token), 201);
  await ok(s.post('/api/flags/resolve', { flagId: f2.id, resolution: 'hide', note: 'yes' }, op.token));

  const a = await inboxOf(s, alice);
  assert.deepEqual(a.map(brief), [
    ['reply', reply.id],
    ['mention', byName.id],
    ['mention', byId.id],
    ['reply', both.id],
    ['work', w1.id],
    ['work', w1.id],
  ]);
  assert.deepEqual(a[0].message, reply, 'the message as the feed carries it');
  assert.deepEqual(a.slice(4).map((e) => [e.workItem.state, e.workItem.revision]), [['claimed', claimed.revision], ['submitted', submitted.revision]]);
  const seqs = a.map((e) => e.seq);
  assert.deepEqual([...seqs].sort((x, y) => x - y), seqs, 'entries in log order');
  assert.ok(a.every((e) => typeof e.time === 'string'));

  const b = await inboxOf(s, bob);
  assert.deepEqual(b.map(brief), [['work', w1.id]], 'bob: alice\'s review of the item he was assigned, not his own claim and submit');
  assert.deepEqual([b[0].workItem.revision, b[0].workItem.review.decision], [reviewed.revision, 'revise']);

  const c = await inboxOf(s, carol);
  assert.deepEqual(c.map((e) => [e.reason, e.flag.id, e.flag.state, e.flag.resolution.resolution]), [
    ['flag', f1.id, 'resolved', 'dismiss'],
    ['flag', f2.id, 'resolved', 'hide'],
  ]);
  assert.deepEqual(await inboxOf(s, op), [], 'the operator\'s own actions are not in its inbox');
});

/** Publishes knowledge as `who` (`extra` adds previousId/expectedRevision, topicId, sources). */
const publish = (s, who, category, content, extra = {}) =>
  ok(s.post('/api/knowledge', { title: `${category} note`, content, category, sources: [], ...extra }, who.token), 201);

test('a correction by another agent naming a knowledge item the caller wrote, in its content or a source, is a correction entry, and so is each later revision of it that still names the item', async (t) => {
  const { s, alice, bob, carol } = await setup(t);
  const k1 = await publish(s, alice, 'hypothesis', 'water boils at 90 C at sea level');
  const k2 = await publish(s, alice, 'opinion', 'tabs over spaces');
  const own = await publish(s, bob, 'evidence', 'bob\'s own finding', { sources: ['https://example.org/b'] });
  // Alice revising her own item is her own action: no entry.
  await publish(s, alice, 'hypothesis', 'water boils at 100 C at sea level', { previousId: k1.id, expectedRevision: 1 });

  const inContent = await publish(s, bob, 'correction', `${k1.id} is wrong: it is 100 C. Also see ${k2.id}.`);
  const inSource = await publish(s, carol, 'correction', 'the boiling point differs', { sources: [`https://forum.example/api/knowledge/${k1.id}`] });
  // Not entries: a correction naming nothing of alice's; another category naming her item; an id
  // glued to other word characters; a correction of bob's own item by bob; carol correcting bob.
  await publish(s, bob, 'correction', 'a general correction without ids');
  await publish(s, bob, 'opinion', `I disagree with ${k1.id}`);
  await publish(s, carol, 'correction', `x${k1.id} and ${k1.id}0 and ${k1.id}_b are not ids`);
  await publish(s, bob, 'correction', `fixing my ${own.id}`);
  const ofBob = await publish(s, carol, 'correction', `${own.id} overstates it`);
  // Bob revises his correction: still naming k1, an entry again; then a revision that drops the id is not.
  const revised = await publish(s, bob, 'correction', `${k1.id} is wrong (revised)`, { previousId: inContent.id, expectedRevision: 1 });
  await publish(s, bob, 'correction', 'withdrawn', { previousId: inContent.id, expectedRevision: 2 });

  const a = await inboxOf(s, alice);
  assert.deepEqual(a.map((e) => [e.reason, e.knowledge.id, e.knowledge.revision]), [
    ['correction', inContent.id, 1],
    ['correction', inSource.id, 1],
    ['correction', inContent.id, 2],
  ], 'one entry for a correction naming two of her items');
  assert.deepEqual(a[0].knowledge, inContent, 'the revision as the discussion feed carries it');
  assert.deepEqual(a[2].knowledge, revised);
  const feed = await ok(s.get('/api/changes?after=0&limit=100', alice.token));
  assert.deepEqual(feed.events.find((e) => e.seq === a[1].seq).knowledge, a[1].knowledge);
  assert.deepEqual((await inboxOf(s, bob)).map(brief), [['correction', ofBob.id]]);
  assert.deepEqual(await inboxOf(s, carol), [], 'nobody corrected carol');
});

test('a hidden or erased correction is not in the inbox, and comes back when unhidden', async (t) => {
  const { s, alice, bob, carol, op } = await setup(t);
  const k = await publish(s, alice, 'hypothesis', 'the moon is cheese');
  const c1 = await publish(s, bob, 'correction', `${k.id}: it is rock`);
  const c2 = await publish(s, carol, 'correction', `${k.id}: mostly rock`);
  const c3 = await publish(s, carol, 'correction', `${k.id}: rock, some ice`);
  assert.deepEqual((await inboxOf(s, alice)).map(brief), [['correction', c1.id], ['correction', c2.id], ['correction', c3.id]]);
  await ok(s.post('/api/moderation/actions', { action: 'hide', target: { type: 'knowledge', id: c1.id }, reason: 'spam' }, op.token), 201);
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'knowledge', id: c3.id }, reason: 'asked' }, op.token), 201);
  assert.deepEqual((await inboxOf(s, alice)).map(brief), [['correction', c2.id]]);
  assert.deepEqual((await inboxOf(s, op)), [], 'operators get no entries for others\' items either');
  await ok(s.post('/api/moderation/actions', { action: 'unhide', target: { type: 'knowledge', id: c1.id }, reason: 'ok' }, op.token), 201);
  const after = await inboxOf(s, alice);
  assert.deepEqual(after.map(brief), [['correction', c1.id], ['correction', c2.id]]);
  assert.ok(!JSON.stringify(after).includes('some ice'), 'the erased correction\'s text is nowhere');
  // Kept across a restart from a whole replay.
  await s.stop();
  rmSync(join(s.dataDir, 'index', 'state.snapshot'), { force: true });
  await s.start();
  assert.deepEqual(await inboxOf(s, alice), after);
});

test('hidden or erased content is never in the inbox, and an entry disappears once its record is hidden', async (t) => {
  const { s, alice, bob, op, topic, say } = await setup(t);
  const mine = await say(alice, 'question');
  const r1 = await say(bob, 'reply one', { replyTo: mine.id });
  const r2 = await say(bob, 'reply two', { replyTo: mine.id });
  const m3 = await say(bob, 'hey @alice');
  assert.deepEqual((await inboxOf(s, alice)).map(brief), [['reply', r1.id], ['reply', r2.id], ['mention', m3.id]]);

  await ok(s.post('/api/moderation/actions', { action: 'hide', target: { type: 'message', id: r1.id }, reason: 'spam' }, op.token), 201);
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: m3.id }, reason: 'asked' }, op.token), 201);
  assert.deepEqual((await inboxOf(s, alice)).map(brief), [['reply', r2.id]]);
  // A reply posted into a hidden topic is not in the inbox either.
  await ok(s.post('/api/moderation/actions', { action: 'hide', target: { type: 'topic', id: topic.id }, reason: 'off-topic' }, op.token), 201);
  await say(bob, 'late reply', { replyTo: mine.id });
  assert.deepEqual(await inboxOf(s, alice), []);
  // Unhiding the topic brings back what it hid; an erased record stays out.
  await ok(s.post('/api/moderation/actions', { action: 'unhide', target: { type: 'topic', id: topic.id }, reason: 'ok' }, op.token), 201);
  assert.deepEqual((await inboxOf(s, alice)).map((e) => e.message.content), ['reply two', 'late reply']);
  assert.ok(!JSON.stringify(await inboxOf(s, alice)).includes('hey @alice'));
});

test('the inbox pages with its own cursor: limit bounds a page, the cursor continues it, and a feed\'s cursor or a missing originId is refused', async (t) => {
  const { s, alice, bob, say } = await setup(t);
  const mine = await say(alice, 'root');
  const replies = [];
  for (let i = 0; i < 5; i++) replies.push(await say(bob, `r${i}`, { replyTo: mine.id }));
  const all = await inboxOf(s, alice);
  assert.deepEqual(all.map((e) => e.message.id), replies.map((m) => m.id));
  assert.deepEqual(await inboxOf(s, alice, 2), all, 'pages of 2 hold the same entries');

  const first = await ok(s.get('/api/inbox?limit=2', alice.token));
  assert.equal(first.format, 'forum-inbox-v1');
  assert.equal(first.hasMore, true);
  assert.equal(first.pollAfterSeconds, 1);
  assert.equal(first.cursor.after, first.entries[1].seq);
  const feed = await ok(s.get('/api/changes?limit=1', alice.token));
  assert.notEqual(first.cursor.originId, feed.cursor.originId, 'the inbox has an originId of its own');
  assert.equal((await s.get(`/api/inbox?after=${first.cursor.after}&originId=${feed.cursor.originId}`, alice.token)).status, 409);
  assert.equal((await s.get(`/api/inbox?after=${first.cursor.after}`, alice.token)).status, 400);
  assert.equal((await s.get(`/api/inbox?after=999999&originId=${first.cursor.originId}`, alice.token)).status, 409);
  for (const bad of ['limit=0', 'limit=101', 'wait=0', 'wait=61', 'after=-1']) assert.equal((await s.get(`/api/inbox?${bad}`, alice.token)).status, 400, bad);
  assert.equal((await s.get('/api/inbox')).status, 401);
  const caughtUp = await ok(s.get(`/api/inbox?after=${first.cursor.after}&originId=${first.cursor.originId}`, alice.token));
  assert.equal(caughtUp.hasMore, false);
  assert.equal(caughtUp.pollAfterSeconds, 60);
  assert.deepEqual(caughtUp.entries.map((e) => e.message.id), replies.slice(2).map((m) => m.id));
});

test('a held inbox request is answered within a second of a reply to the caller, and not by an unrelated post', async (t) => {
  const { s, alice, bob, carol, say } = await setup(t);
  const mine = await say(alice, 'waiting for answers');
  const page = await ok(s.get('/api/inbox', alice.token));
  assert.deepEqual(page.entries, []);
  const q = `after=${page.cursor.after}&originId=${page.cursor.originId}`;
  let answeredAt = null;
  const held = s.get(`/api/inbox?${q}&wait=20`, alice.token).then((res) => {
    answeredAt = performance.now();
    return res;
  });
  await say(carol, 'unrelated');
  await say(bob, 'also unrelated, mentions @carol');
  await sleep(500);
  assert.equal(answeredAt, null, 'posts that do not concern alice leave her request held');
  const reply = await say(bob, 'here you go', { replyTo: mine.id });
  const postedAt = performance.now();
  const res = await held;
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.entries.map(brief), [['reply', reply.id]]);
  assert.ok(answeredAt - postedAt < 1000, `answered ${Math.round(answeredAt - postedAt)} ms after the reply`);

  // A wait ends empty at its deadline.
  const next = `after=${res.body.cursor.after}&originId=${res.body.cursor.originId}`;
  const started = performance.now();
  const empty = await ok(s.get(`/api/inbox?${next}&wait=1`, alice.token));
  assert.deepEqual(empty.entries, []);
  assert.ok(performance.now() - started >= 900);
});

test('a restart keeps every inbox, from the state snapshot and from a whole replay of the log', async (t) => {
  const { s, alice, bob, carol, op, say } = await setup(t);
  const mine = await say(alice, 'x');
  await say(bob, 'r', { replyTo: mine.id });
  await say(carol, '@alice hi');
  const hidden = await say(carol, '@alice hidden');
  await ok(s.post('/api/moderation/actions', { action: 'hide', target: { type: 'message', id: hidden.id }, reason: 'spam' }, op.token), 201);
  const w = await ok(s.post('/api/work', { clientId: cid(), title: 'w', description: 'd', acceptanceCriteria: 'c' }, alice.token), 201);
  await workAct(s, bob, w, 'claim', { leaseMinutes: 30 });
  const f = await ok(s.post('/api/flags', { target: { type: 'message', id: mine.id }, reason: 'other', clientId: cid() }, carol.token), 201);
  await ok(s.post('/api/flags/resolve', { flagId: f.id, resolution: 'dismiss', note: '' }, op.token));
  const views = async () => [await inboxOf(s, alice), await inboxOf(s, bob), await inboxOf(s, carol), await ok(s.get('/api/inbox?limit=1', alice.token))];
  const live = await views();
  assert.equal(live[0].length, 3);
  assert.equal(live[2].length, 1);
  const snapshot = join(s.dataDir, 'index', 'state.snapshot');
  await s.stop();
  assert.ok(existsSync(snapshot));
  await s.start();
  assert.deepEqual(await views(), live, 'from the snapshot');
  // A new entry after the restart still reaches the inbox.
  const later = await say(bob, 'after restart', { replyTo: mine.id });
  const withLater = await inboxOf(s, alice);
  assert.deepEqual(withLater.at(-1).message, later);
  await s.stop();
  rmSync(snapshot);
  await s.start();
  assert.deepEqual(await inboxOf(s, alice), withLater, 'from a whole replay');
});

test('the MCP tool forum_inbox, the A2A action inbox and the JS and Python helpers return the same entries as GET /api/inbox', async (t) => {
  const { s, alice, bob, say } = await setup(t);
  const mine = await say(alice, 'x');
  await say(bob, 'r', { replyTo: mine.id });
  await say(bob, 'hello @alice');
  const rest = await ok(s.get('/api/inbox', alice.token));
  assert.equal(rest.entries.length, 2);

  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${alice.token}` } } });
  const client = new Client({ name: 'inbox-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const tool = (await client.listTools()).tools.find((x) => x.name === 'forum_inbox');
  assert.ok(tool, 'forum_inbox is listed');
  assert.equal(tool.annotations.readOnlyHint, true);
  const called = await client.callTool({ name: 'forum_inbox', arguments: {} });
  assert.equal(called.isError ?? false, false);
  assert.deepEqual(called.structuredContent, rest);
  assert.match(called.content.map((c) => c.text).join('\n'), /untrusted data/);

  const a2a = await s.post('/a2a/message:send', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { action: 'inbox', input: {} }, mediaType: 'application/json' }] }, configuration: {} }, alice.token, { 'a2a-version': '1.0' });
  assert.equal(a2a.status, 200, JSON.stringify(a2a.body));
  assert.deepEqual(a2a.body.message.parts[0].data.result, rest);

  const { ForumClient } = await import(join(ROOT, 'src', 'api', 'docs', 'client', 'forum-client.mjs'));
  const js = new ForumClient({ baseUrl: s.url, token: alice.token });
  assert.deepEqual(await js.inbox(), rest);
  const next = await js.inbox({ after: rest.cursor.after, originId: rest.cursor.originId, wait: 1 });
  assert.deepEqual(next.entries, []);

  if (!which('python3')) {
    t.diagnostic('python3 is not installed on this machine: forum_client.py inbox() was NOT tested');
    return;
  }
  const dir = tempDir(t, 'inbox-py-');
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);
  writeFileSync(join(dir, 'drive.py'), `import json, sys
from forum_client import ForumClient
c = ForumClient(base_url=sys.argv[1], token=sys.argv[2])
first = c.inbox()
rest = c.inbox(after=first["cursor"]["after"], origin_id=first["cursor"]["originId"], limit=10, wait=1)
print(json.dumps({"first": first, "rest": rest["entries"]}))
`);
  const py = JSON.parse(execFileSync('python3', [join(dir, 'drive.py'), s.url, alice.token], { cwd: dir, timeout: 30_000, encoding: 'utf8' }));
  assert.deepEqual(py, { first: rest, rest: [] });
});

test('after a purge that erases an agent, its old name mentions nobody, live and after a whole replay alike; its id still does', async (t) => {
  const { s, alice, bob, op, say } = await setup(t);
  await ok(s.post('/api/moderation/actions', { action: 'purge', target: { type: 'agent', id: bob.id }, reason: 'leaks', mode: 'erase' }, op.token), 201);
  assert.equal((await s.cli('agents', 'enable', bob.id)).code, 0);
  await say(alice, 'hello @bob');
  const byId = await say(alice, `hello @${bob.id}`);
  const live = await inboxOf(s, bob);
  assert.deepEqual(live.map(brief), [['mention', byId.id]]);
  await s.stop();
  rmSync(join(s.dataDir, 'index', 'state.snapshot'));
  await s.start();
  assert.deepEqual(await inboxOf(s, bob), live);
});
