/**
 * MCP 2026-07-28 `subscriptions/listen` on POST /mcp (issue 54), black-box: the built forum server
 * as a process and the official SDK 2.x client (`@modelcontextprotocol/client` 2.4.0, pinned to
 * the revision). A listen follows the caller's inbox and the change feeds as resource URIs; the
 * streams are held in the same per-agent bound as long polls and feed streams.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Agent, fetch as undiciFetch, request } from 'undici';
import { FEED_WAITERS_PER_AGENT_MAX } from '../../dist/constants.js';
import { register, startServer } from '../helpers/server.mjs';

const REVISION = '2026-07-28';
const INBOX = 'forum://inbox';
const CHANGES = 'forum://changes';
const WORK = 'forum://work/changes';

const agent = new Agent({ keepAliveTimeout: 1_000, keepAliveMaxTimeout: 1_000 });
const fetch = (url, init) => undiciFetch(url, { ...init, dispatcher: agent });

/**
 * Connects the 2.x client, pinned to 2026-07-28, to `${server.url}/mcp${query}` with `token`; it
 * records every notifications/resources/updated URI in `client.updates`, in order. Closed after the test.
 */
async function connect(t, server, token, query = '') {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp${query}`), { fetch, requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'mcp-listen-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: REVISION } } });
  await client.connect(transport);
  client.updates = [];
  const waiting = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => {
    client.updates.push(n.params.uri);
    for (const w of [...waiting]) if (w.test()) waiting.splice(waiting.indexOf(w), 1) && w.resolve();
  });
  /** Resolves once `uri` has been notified `count` times in all. */
  client.updated = (uri, count = 1) =>
    new Promise((resolve) => {
      const w = { test: () => client.updates.filter((u) => u === uri).length >= count, resolve };
      if (w.test()) resolve();
      else waiting.push(w);
    });
  t.after(() => client.close());
  return client;
}

/** A raw 2026-07-28 server/discover on `/mcp${query}`; its result. */
async function discover(server, token, query = '') {
  const meta = { 'io.modelcontextprotocol/protocolVersion': REVISION, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
  const res = await server.request('POST', `/mcp${query}`, {
    body: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } },
    token,
    headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': REVISION, 'mcp-method': 'server/discover' },
  });
  assert.equal(res.status, 200);
  return res.body.result;
}

/** A tool call that must succeed; its structuredContent. */
async function call(client, name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name} failed: ${r.content?.map((c) => c.text).join(' | ')}`);
  return r.structuredContent;
}

/** The caller's held-request slots as GET /api/limits reports them: { remaining } of feedSlots. */
async function feedSlots(server, token) {
  const res = await server.get('/api/limits', token);
  assert.equal(res.status, 200);
  return res.body.limits.find((l) => l.policy === 'feedSlots');
}

/** Waits until the caller's free held-request slots equal `remaining` (the server frees a slot when it sees the connection close). */
async function slotsRemaining(server, token, remaining) {
  for (let i = 0; i < 200; i++) {
    if ((await feedSlots(server, token)).remaining === remaining) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`feedSlots.remaining never became ${remaining}`);
}

test('a listen is acknowledged with the feeds it may follow, and notified when the inbox, the discussion feed and the work feed change', async (t) => {
  const server = await startServer(t);
  const a = await register(server, 'listen-alice');
  const b = await register(server, 'listen-bob');
  const alice = await connect(t, server, a.token);
  const bob = await connect(t, server, b.token);
  assert.deepEqual((await discover(server, a.token)).capabilities.resources, { subscribe: true }, 'listen is served: resources.subscribe is declared');

  const topic = await call(alice, 'forum_open_topic', { title: 'Listen here' });
  const first = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'ask me' });

  const sub = await alice.listen({ resourceSubscriptions: [INBOX, CHANGES, WORK, 'forum://guides/start.md', 'forum://inbox/someone-else'], toolsListChanged: true });
  assert.deepEqual(sub.honoredFilter, { resourceSubscriptions: [INBOX, CHANGES, WORK] }, 'only the feeds this server serves; no list-changed notifications');
  // Bob follows the discussion feed only: a barrier that shows what his stream was sent in the same round.
  const bobSub = await bob.listen({ resourceSubscriptions: [INBOX, CHANGES] });

  await call(bob, 'forum_post_message', { topicId: topic.id, content: 'an answer', replyTo: first.id });
  await alice.updated(INBOX);
  await alice.updated(CHANGES);
  await bob.updated(CHANGES);
  // In one round a stream's notifications follow LISTEN_RESOURCES' order (inbox first), so an
  // inbox notification for Bob would have come before his discussion one.
  assert.deepEqual(bob.updates, [CHANGES], 'a reply to Alice is not in Bob\'s inbox');
  assert.ok(!alice.updates.includes(WORK));
  const page = await call(alice, 'forum_inbox');
  assert.equal(page.entries.length, 1, 'the notified inbox has the reply');

  await call(bob, 'work_create', { title: 'Do it', description: 'Something.', acceptanceCriteria: 'Done.' });
  await alice.updated(WORK);
  await alice.updated(CHANGES, 1);

  // Shutdown ends every stream gracefully: the empty listen result, so the client knows to listen again.
  const closed = Promise.all([sub.closed, bobSub.closed]);
  await server.stop();
  assert.deepEqual(await closed, ['graceful', 'graceful']);
});

test('a listen takes one of the agent\'s held-request slots with its long polls and feed streams: past the bound it is refused with -32603 and the limit, and a closed one frees its slot', async (t) => {
  const server = await startServer(t);
  const a = await register(server, 'listen-many');
  const client = await connect(t, server, a.token);
  // One REST feed stream shares the bound with the listens.
  const feedStream = await request(`${server.url}/api/changes`, { headers: { authorization: `Bearer ${a.token}`, accept: 'text/event-stream' } });
  assert.equal(feedStream.statusCode, 200);
  t.after(() => feedStream.body.destroy());
  const subs = [];
  for (let i = 1; i < FEED_WAITERS_PER_AGENT_MAX; i++) subs.push(await client.listen({ resourceSubscriptions: [INBOX] }));
  assert.equal((await feedSlots(server, a.token)).remaining, 0);

  const refused = await client.listen({ resourceSubscriptions: [INBOX] }).then(
    () => assert.fail('the listen past the bound was accepted'),
    (err) => err,
  );
  assert.equal(refused.code, -32603);
  assert.match(refused.message, /Subscription limit reached.*20 long polls, feed streams and listen streams/);
  assert.equal(refused.data['agent-forum/limit'].policy, 'feedSlots');
  assert.equal(refused.data['agent-forum/limit'].quota, FEED_WAITERS_PER_AGENT_MAX);
  assert.equal(refused.data['agent-forum/limit'].remaining, 0);
  assert.equal(typeof refused.data.retryAfterSeconds, 'number');

  // Another agent is not refused: the bound is per agent.
  const other = await connect(t, server, (await register(server, 'listen-other')).token);
  const otherSub = await other.listen({ resourceSubscriptions: [INBOX] });
  assert.deepEqual(otherSub.honoredFilter, { resourceSubscriptions: [INBOX] });

  await subs.pop().close();
  await slotsRemaining(server, a.token, 1);
  const again = await client.listen({ resourceSubscriptions: [CHANGES] });
  assert.deepEqual(again.honoredFilter, { resourceSubscriptions: [CHANGES] });
  assert.equal((await feedSlots(server, a.token)).remaining, 0);
});

test('toolsets choose what a listen may follow and whether the capability is declared; the read-only mode keeps every feed', async (t) => {
  const server = await startServer(t);
  const a = await register(server, 'listen-select');
  const all = [INBOX, CHANGES, WORK];
  const readOnly = await connect(t, server, a.token, '?readOnly=1');
  assert.deepEqual((await readOnly.listen({ resourceSubscriptions: all })).honoredFilter, { resourceSubscriptions: all });
  const work = await connect(t, server, a.token, '?toolsets=work');
  assert.deepEqual((await work.listen({ resourceSubscriptions: all })).honoredFilter, { resourceSubscriptions: [WORK] });

  const knowledge = await connect(t, server, a.token, '?toolsets=knowledge');
  assert.deepEqual((await discover(server, a.token, '?toolsets=knowledge')).capabilities.resources, {}, 'no feed is selected: no subscribe capability');
  const none = await knowledge.listen({ resourceSubscriptions: all });
  assert.deepEqual(none.honoredFilter, {});
  assert.equal(await none.closed, 'graceful', 'nothing to follow: the server ends the listen at once');
  await slotsRemaining(server, a.token, FEED_WAITERS_PER_AGENT_MAX - 2);
});
