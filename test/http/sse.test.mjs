/**
 * The change feeds and the inbox as Server-Sent Events (issue 37): `Accept: text/event-stream` on
 * /api/changes, /api/work/changes and /api/inbox keeps the response open and writes one event per
 * page past the stream's cursor (`id:` the page's cursor, `data:` the page JSON as GET answers it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startServer, tempDir } from '../helpers/server.mjs';
import { openStream, pageOf } from '../helpers/sse-stream.mjs';
import { caughtUpQuery } from '../helpers/reads.mjs';
import { CHANGE_READS_PER_TOKEN_PER_MINUTE, FEED_STREAM_BUSY_RETRY_SECONDS, FEED_STREAM_RETRY_MS, FEED_WAITERS_PER_AGENT_MAX } from '../../dist/constants.js';
import { ManualClock } from '../../dist/clock.js';
import { startInProcess } from '../helpers/inprocess.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let clientIds = 0;
const cid = () => `sse-${++clientIds}`;

/** GET `path` as raw text (the exact bytes of the JSON page, as UTF-8). */
async function rawGet(s, path, token) {
  const res = await fetch(s.url + path, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  return res.text();
}


test('a /api/changes stream is 200 text/event-stream and writes a message committed while it is open as one event: id the page cursor, data byte-identical to GET at the previous cursor', async (t) => {
  const s = await startServer(t);
  const a = await s.register('poster');
  const topic = (await s.post('/api/topics', { title: 'streamed' }, a.token)).body;
  const cursor = await caughtUpQuery(s, '/api/changes', a.token);
  const st = await openStream(s, `/api/changes?${cursor}&wait=20`, a.token);
  t.after(() => st.close());
  assert.equal(st.status, 200);
  assert.equal(st.headers['content-type'], 'text/event-stream');
  assert.equal(st.headers['cache-control'], 'no-store');
  await sleep(400);
  assert.equal(st.events.length, 0, 'nothing past the cursor yet: no event');
  assert.equal(st.retry, FEED_STREAM_RETRY_MS, 'the stream tells EventSource how soon to reconnect');

  const posted = await s.post('/api/messages', { topicId: topic.id, content: 'live', clientId: cid() }, a.token);
  assert.equal(posted.status, 201);
  const ev = await st.event(0);
  const page = pageOf(ev);
  assert.deepEqual(page.events.map((e) => e.message?.id), [posted.body.id]);
  assert.equal(page.hasMore, false);
  assert.equal(ev.id, `${page.cursor.originId}:${page.cursor.after}`);
  assert.equal(ev.data, await rawGet(s, `/api/changes?${cursor}`, a.token), 'the event is the page GET answers at the previous cursor');

  // The next commit continues from the event's cursor.
  const second = await s.post('/api/messages', { topicId: topic.id, content: 'again', clientId: cid() }, a.token);
  const ev2 = await st.event(1);
  assert.deepEqual(pageOf(ev2).events.map((e) => e.message?.id), [second.body.id]);
  assert.equal(ev2.data, await rawGet(s, `/api/changes?after=${page.cursor.after}&originId=${page.cursor.originId}`, a.token));
});

test('a stream from an old cursor writes the backlog one page per pollAfterSeconds (1 s), as a polling client would read it, each page equal to GET at the cursor before it, then ends at its wait', async (t) => {
  const s = await startServer(t);
  const a = await s.register();
  const topic = (await s.post('/api/topics', { title: 'backlog' }, a.token)).body;
  for (let i = 0; i < 5; i++) await s.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: cid() }, a.token);
  const started = performance.now();
  const st = await openStream(s, '/api/changes?after=0&limit=2&wait=6', a.token);
  await st.ended;
  const heldMs = performance.now() - started;
  assert.ok(heldMs >= 5900 && heldMs < 11000, `the stream lasted ${Math.round(heldMs)} ms for wait=6`);
  let pages = 0;
  for (let q = 'after=0&limit=2'; ; pages++) {
    const page = JSON.parse(await rawGet(s, `/api/changes?${q}`, a.token));
    if (!page.hasMore) break;
    q = `after=${page.cursor.after}&originId=${page.cursor.originId}&limit=2`;
  }
  assert.ok(pages >= 2, `a backlog of ${pages + 1} pages`);
  assert.equal(st.events.length, pages + 1, 'every page of the backlog, in its wait');
  let q = 'after=0&limit=2';
  for (const ev of st.events) {
    assert.equal(ev.data, await rawGet(s, `/api/changes?${q}`, a.token));
    const page = pageOf(ev);
    q = `after=${page.cursor.after}&originId=${page.cursor.originId}&limit=2`;
  }
  assert.equal(pageOf(st.events.at(-1)).hasMore, false, 'the last page is caught up');
  for (let i = 1; i < st.events.length; i++) {
    const gap = st.events[i].at - st.events[i - 1].at;
    assert.ok(gap >= 950, `page ${i + 1} came ${Math.round(gap)} ms after a page with hasMore (its pollAfterSeconds is 1)`);
  }
  const contents = st.events.flatMap((ev) => pageOf(ev).events.filter((e) => e.kind === 'message').map((e) => e.message.content));
  assert.deepEqual(contents, ['m0', 'm1', 'm2', 'm3', 'm4']);
});

test('Last-Event-ID resumes a stream after the event it names; a malformed one is 400 and a foreign cursor 409, before any stream starts', async (t) => {
  const s = await startServer(t);
  const a = await s.register();
  const topic = (await s.post('/api/topics', { title: 'resume' }, a.token)).body;
  const first = await openStream(s, '/api/changes?after=0&wait=1', a.token);
  await first.ended;
  const lastId = first.events.at(-1).id;
  const posted = [];
  for (const content of ['after one', 'after two']) posted.push((await s.post('/api/messages', { topicId: topic.id, content, clientId: cid() }, a.token)).body.id);

  // An EventSource reconnects to the same URL (after=0 here) and sends the last id it saw.
  const resumed = await openStream(s, '/api/changes?after=0&wait=5', a.token, { 'last-event-id': lastId });
  t.after(() => resumed.close());
  const ev = await resumed.event(0);
  assert.deepEqual(pageOf(ev).events.map((e) => e.message?.id), posted);
  const [originId, after] = lastId.split(':');
  assert.equal(ev.data, await rawGet(s, `/api/changes?after=${after}&originId=${originId}`, a.token));

  const bad = await s.get('/api/changes', a.token, { accept: 'text/event-stream', 'last-event-id': 'nope' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'VALIDATION');
  assert.match(bad.body.error, /Last-Event-ID/);
  const foreign = await s.get('/api/changes', a.token, { accept: 'text/event-stream', 'last-event-id': '00000000-0000-4000-8000-000000000000:1' });
  assert.equal(foreign.status, 409);
  assert.equal(foreign.body.code, 'CURSOR_ORIGIN');
  const ahead = await s.get(`/api/changes?after=999999&originId=${originId}`, a.token, { accept: 'text/event-stream' });
  assert.equal(ahead.status, 409);
  assert.equal(ahead.body.code, 'CURSOR_AHEAD');
});

test('an inbox stream carries its own agent\'s entries only, and hidden content never appears on a stream', async (t) => {
  const s = await startServer(t);
  const alice = await s.register('alice');
  const bob = await s.register('bob');
  const carol = await s.register('carol');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const topic = (await s.post('/api/topics', { title: 'inbox stream' }, alice.token)).body;
  const say = async (who, content, extra = {}) => {
    const r = await s.post('/api/messages', { topicId: topic.id, content, clientId: cid(), ...extra }, who.token);
    assert.equal(r.status, 201);
    return r.body;
  };
  const mine = await say(alice, 'a question');
  const hidden = await say(bob, 'hidden reply text', { replyTo: mine.id });
  assert.equal((await s.post('/api/moderation/actions', { action: 'hide', target: { type: 'message', id: hidden.id }, reason: 'spam' }, op.token)).status, 201);

  const aliceInbox = await openStream(s, '/api/inbox?after=0&wait=20', alice.token);
  const carolInbox = await openStream(s, '/api/inbox?after=0&wait=20', carol.token);
  const aliceFeed = await openStream(s, '/api/changes?after=0&wait=20', alice.token);
  t.after(() => [aliceInbox, carolInbox, aliceFeed].forEach((st) => st.close()));
  assert.equal(aliceInbox.status, 200);
  await sleep(300);
  const reply = await say(bob, 'a visible reply', { replyTo: mine.id });
  const deadline = performance.now() + 15_000;
  while (!aliceInbox.events.some((ev) => pageOf(ev).entries.some((e) => e.message?.id === reply.id))) {
    assert.ok(performance.now() < deadline, 'the reply reached alice\'s inbox stream');
    await sleep(50);
  }
  await sleep(500);
  assert.equal(carolInbox.events.length, 0, 'carol\'s inbox stream got nothing');
  for (const st of [aliceInbox, aliceFeed]) {
    assert.ok(st.events.length > 0);
    assert.ok(!st.body.includes('hidden reply text'), 'the hidden reply\'s text is on no stream');
  }
  assert.ok(!aliceInbox.events.some((ev) => pageOf(ev).entries.some((e) => e.message?.id === hidden.id)), 'no inbox entry for the hidden reply');

  // Hiding a message while a stream is open: the stream's next page shows it as a fresh GET does.
  const later = await say(bob, 'soon hidden', { replyTo: mine.id });
  assert.equal((await s.post('/api/moderation/actions', { action: 'hide', target: { type: 'message', id: later.id }, reason: 'spam' }, op.token)).status, 201);
  await sleep(500);
  const q = aliceFeed.events.length > 0 ? aliceFeed.events.at(-1).id.split(':') : null;
  const fresh = await s.get(`/api/changes?after=${q[1]}&originId=${q[0]}`, alice.token);
  assert.deepEqual(fresh.body.events, [], 'the stream is caught up with the feed');
  const lastView = aliceFeed.events.flatMap((ev) => pageOf(ev).events).filter((e) => e.message?.id === later.id).at(-1);
  assert.equal(lastView.message.content, '', 'the last view of the message on the stream is the hidden placeholder');
});

for (const [how, command] of [
  ['disabled', 'disable'],
  ['whose token is rotated', 'rotate-token'],
]) {
  test(`an agent ${how} while its stream is open gets no further page on it, and that token cannot reopen it`, async (t) => {
    const s = await startServer(t);
    const a = await s.register('soon-cut-off');
    const b = await s.register('poster');
    const topic = (await s.post('/api/topics', { title: command }, b.token)).body;
    const cursor = await caughtUpQuery(s, '/api/changes', a.token);
    const st = await openStream(s, `/api/changes?${cursor}&wait=20`, a.token);
    t.after(() => st.close());
    await s.post('/api/messages', { topicId: topic.id, content: 'before', clientId: cid() }, b.token);
    await st.event(0);
    const cli = await s.cli('agents', command, a.id);
    assert.equal(cli.code, 0, cli.stderr);
    await s.post('/api/messages', { topicId: topic.id, content: `after the ${command}`, clientId: cid() }, b.token);
    await sleep(800);
    assert.equal(st.events.length, 1);
    assert.ok(!st.body.includes(`after the ${command}`));
    const again = await s.get('/api/changes', a.token, { accept: 'text/event-stream' });
    assert.equal(again.status, 401);
  });
}

test('a work-feed stream is written by work revisions, not by messages', async (t) => {
  const s = await startServer(t);
  const a = await s.register();
  const topic = (await s.post('/api/topics', { title: 'x' }, a.token)).body;
  const cursor = await caughtUpQuery(s, '/api/work/changes', a.token);
  const st = await openStream(s, `/api/work/changes?${cursor}&wait=20`, a.token);
  t.after(() => st.close());
  await s.post('/api/messages', { topicId: topic.id, content: 'not work', clientId: cid() }, a.token);
  await sleep(400);
  assert.equal(st.events.length, 0, 'a message is no work event');
  const created = await s.post('/api/work', { clientId: cid(), title: 'Task', description: 'd', acceptanceCriteria: 'a' }, a.token);
  assert.equal(created.status, 201);
  const ev = await st.event(0);
  assert.deepEqual(pageOf(ev).events.map((e) => e.workItem.id), [created.body.id]);
  assert.equal(ev.data, await rawGet(s, `/api/work/changes?${cursor}`, a.token));
});

test('a stream counts one change read when it opens and one for each page after its first, as a long poll would; a page past the limit waits for the window (no 429 on an open stream)', async (t) => {
  const clock = new ManualClock();
  const s = await startInProcess(t, { env: { FORUM_RATE_LIMITS: 'on' }, clock });
  const a = await s.register();
  const topic = (await s.post('/api/topics', { title: 'limits' }, a.token)).body;
  const first = await s.get('/api/changes?after=0&limit=100', a.token);
  const remaining = Number(first.headers['ratelimit-remaining']);
  assert.equal(remaining, CHANGE_READS_PER_TOKEN_PER_MINUTE - 1);
  clock.advance(10_000);
  const st = await openStream(s, `/api/changes?after=${first.body.cursor.after}&originId=${first.body.cursor.originId}&wait=60`, a.token);
  t.after(() => st.close());
  assert.equal(Number(st.headers['ratelimit-remaining']), remaining - 1);
  for (let i = 0; i < 3; i++) {
    await s.post('/api/messages', { topicId: topic.id, content: `n${i}`, clientId: cid() }, a.token);
    await st.event(i);
  }
  const probe = await s.get('/api/changes?after=0&limit=1', a.token);
  assert.equal(Number(probe.headers['ratelimit-remaining']), remaining - 1 - 2 - 1, 'the opening, two pages after the first, this request');
  // Spend the rest of the minute's change reads.
  let left = Number(probe.headers['ratelimit-remaining']);
  while (left > 0) left = Number((await s.get('/api/changes?after=0&limit=1', a.token)).headers['ratelimit-remaining']);
  assert.equal((await s.get('/api/changes?after=0&limit=1', a.token)).status, 429);
  const late = await s.post('/api/messages', { topicId: topic.id, content: 'past the limit', clientId: cid() }, a.token);
  assert.equal(late.status, 201);
  await sleep(600);
  assert.equal(st.events.length, 3, 'the page waits while the limit refuses it');
  assert.equal(st.done, false, 'the stream stays open');
  clock.advance(50_000); // the first read (10 s before the stream opened) leaves the window; the stream's wait has 10 s left
  const ev = await st.event(3);
  assert.deepEqual(pageOf(ev).events.map((e) => e.message?.id), [late.body.id]);
});

test(`streams share the held requests' bounds: past ${FEED_WAITERS_PER_AGENT_MAX} per agent a stream is refused 429 with Retry-After, and shutdown ends every stream`, async (t) => {
  const s = await startServer(t, { env: { FORUM_METRICS_PORT: '0' } });
  const metricsUrl = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"'))).metricsUrl;
  const a = await s.register('busy');
  const b = await s.register('other');
  const cursor = await caughtUpQuery(s, '/api/changes', a.token);
  const streams = [];
  for (let i = 0; i < FEED_WAITERS_PER_AGENT_MAX; i++) streams.push(await openStream(s, `/api/changes?${cursor}&wait=60`, a.token));
  assert.ok(streams.every((st) => st.status === 200));
  const refused = await s.get(`/api/changes?${cursor}`, a.token, { accept: 'text/event-stream' });
  assert.equal(refused.status, 429);
  assert.equal(refused.body.code, 'RATE_LIMITED');
  assert.equal(refused.headers['retry-after'], String(FEED_STREAM_BUSY_RETRY_SECONDS));
  // A long poll of the same agent is past the same bound: answered at once.
  const poll = await s.get(`/api/changes?${cursor}&wait=30`, a.token);
  assert.equal(poll.status, 200);
  // Another agent is not limited by the first one's streams.
  const other = await openStream(s, `/api/inbox?wait=60`, b.token);
  assert.equal(other.status, 200);
  streams.push(other);
  const gauge = (await (await fetch(metricsUrl)).text()).split('\n').find((l) => l.startsWith('forum_feed_waiters '));
  assert.equal(gauge, `forum_feed_waiters ${FEED_WAITERS_PER_AGENT_MAX + 1}`, 'the gauge counts streams');

  const stopping = s.stop();
  await Promise.all(streams.map((st) => st.ended));
  assert.ok(streams.every((st) => st.done), 'every stream ended cleanly');
  assert.equal(await stopping, 0);
});

test('/openapi.json documents the stream form (a text/event-stream content beside the JSON page, the Last-Event-ID header) on the three routes, and a CORS preflight allows Last-Event-ID', async (t) => {
  const s = await startServer(t);
  const doc = (await s.get('/openapi.json')).body;
  for (const path of ['/api/changes', '/api/work/changes', '/api/inbox']) {
    const op = doc.paths[path].get;
    assert.deepEqual(Object.keys(op.responses['200'].content).sort(), ['application/json', 'text/event-stream'], path);
    assert.match(op.responses['200'].content['text/event-stream'].schema.description, /Last-Event-ID/);
    assert.ok(op.parameters.some((p) => p.in === 'header' && p.name === 'Last-Event-ID'), `${path}: Last-Event-ID`);
  }
  // A browser's fetch-based stream client may resume cross-origin: the preflight allows the header.
  const pre = await s.request('OPTIONS', '/api/changes', { headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, last-event-id' } });
  assert.equal(pre.status, 204);
  assert.ok(pre.headers['access-control-allow-headers'].toLowerCase().split(/\s*,\s*/).includes('last-event-id'));
});

test('the JavaScript and Python helpers (streamFeed, stream_feed) yield the pages of a stream, a message posted while it is open among them, and reopens from the last id when a stream ends', async (t) => {
  const s = await startServer(t);
  const poster = await s.register('poster');
  const topic = (await s.post('/api/topics', { title: 'helper stream' }, poster.token)).body;
  const dir = tempDir(t, 'forum-sse-client-');
  writeFileSync(join(dir, 'forum-client.mjs'), (await s.get('/api/client/forum-client.mjs')).body);
  const { ForumClient } = await import(pathToFileURL(join(dir, 'forum-client.mjs')).href);
  const reader = await s.register('reader');
  const client = new ForumClient({ token: reader.token });
  const controller = new AbortController();
  const seen = [];
  const posting = (async () => {
    await sleep(1500); // past the first stream's end (wait=1): the helper has reopened it
    for (const content of ['first', 'second']) assert.equal((await s.post('/api/messages', { topicId: topic.id, content, clientId: cid() }, poster.token)).status, 201);
  })();
  for await (const page of client.streamFeed({ wait: 1, signal: controller.signal })) {
    assert.equal(page.format, 'forum-changes-v1');
    seen.push(...page.events.filter((e) => e.kind === 'message').map((e) => e.message.content));
    if (seen.includes('second')) break;
  }
  await posting;
  assert.deepEqual(seen, ['first', 'second'], 'each message once, in order');

  // The Python helper: stream_feed() yields the same pages.
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);
  writeFileSync(join(dir, 'stream.py'), `
import json, sys, threading, time
from forum_client import ForumClient
client = ForumClient(token=sys.argv[1])
def post():
    time.sleep(1.5)
    for content in ("third", "fourth"):
        ForumClient(token=sys.argv[2]).post_message(sys.argv[3], content, client_id="py-" + content)
threading.Thread(target=post).start()
seen = []
for page in client.stream_feed(wait=1):
    assert page["format"] == "forum-changes-v1"
    seen += [e["message"]["content"] for e in page["events"] if e["kind"] == "message"]
    if "fourth" in seen:
        break
print(json.dumps(seen))
`);
  const { stdout } = await promisify(execFile)('python3', [join(dir, 'stream.py'), reader.token, poster.token, topic.id], { cwd: dir, timeout: 30_000 });
  assert.deepEqual(JSON.parse(stdout), ['first', 'second', 'third', 'fourth'], 'python: every message once, in order');
});
