/**
 * Feed positions after a change of writer (issue 50, "failover without silent skips";
 * docs/api/feeds.md "Positions"): on a log whose writer changed, the change feeds, the inbox,
 * their long polls and streams speak positions — log seqs up to the fork, past a gap of at least
 * 1e9 after it — and a cursor from the lost branch (a position in the gap) is 409 CURSOR_LOST
 * naming where to reread from, never a silent skip of the new records at the same seqs.
 * Black box: the built server on a folder rebased by test/helpers/rebased-log.mjs, over REST,
 * A2A and MCP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startRebasedServer } from '../helpers/rebased-log.mjs';
import { openStream, pageOf } from '../helpers/sse-stream.mjs';
import { POSITION_JUMP } from '../../dist/constants.js';

let clientIds = 0;
const cid = () => `fp-${++clientIds}`;
const pad = (n) => String(n).padStart(10, '0');

/** POST that must succeed (201 or 200); resolves to the body. */
async function ok(s, path, body, token) {
  const res = await s.post(path, path === '/api/topics' ? body : { clientId: cid(), ...body }, token);
  assert.ok(res.status === 201 || res.status === 200, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Every page of `path` (a feed or the inbox) from `after` with `limit`, until caught up: { events, cursors }. */
async function readAll(s, path, token, { after = 0, limit = 100, originId } = {}) {
  const events = [];
  const cursors = [];
  let cursor = { after, originId };
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 500, 'the feed ends');
    const q = new URLSearchParams({ after: String(cursor.after), limit: String(limit) });
    if (cursor.after > 0) q.set('originId', cursor.originId);
    const res = await s.get(`${path}?${q}`, token);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    events.push(...(res.body.events ?? res.body.entries));
    cursors.push(res.body.cursor.after);
    cursor = res.body.cursor;
    if (!res.body.hasMore) return { events, cursors, cursor };
  }
}

/** Resolves once the server holds at least `n` long polls or streams (GET /api/limits, feedSlotsTotal). */
async function untilHeld(s, token, n) {
  for (let i = 0; ; i++) {
    const slot = (await s.get('/api/limits', token)).body.limits.find((l) => l.policy === 'feedSlotsTotal');
    if (slot.quota - slot.remaining >= n) return;
    assert.ok(i < 1000, `the server holds ${n} requests`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The number an id carries (`msg_2000000003` → 2000000003). */
const idPosition = (id) => Number(id.slice(id.indexOf('_') + 1));

test('feeds, inbox, long polls and streams speak positions across a change of writer, and a lost cursor is 409 CURSOR_LOST', async (t) => {
  const r = await startRebasedServer(t, {
    before: async (s) => {
      const alice = await s.register('alice');
      const bob = await s.register('bob');
      const topic = await ok(s, '/api/topics', { title: 'Before the failover' }, alice.token);
      const m1 = await ok(s, '/api/messages', { topicId: topic.id, content: 'first' }, alice.token);
      await ok(s, '/api/messages', { topicId: topic.id, content: 'a reply before', replyTo: m1.id }, bob.token);
      const w1 = await ok(s, '/api/work', { title: 'Count the gulls', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
      await ok(s, '/api/work', { title: 'Count the terns', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
      await ok(s, '/api/work/action', { action: 'claim', workItemId: w1.id, expectedRevision: 1 }, bob.token);
      return { alice, bob, topic, m1, w1 };
    },
    after: async (s, { alice, bob, topic }) => {
      const m2 = await ok(s, '/api/messages', { topicId: topic.id, content: 'after the failover' }, alice.token);
      await ok(s, '/api/messages', { topicId: topic.id, content: 'a reply after', replyTo: m2.id }, bob.token);
      await ok(s, '/api/topics', { title: 'After the failover' }, bob.token);
      const w3 = await ok(s, '/api/work', { title: 'Count the cormorants', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
      await ok(s, '/api/work/action', { action: 'claim', workItemId: w3.id, expectedRevision: 1 }, bob.token);
      return { m2 };
    },
  });
  const s = r.server;
  const { alice, bob, topic } = r.before;
  const { fork, base, epochSeq } = r;
  assert.equal(base, 2 * POSITION_JUMP, 'the epoch record of a small log jumps to 2e9');
  const full = await readAll(s, '/api/changes', alice.token);
  const originId = full.cursor.originId;
  const exported = (await s.get(`/api/exchange?topicId=${topic.id}`, alice.token)).body.records;

  await t.test('discussion events before the change of writer keep seq = log seq; those after have positions past the jump', () => {
    const before = full.events.filter((e) => e.seq <= fork);
    const after = full.events.filter((e) => e.seq > fork);
    assert.ok(before.length >= 3 && after.length >= 3, `events on both sides (${before.length}, ${after.length})`);
    for (const e of after) assert.ok(e.seq > base, `event ${e.seq} lies past the jump`);
    // The export keeps log seqs: a record's event seq is its log seq before the jump, and its log seq
    // plus the jump after it.
    for (const row of exported) {
      const event = full.events.find((e) => e[row.kind]?.id === JSON.parse(row.canonicalJson).id);
      assert.ok(event, `the feed carries ${row.kind} ${row.seq}`);
      assert.equal(event.seq, row.seq < epochSeq ? row.seq : row.seq - epochSeq + base, `the event of log seq ${row.seq}`);
    }
    assert.ok(exported.some((row) => row.seq > epochSeq), 'the export holds records after the jump, by log seq');
    // Ids carry the same position as the event.
    for (const e of full.events) if (e.kind === 'message' || e.kind === 'topic') assert.equal(idPosition(e[e.kind].id), e.seq, `${e[e.kind].id}`);
    assert.ok(full.cursor.after > base, 'the caught-up cursor is a position past the jump');
  });

  await t.test('paging across the jump with small limits returns every event exactly once, in order', async () => {
    for (const limit of [1, 2, 3, 7]) {
      const paged = await readAll(s, '/api/changes', alice.token, { limit });
      assert.deepEqual(paged.events.map((e) => e.seq), full.events.map((e) => e.seq), `limit ${limit}`);
      assert.deepEqual(paged.events, full.events, `limit ${limit}: the same events`);
      for (let i = 1; i < paged.cursors.length; i++) assert.ok(paged.cursors[i] >= paged.cursors[i - 1], `limit ${limit}: cursors never go back`);
      assert.ok(paged.cursors.every((c) => c <= fork || c >= base), `limit ${limit}: no cursor lies in the gap`);
    }
  });

  await t.test('a discussion cursor from the lost branch is 409 CURSOR_LOST naming the fork point; one at the fork point continues without a skip', async () => {
    for (const lost of [fork + 1, fork + 3, base - 1]) {
      const res = await s.get(`/api/changes?after=${lost}&originId=${originId}`, alice.token);
      assert.equal(res.status, 409, `after=${lost}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, 'CURSOR_LOST');
      assert.match(res.body.error, new RegExp(`after position ${fork}\\b`));
      assert.match(res.body.error, new RegExp(`[Rr]eread from after=${fork}\\b`));
    }
    const atFork = await readAll(s, '/api/changes', alice.token, { after: fork, originId, limit: 2 });
    assert.deepEqual(atFork.events, full.events.filter((e) => e.seq > fork));
    const atBase = await readAll(s, '/api/changes', alice.token, { after: base, originId });
    assert.deepEqual(atBase.events, full.events.filter((e) => e.seq > base), 'the epoch record\'s own position is a cursor too');
    const ahead = await s.get(`/api/changes?after=${full.cursor.after + 1}&originId=${originId}`, alice.token);
    assert.equal(ahead.status, 409);
    assert.equal(ahead.body.code, 'CURSOR_AHEAD', 'past the head it is still a cursor ahead of the archive');
    assert.match(ahead.body.error, new RegExp(`ends at ${full.cursor.after}\\b`), 'the head is named as a position');
  });

  await t.test('ids the lost branch had name nothing: 404', async () => {
    assert.equal((await s.get(`/api/exchange?topicId=tp_${pad(fork + 1)}`, alice.token)).status, 404);
    assert.equal((await s.get(`/api/work/history?workItemId=wk_${pad(fork + 2)}`, alice.token)).status, 404);
    const lostMessage = await s.get(`/api/messages?messageId=msg_${pad(fork + 1)}`, alice.token);
    assert.deepEqual([lostMessage.status, lostMessage.body.messages], [200, []], 'a lost message id finds nothing (an unknown id filter is an empty list)');
    const messages = await s.get(`/api/messages?topicId=${topic.id}&limit=100`, alice.token);
    assert.equal(messages.status, 200);
    assert.ok(messages.body.messages.length >= 4);
    assert.ok(messages.body.messages.every((m) => idPosition(m.id) <= fork || idPosition(m.id) > base), 'no message id lies in the gap');
  });

  await t.test('the work feed jumps too: its events before keep 1, 2, 3, those after start past the gap, and a lost work cursor is 409 CURSOR_LOST', async () => {
    const work = await readAll(s, '/api/work/changes', alice.token);
    const workOrigin = work.cursor.originId;
    assert.deepEqual(work.events.map((e) => e.seq), [1, 2, 3, base + 1, base + 2], 'three revisions before, two after');
    const paged = await readAll(s, '/api/work/changes', alice.token, { limit: 1 });
    assert.deepEqual(paged.events, work.events, 'limit 1 across the jump');
    const atFork = await readAll(s, '/api/work/changes', alice.token, { after: 3, originId: workOrigin });
    assert.deepEqual(atFork.events.map((e) => e.seq), [base + 1, base + 2]);
    const lost = await s.get(`/api/work/changes?after=6&originId=${workOrigin}`, alice.token);
    assert.equal(lost.status, 409, JSON.stringify(lost.body));
    assert.equal(lost.body.code, 'CURSOR_LOST');
    assert.match(lost.body.error, /after position 3\b/);
  });

  await t.test('the A2A and MCP forms of the feeds give the same positions and refuse a lost cursor the same way', async () => {
    const a2a = (input) => s.post('/a2a/message:send', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { action: 'changes', input }, mediaType: 'application/json' }] } }, alice.token, { 'a2a-version': '1.0' });
    const page = await a2a({ after: fork, originId, limit: 100 });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    assert.deepEqual(page.body.message.parts[0].data.result.events, full.events.filter((e) => e.seq > fork));
    const lost = await a2a({ after: fork + 1, originId, limit: 100 });
    assert.equal(lost.status, 409);
    assert.equal(lost.body.error.details[0].reason, 'CURSOR_LOST');
    const client = new Client({ name: 'feed-positions', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${alice.token}` } } }));
    try {
      const tool = await client.callTool({ name: 'forum_changes', arguments: { after: fork, originId, limit: 100 } });
      assert.ok(!tool.isError, JSON.stringify(tool.content));
      assert.deepEqual(tool.structuredContent.events, full.events.filter((e) => e.seq > fork));
      assert.match(tool.content.map((c) => c.text).join(' '), new RegExp(`"after":${full.cursor.after}\\b`), 'the summary names the next cursor, a position');
      const refused = await client.callTool({ name: 'forum_changes', arguments: { after: fork + 1, originId } });
      assert.ok(refused.isError);
      assert.match(refused.content.map((c) => c.text).join(' '), /CURSOR_LOST/);
    } finally {
      // Closed before the long polls below count what the server holds.
      await client.close();
    }
  });

  await t.test('the inbox gives positions and refuses a lost cursor', async () => {
    const inbox = await readAll(s, '/api/inbox', alice.token);
    const seqs = inbox.events.map((e) => e.seq);
    assert.ok(seqs.some((x) => x <= fork) && seqs.some((x) => x > base), `entries on both sides: ${seqs}`);
    for (const e of inbox.events) if (e.message) assert.equal(idPosition(e.message.id), e.seq);
    const paged = await readAll(s, '/api/inbox', alice.token, { limit: 1 });
    assert.deepEqual(paged.events, inbox.events);
    const lost = await s.get(`/api/inbox?after=${fork + 2}&originId=${inbox.cursor.originId}`, alice.token);
    assert.equal(lost.status, 409);
    assert.equal(lost.body.code, 'CURSOR_LOST');
  });

  await t.test('a long poll at a position past the jump is answered with the next event, at its position, when it is committed', async () => {
    const head = (await readAll(s, '/api/changes', alice.token, { after: fork, originId })).cursor;
    const workHead = (await readAll(s, '/api/work/changes', bob.token)).cursor;
    const held = s.get(`/api/changes?after=${head.after}&originId=${originId}&wait=10`, alice.token);
    const heldWork = s.get(`/api/work/changes?after=${workHead.after}&originId=${workHead.originId}&wait=10`, bob.token);
    await untilHeld(s, alice.token, 2);
    // A work item created without a topicId is one record with a discussion event (its topic) and a
    // work event, so one commit wakes both held requests: each is answered in the delivery round of
    // that commit, which runs before the write is answered, so the next record is on neither page
    // (a request answered only at its deadline would carry both).
    const created = await ok(s, '/api/work', { title: 'Count the puffins', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
    const next = await ok(s, '/api/work', { title: 'Count the auks', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
    const res = await held;
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.events.map((e) => [e.seq, e.topic?.id]), [[idPosition(created.topicId), created.topicId]], 'the held request got the new topic, at its position');
    assert.ok(idPosition(created.topicId) > base);
    const work = await heldWork;
    assert.deepEqual(work.body.events.map((e) => [e.seq, e.workItem.id]), [[workHead.after + 1, created.id]]);
    assert.notEqual(next.id, created.id);
    const lost = await s.get(`/api/changes?after=${fork + 1}&originId=${originId}&wait=30`, alice.token);
    assert.equal(lost.status, 409, 'a lost cursor is refused at once, not held');
    assert.equal(lost.body.code, 'CURSOR_LOST');
  });

  await t.test('a stream\'s event ids are positions, it follows past the jump, and a lost Last-Event-ID is 409 CURSOR_LOST', async () => {
    const now = await readAll(s, '/api/changes', alice.token, { after: fork, originId });
    const stream = await openStream(s, `/api/changes?after=${fork}&originId=${originId}&wait=20`, alice.token);
    t.after(() => stream.close());
    assert.equal(stream.status, 200);
    const first = await stream.event(0);
    assert.equal(first.id, `${originId}:${pageOf(first).cursor.after}`);
    assert.deepEqual(pageOf(first).events, now.events, 'the stream from the fork point carries every event after it');
    // The stream's cursor is past the jump now: a new event is written to it when committed.
    const posted = await ok(s, '/api/messages', { topicId: topic.id, content: 'while streaming' }, bob.token);
    const second = await stream.event(1);
    assert.deepEqual(pageOf(second).events.map((e) => e.seq), [idPosition(posted.id)]);
    assert.equal(second.id, `${originId}:${pageOf(second).cursor.after}`);
    stream.close();
    // Resuming from an event id past the jump goes on from there.
    const resumed = await openStream(s, `/api/changes?wait=1`, alice.token, { 'last-event-id': first.id });
    await resumed.ended;
    assert.deepEqual(resumed.events.flatMap((e) => pageOf(e).events.map((x) => x.seq)), [idPosition(posted.id)]);
    const lost = await openStream(s, `/api/changes?wait=1`, alice.token, { 'last-event-id': `${originId}:${fork + 1}` });
    await lost.ended;
    assert.equal(lost.status, 409);
    assert.equal(JSON.parse(await lost.text()).code, 'CURSOR_LOST');
    const workLost = await openStream(s, `/api/work/changes?wait=1`, alice.token, { 'last-event-id': `${(await s.get('/api/work/changes', alice.token)).body.cursor.originId}:5` });
    await workLost.ended;
    assert.equal(workLost.status, 409);
    assert.equal(JSON.parse(await workLost.text()).code, 'CURSOR_LOST');
  });
});
