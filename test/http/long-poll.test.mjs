/**
 * Long-polled change feeds (issue 37): `wait=SECONDS` on /api/changes and /api/work/changes holds
 * a caught-up request until the feed has an event past its cursor or the wait ends.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { startServer, tempDir } from '../helpers/server.mjs';
import { caughtUpQuery } from '../helpers/reads.mjs';
import { startInProcess } from '../helpers/inprocess.mjs';
import { FEED_WAITERS_MAX, FEED_WAITERS_PER_AGENT_MAX, FEED_WAITER_RSS_BYTES_MAX, SERVER_TIMEOUTS } from '../../dist/constants.js';

/** Starts `GET path` and records when it was answered. */
function held(s, path, token) {
  const started = performance.now();
  const out = { answeredAt: null, started };
  out.done = s.get(path, token).then((res) => {
    out.answeredAt = performance.now();
    return res;
  });
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The resident memory of process `pid` in bytes (VmRSS of /proc/PID/status, Linux). */
function rssBytes(pid) {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(kb, 'VmRSS is in /proc/PID/status');
  return Number(kb[1]) * 1024;
}

/** The value of the gauge `forum_feed_waiters` on the metrics listener at `metricsUrl`. */
async function heldNow(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith('forum_feed_waiters '));
  assert.ok(line, 'forum_feed_waiters is reported');
  return Number(line.split(' ')[1]);
}

/** Resolves once the server holds exactly `n` feed requests (polls the gauge; fails after 25 s). */
async function untilHeld(metricsUrl, n) {
  const deadline = performance.now() + 25_000;
  for (;;) {
    const now = await heldNow(metricsUrl);
    if (now === n) return;
    assert.ok(performance.now() < deadline, `the server holds ${now} requests, not ${n}`);
    await sleep(100);
  }
}

test('a caught-up /api/changes request with wait is held until a message is committed, then answered with it', async (t) => {
  const s = await startServer(t);
  const a = await s.register('poster');
  const topic = (await s.post('/api/topics', { title: 'long poll' }, a.token)).body;
  const cursor = await caughtUpQuery(s, '/api/changes', a.token);
  const h = held(s, `/api/changes?${cursor}&wait=20`, a.token);
  await sleep(400);
  assert.equal(h.answeredAt, null, 'nothing new yet: the request is still held');
  const posted = await s.post('/api/messages', { topicId: topic.id, content: 'wake up', clientId: 'lp-1' }, a.token);
  const postedAt = performance.now();
  assert.equal(posted.status, 201);
  const res = await h.done;
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.events.map((e) => e.message?.id), [posted.body.id]);
  assert.equal(res.body.hasMore, false);
  assert.ok(h.answeredAt - postedAt < 1000, `answered ${Math.round(h.answeredAt - postedAt)} ms after the 201`);
});

test('a held request ends at its deadline with the usual empty caught-up page', async (t) => {
  const s = await startServer(t);
  const a = await s.register();
  const cursor = await caughtUpQuery(s, '/api/changes', a.token);
  const h = held(s, `/api/changes?${cursor}&wait=1`, a.token);
  const res = await h.done;
  const heldMs = h.answeredAt - h.started;
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.events, []);
  assert.equal(res.body.hasMore, false);
  assert.equal(res.body.pollAfterSeconds, 60);
  assert.ok(heldMs >= 950 && heldMs < 3000, `held ${Math.round(heldMs)} ms for wait=1`);
});

test('wait does not hold a request that has events to read, and is refused outside 1..60', async (t) => {
  const s = await startServer(t);
  const a = await s.register();
  const started = performance.now();
  const res = await s.get('/api/changes?after=0&wait=30', a.token);
  assert.equal(res.status, 200);
  assert.ok(res.body.events.length > 0, 'the commons room is an event');
  assert.ok(performance.now() - started < 5000);
  for (const bad of ['0', '61', '1.5', 'x']) {
    const r = await s.get(`/api/changes?after=0&wait=${bad}`, a.token);
    assert.equal(r.status, 400, bad);
    assert.match(r.body.error, /wait/);
  }
});

test('a held work-feed request is not answered by discussion events, only by a work revision', async (t) => {
  const s = await startServer(t);
  const a = await s.register();
  const topic = (await s.post('/api/topics', { title: 'x' }, a.token)).body;
  const cursor = await caughtUpQuery(s, '/api/work/changes', a.token);
  const h = held(s, `/api/work/changes?${cursor}&wait=20`, a.token);
  await s.post('/api/messages', { topicId: topic.id, content: 'not work', clientId: 'm1' }, a.token);
  await sleep(300);
  assert.equal(h.answeredAt, null, 'a message is no work event');
  const created = await s.post('/api/work', { clientId: 'w1', title: 'Task', description: 'd', acceptanceCriteria: 'a' }, a.token);
  assert.equal(created.status, 201);
  const res = await h.done;
  assert.deepEqual(res.body.events.map((e) => e.workItem.id), [created.body.id]);
});

test('a wrong cursor is refused at once even with wait (409), not held', async (t) => {
  const s = await startServer(t);
  const a = await s.register();
  const res = await s.get('/api/changes?after=1&originId=00000000-0000-4000-8000-000000000000&wait=30', a.token);
  assert.equal(res.status, 409);
});

test('a held request counts once against the change-read limit', async (t) => {
  const s = await startServer(t, { env: { FORUM_RATE_LIMITS: 'on' } });
  const a = await s.register();
  const first = await s.get('/api/changes?after=0&limit=100', a.token);
  const remaining = Number(first.headers['ratelimit-remaining']);
  assert.ok(Number.isInteger(remaining), 'RateLimit-Remaining is sent');
  const q = `after=${first.body.cursor.after}&originId=${first.body.cursor.originId}`;
  const res = await s.get(`/api/changes?${q}&wait=2`, a.token);
  assert.equal(res.status, 200);
  assert.equal(Number(res.headers['ratelimit-remaining']), remaining - 1);
});

test(`an agent holds at most ${FEED_WAITERS_PER_AGENT_MAX} feed requests; one more is answered at once`, async (t) => {
  const s = await startServer(t);
  const a = await s.register();
  const cursor = await caughtUpQuery(s, '/api/changes', a.token);
  const holds = Array.from({ length: FEED_WAITERS_PER_AGENT_MAX }, () => held(s, `/api/changes?${cursor}&wait=30`, a.token));
  await sleep(500);
  assert.ok(holds.every((h) => h.answeredAt === null));
  const started = performance.now();
  const extra = await s.get(`/api/changes?${cursor}&wait=30`, a.token);
  assert.equal(extra.status, 200);
  assert.deepEqual(extra.body.events, []);
  assert.ok(performance.now() - started < 5000, 'not held');
  // Another agent is not limited by the first one's requests.
  const b = await s.register('other');
  const other = held(s, `/api/changes?${cursor}&wait=30`, b.token);
  await sleep(300);
  assert.equal(other.answeredAt, null);
  // Shutdown answers every held request at once.
  const stopping = s.stop();
  const answers = await Promise.all([...holds, other].map((h) => h.done));
  assert.ok(answers.every((r) => r.status === 200 && r.body.events.length === 0));
  assert.equal(await stopping, 0);
});

test('the idle-connection sweep does not close a connection whose feed request is held', async (t) => {
  const timeouts = { ...SERVER_TIMEOUTS, socketIdleTimeoutMs: 300, checkIntervalMs: 100 };
  const s = await startInProcess(t, { timeouts });
  const a = await s.register();
  const cursor = await caughtUpQuery(s, '/api/changes', a.token);
  const res = await s.get(`/api/changes?${cursor}&wait=2`, a.token);
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.events, []);
});

test('the JavaScript and Python helpers follow a feed with wait: a new message arrives without the caught-up delay', async (t) => {
  const s = await startServer(t);
  const poster = await s.register('poster');
  const topic = (await s.post('/api/topics', { title: 'helpers' }, poster.token)).body;
  const dir = tempDir(t, 'forum-lp-client-');
  writeFileSync(join(dir, 'forum-client.mjs'), (await s.get('/api/client/forum-client.mjs')).body);
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);
  const { ForumClient } = await import(pathToFileURL(join(dir, 'forum-client.mjs')).href);
  const reader = await s.register('reader');
  const sleeps = [];
  const client = new ForumClient({ token: reader.token, sleep: async (ms) => { sleeps.push(ms); } });
  const controller = new AbortController();
  let arrived = null;
  const following = client.followFeed({
    wait: 10,
    signal: controller.signal,
    onEvents: (events) => {
      if (events.some((e) => e.kind === 'message' && e.message.content === 'live')) {
        arrived = performance.now();
        controller.abort();
      }
    },
  });
  await sleep(700);
  const postedAt = performance.now();
  assert.equal((await s.post('/api/messages', { topicId: topic.id, content: 'live', clientId: 'live-1' }, poster.token)).status, 201);
  await following;
  assert.ok(arrived !== null && arrived - postedAt < 2000, `the message arrived ${Math.round(arrived - postedAt)} ms after the post`);
  assert.ok(!sleeps.some((ms) => ms >= 60_000), `no caught-up delay was slept (${sleeps})`);

  // The Python helper: follow_feed(wait=...) delivers a message posted while it is held.
  writeFileSync(join(dir, 'follow.py'), `
import json, sys, threading, time
from forum_client import ForumClient
sleeps = []
client = ForumClient(token=sys.argv[1], sleep=lambda s: sleeps.append(s))
state = {"arrived": None}
def on_events(events, page):
    if any(e["kind"] == "message" and e["message"]["content"] == "python live" for e in events):
        state["arrived"] = time.monotonic()
def post():
    time.sleep(0.7)
    state["posted"] = time.monotonic()
    ForumClient(token=sys.argv[2]).post_message(sys.argv[3], "python live", client_id="py-live-1")
threading.Thread(target=post).start()
client.follow_feed(on_events, wait=10, should_stop=lambda: state["arrived"] is not None)
print(json.dumps({"latency": state["arrived"] - state["posted"], "sleeps": sleeps}))
`);
  const { stdout } = await promisify(execFile)('python3', [join(dir, 'follow.py'), reader.token, poster.token, topic.id], { cwd: dir, timeout: 30_000 });
  const out = JSON.parse(stdout);
  assert.ok(out.latency < 2, `python: the message arrived ${out.latency} s after the post`);
  assert.ok(!out.sleeps.some((x) => x >= 60), `python: no caught-up delay was slept (${out.sleeps})`);
});

test(`1,000 requests held by 50 agents cost at most FEED_WAITER_RSS_BYTES_MAX (${FEED_WAITER_RSS_BYTES_MAX} bytes) of RSS each, leave writes acknowledged, and are each answered by a commit that concerns them or at shutdown`, async (t) => {
  // Every client here is 127.0.0.1, so the per-address cap (a quarter of the connection cap,
  // there to keep one host from taking the listener) would refuse connections past 512: it is
  // lifted, as for a server behind a proxy. 50 agents from 50 addresses would each be far below it.
  const s = await startServer(t, { env: { FORUM_CONNECTIONS_PER_ADDRESS: '0', FORUM_METRICS_PORT: '0' } });
  const metricsUrl = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"'))).metricsUrl;
  const agents = [];
  for (let i = 0; i < 50; i++) agents.push(await s.register(`waiter-${i}`));
  assert.ok(50 * FEED_WAITERS_PER_AGENT_MAX <= FEED_WAITERS_MAX, 'the total bound leaves room for every agent\'s share');
  const topic = (await s.post('/api/topics', { title: 'many waiters' }, agents[0].token)).body;
  const perFeed = FEED_WAITERS_PER_AGENT_MAX / 2;
  // Two rounds of 1,000: the first on a fresh server (its growth includes one-time costs: code
  // compiled, heap grown), the second what holding costs once warm. Both stay within the bound.
  const round = (changes, work) =>
    agents.flatMap((a) => [
      ...Array.from({ length: perFeed }, () => held(s, `/api/changes?${changes}&wait=60`, a.token)),
      ...Array.from({ length: perFeed }, () => held(s, `/api/work/changes?${work}&wait=60`, a.token)),
    ]);
  let changes = await caughtUpQuery(s, '/api/changes', agents[0].token);
  let work = await caughtUpQuery(s, '/api/work/changes', agents[0].token);
  await sleep(500);
  const cold = rssBytes(s.proc.pid);
  const warm = round(changes, work);
  await untilHeld(metricsUrl, 1000);
  await sleep(300);
  const first = rssBytes(s.proc.pid) - cold;
  t.diagnostic(`first round: RSS grew ${(first / 1048576).toFixed(1)} MiB for 1,000 held requests: ${Math.round(first / 1000)} bytes each`);
  assert.ok(first <= 1000 * FEED_WAITER_RSS_BYTES_MAX, `RSS grew ${first} bytes, over ${1000 * FEED_WAITER_RSS_BYTES_MAX}`);
  await s.post('/api/messages', { topicId: topic.id, content: 'warm-up', clientId: 'warm-msg' }, agents[0].token);
  await s.post('/api/work', { clientId: 'warm-work', title: 'Warm-up', description: 'd', acceptanceCriteria: 'a' }, agents[0].token);
  assert.ok((await Promise.all(warm.map((h) => h.done))).every((r) => r.status === 200 && r.body.events.length === 1));
  await untilHeld(metricsUrl, 0);
  changes = await caughtUpQuery(s, '/api/changes', agents[0].token);
  work = await caughtUpQuery(s, '/api/work/changes', agents[0].token);
  await sleep(500);

  const before = rssBytes(s.proc.pid);
  const holds = round(changes, work);
  await untilHeld(metricsUrl, 1000);
  await sleep(300);
  const growth = rssBytes(s.proc.pid) - before;
  t.diagnostic(`second round: RSS grew ${(growth / 1048576).toFixed(1)} MiB for 1,000 held requests: ${Math.round(growth / 1000)} bytes each`);
  assert.ok(growth <= 1000 * FEED_WAITER_RSS_BYTES_MAX, `RSS grew ${growth} bytes, over ${1000 * FEED_WAITER_RSS_BYTES_MAX}`);
  assert.ok(holds.every((h) => h.answeredAt === null), 'nothing new yet: all 1,000 are held');

  // A write that concerns no feed (a registration is no feed event) is acknowledged, and wakes nobody.
  const startedAt = performance.now();
  await s.register('latecomer');
  assert.ok(performance.now() - startedAt < 5000, 'the write was acknowledged while 1,000 requests were held');
  await sleep(200);
  assert.equal(await heldNow(metricsUrl), 1000);

  // A message answers the 500 discussion requests with it, and only those.
  const posted = await s.post('/api/messages', { topicId: topic.id, content: 'for everyone', clientId: 'all-1' }, agents[1].token);
  assert.equal(posted.status, 201);
  const discussion = holds.filter((_, i) => i % FEED_WAITERS_PER_AGENT_MAX < perFeed);
  const answers = await Promise.all(discussion.map((h) => h.done));
  assert.ok(answers.every((r) => r.status === 200 && r.body.events.length === 1 && r.body.events[0].message.id === posted.body.id));
  await untilHeld(metricsUrl, 500);
  const workHolds = holds.filter((_, i) => i % FEED_WAITERS_PER_AGENT_MAX >= perFeed);
  assert.ok(workHolds.every((h) => h.answeredAt === null), 'a message does not answer a work-feed request');

  // Shutdown answers the other 500 with the usual empty page.
  const stopping = s.stop();
  const rest = await Promise.all(workHolds.map((h) => h.done));
  assert.ok(rest.every((r) => r.status === 200 && r.body.events.length === 0));
  assert.equal(await stopping, 0);
});

test('forum_feed_delivery_seconds_total reports the delivery rounds\' measured time: it grows when held requests are answered, not while they wait', async (t) => {
  const s = await startServer(t, { env: { FORUM_METRICS_PORT: '0' } });
  const metricsUrl = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"'))).metricsUrl;
  const deliverySeconds = async () => {
    const line = (await (await fetch(metricsUrl)).text()).split('\n').find((l) => l.startsWith('forum_feed_delivery_seconds_total '));
    assert.ok(line, 'forum_feed_delivery_seconds_total is reported');
    return Number(line.split(' ')[1]);
  };
  const a = await s.register('measured');
  const topic = (await s.post('/api/topics', { title: 'measured rounds' }, a.token)).body;
  const cursor = await caughtUpQuery(s, '/api/changes', a.token);
  const holds = Array.from({ length: FEED_WAITERS_PER_AGENT_MAX }, () => held(s, `/api/changes?${cursor}&wait=30`, a.token));
  await untilHeld(metricsUrl, FEED_WAITERS_PER_AGENT_MAX);
  const before = await deliverySeconds();
  await sleep(200);
  assert.equal(await deliverySeconds(), before, 'holding costs the rounds nothing');
  await s.post('/api/messages', { topicId: topic.id, content: 'wakes them', clientId: 'measured-1' }, a.token);
  assert.ok((await Promise.all(holds.map((h) => h.done))).every((r) => r.status === 200 && r.body.events.length === 1));
  const after = await deliverySeconds();
  assert.ok(after > before, `the round that answered ${FEED_WAITERS_PER_AGENT_MAX} requests measured ${after - before} s`);
  assert.ok(after - before < 5, 'in seconds, not ms');
});

for (const [how, command] of [
  ['disabled', 'disable'],
  ['whose token is rotated', 'rotate-token'],
]) {
  test(`a request held for an agent ${how} meanwhile is answered 401, not with the new content`, async (t) => {
    const s = await startServer(t, { env: { FORUM_METRICS_PORT: '0' } });
    const metricsUrl = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"'))).metricsUrl;
    const a = await s.register('soon-cut-off');
    const b = await s.register('poster');
    const topic = (await s.post('/api/topics', { title: command }, b.token)).body;
    const cursor = await caughtUpQuery(s, '/api/changes', a.token);
    const h = held(s, `/api/changes?${cursor}&wait=30`, a.token);
    await untilHeld(metricsUrl, 1);
    const cli = await s.cli('agents', command, a.id);
    assert.equal(cli.code, 0, cli.stderr);
    const posted = await s.post('/api/messages', { topicId: topic.id, content: `after the ${command}`, clientId: `lp-${command}` }, b.token);
    assert.equal(posted.status, 201);
    const res = await h.done;
    assert.equal(res.status, 401);
    assert.equal(res.body.code, 'UNAUTHORIZED');
    assert.equal(res.headers['www-authenticate'], 'Bearer');
    assert.ok(!JSON.stringify(res.body).includes(`after the ${command}`));
  });
}
