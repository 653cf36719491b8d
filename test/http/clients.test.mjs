/**
 * The client helpers served under /api/client/ (issue 6), end to end against a real server:
 * forum-client.mjs (always) and forum_client.py (when python3 is installed). Each test downloads
 * the served copy, so {{BASE_URL}} defaults to this server. The retry rules against scripted
 * failures are in test/unit/forum-client.test.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { sharedServer, tempDir, which } from '../helpers/server.mjs';

const execFileP = promisify(execFile);

/** One server for the whole file (every test uses its own agents and topics), on port 0. */
const startPublicServer = sharedServer();
const NO_PYTHON = which('python3') ? false : 'python3 is not installed on this machine: the Python client (forum_client.py) was NOT tested';

/** Imports the served copy of forum-client.mjs. */
async function servedJsClient(t, s) {
  const dir = tempDir(t, 'forum-client-');
  const file = join(dir, 'forum-client.mjs');
  writeFileSync(file, (await s.get('/api/client/forum-client.mjs')).body);
  return import(pathToFileURL(file).href);
}

/**
 * Asserts that every saved cursor covered only processed events: when a cursor {after} was
 * saved, every event the feed delivered with seq <= after had already been processed. A cursor
 * saved before the callback processed its page fails this.
 */
function assertSavedAfterProcessing(saves, processed) {
  assert.ok(saves.length >= 2, `several pages were saved (${saves.length})`);
  for (const [i, { cursor, processedSoFar }] of saves.entries()) {
    const covered = processed.filter((seq) => seq <= cursor.after);
    const missing = covered.filter((seq) => !processedSoFar.includes(seq));
    assert.deepEqual(missing, [], `save ${i} (after=${cursor.after}) happened before events ${missing} were processed`);
    const lastProcessed = Math.max(0, ...processedSoFar);
    assert.ok(lastProcessed <= cursor.after, `save ${i}: the cursor is not behind what was processed`);
    // No delivered event lies between the last processed one and the saved cursor.
    assert.ok(!processed.some((seq) => seq > lastProcessed && seq <= cursor.after), `save ${i}: after=${cursor.after} skips past an unprocessed event (last processed ${lastProcessed})`);
  }
}

test('the JavaScript client registers, posts, retries with the same clientId, settles an in-doubt write and follows the feed', async (t) => {
  const s = await startPublicServer();
  const { ForumClient, ForumError, newClientId } = await servedJsClient(t, s);

  // The served copy defaults to this server.
  const anonymous = new ForumClient();
  assert.equal((await anonymous.status()).version, '0.4.9');
  assert.equal((await anonymous.opportunities()).format, 'forum-opportunities-v1');
  await assert.rejects(anonymous.opportunityBrief('wrk_0000000001'), (err) => err instanceof ForumError && err.status === 404);

  const { client, registration } = await ForumClient.register({ name: 'js-client', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true });
  assert.match(registration.token, /^af_/);
  const topic = await client.createTopic({ title: 'Client topic' });
  const clientId = newClientId('msg');
  const first = await client.postMessage({ topicId: topic.id, content: 'hello from js', clientId });
  const retry = await client.postMessage({ topicId: topic.id, content: 'hello from js', clientId });
  assert.equal(retry.id, first.id, 'an identical retry returns the stored message');
  await assert.rejects(client.postMessage({ topicId: topic.id, content: 'changed', clientId }), (err) => err instanceof ForumError && err.status === 409);
  await assert.rejects(client.postMessage({ topicId: 'nope', content: 'x' }), (err) => err.status === 404);

  // In doubt: the request reaches the server but the connection "drops" before the answer.
  let dropped = 0;
  const lines = [];
  const flaky = new ForumClient({
    token: registration.token,
    log: (l) => lines.push(l),
    sleep: async () => {},
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      if (init.method === 'POST' && dropped++ === 0) {
        await res.text();
        throw new TypeError('fetch failed: socket hang up');
      }
      return res;
    },
  });
  const settled = await flaky.postMessage({ topicId: topic.id, content: 'sent once despite the drop' });
  assert.equal(settled.content, 'sent once despite the drop');
  assert.equal(dropped, 1, 'settled by the receipt, without a second POST');
  assert.ok(lines.some((l) => /receipt message .*recorded/.test(l)), 'the receipt was asked');
  const read = await client.messages({ topicId: topic.id });
  assert.deepEqual(read.messages.map((m) => m.content).sort(), ['hello from js', 'sent once despite the drop']);

  // Topics are not idempotent: in doubt, the client does not retry and says so.
  let topicPosts = 0;
  const noRetry = new ForumClient({
    token: registration.token,
    sleep: async () => {},
    fetch: async (url, init) => {
      if (init.method === 'POST') topicPosts++;
      const res = await fetch(url, init);
      if (init.method === 'POST') throw new TypeError('fetch failed');
      return res;
    },
  });
  await assert.rejects(noRetry.createTopic({ title: 'in doubt' }), (err) => err.inDoubt === true && err.status === 0 && err.kind === null);
  assert.equal(topicPosts, 1);

  // The follower, in small pages: each saved cursor covers only events the callback had finished.
  const processed = [];
  const saves = [];
  const follower = new ForumClient({ token: registration.token, sleep: async () => {} });
  const cursor = await follower.followFeed({
    limit: 3,
    onEvents: async (events) => {
      for (const e of events) {
        await new Promise((resolve) => setTimeout(resolve, 1)); // processing takes time
        processed.push(e.seq);
      }
    },
    saveCursor: (c) => { saves.push({ cursor: c, processedSoFar: [...processed] }); },
    stopWhenCaughtUp: true,
  });
  assert.ok(processed.length >= 4, 'the feed delivered the events');
  assert.deepEqual(saves.at(-1).cursor, cursor);
  assertSavedAfterProcessing(saves, processed);
  const seenMessage = [];
  await client.followFeed({ onEvents: (events) => { seenMessage.push(...events.filter((e) => e.kind === 'message' && e.message.id === first.id)); }, stopWhenCaughtUp: true });
  assert.equal(seenMessage.length, 1, 'the feed shows the message once');
});

test('the JavaScript client works the board, publishes knowledge, exports a verified topic, reads receipts and speaks A2A', async (t) => {
  const s = await startPublicServer();
  const { ForumClient, ForumError, newClientId } = await servedJsClient(t, s);
  const reg = { provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true };
  const { client: creator, registration: creatorReg } = await ForumClient.register({ name: 'js-creator', ...reg }, { sleep: async () => {} });
  const { client: worker, registration: workerReg } = await ForumClient.register({ name: 'js-worker', ...reg }, { sleep: async () => {} });

  // Work: create (idempotent per clientId), claim by another agent, submit, review, history.
  const workId = newClientId('work');
  const item = await creator.createWork({ clientId: workId, title: 'Summarize the retry thread', description: 'A short summary.', acceptanceCriteria: 'At most 200 words.', tags: ['e2e'] });
  assert.equal(item.state, 'open');
  assert.equal(item.revision, 1);
  assert.equal((await creator.createWork({ clientId: workId, title: 'Summarize the retry thread', description: 'A short summary.', acceptanceCriteria: 'At most 200 words.', tags: ['e2e'] })).id, item.id, 'an exact retry returns the original');
  await assert.rejects(creator.claim(item.id, 1), (err) => err instanceof ForumError && [403, 409].includes(err.status), 'a creator cannot claim its own work');
  const claimed = await worker.claim(item.id, 1, 15);
  assert.equal(claimed.state, 'claimed');
  assert.equal(claimed.assigneeId, workerReg.id);
  assert.equal(claimed.revision, 2);
  await assert.rejects(worker.claim(item.id, 1), (err) => err.status === 409, 'a stale revision is 409');
  const submitted = await worker.submit(item.id, 2, 'Summary: retry with the same clientId.', ['https://example.org/retry']);
  assert.equal(submitted.state, 'submitted');
  const completed = await creator.review(item.id, 3, 'accept', 'Thanks.');
  assert.equal(completed.state, 'completed');
  const history = await creator.workHistory({ workItemId: item.id });
  assert.deepEqual(history.revisions.map((r) => r.state), ['open', 'claimed', 'submitted', 'completed']);
  const listed = await worker.work({ id: item.id });
  assert.equal(listed.items[0].revision, 4);
  const workEvents = [];
  await worker.followFeed({ feed: 'work', onEvents: (events) => { workEvents.push(...events.filter((e) => e.workItem.id === item.id)); }, stopWhenCaughtUp: true });
  assert.deepEqual(workEvents.map((e) => e.workItem.revision), [1, 2, 3, 4], 'the work feed carries every revision');

  // Knowledge: publish with a source, revise, read with history.
  const topic = await creator.createTopic({ title: 'Exported topic' });
  const k1 = await creator.postKnowledge({ title: 'Poll delays', content: 'Wait pollAfterSeconds.', category: 'evidence', sources: ['https://example.org/spec'], topicId: topic.id });
  assert.equal(k1.revision, 1);
  const k2 = await creator.postKnowledge({ title: 'Poll delays', content: 'Wait pollAfterSeconds, plus jitter.', category: 'evidence', sources: ['https://example.org/spec'], topicId: topic.id, previousId: k1.id, expectedRevision: 1 });
  assert.equal(k2.id, k1.id);
  assert.equal(k2.revision, 2);
  await assert.rejects(worker.postKnowledge({ title: 'x', content: 'y', category: 'opinion', previousId: k1.id, expectedRevision: 2 }), (err) => err.status === 403);
  assert.deepEqual((await worker.knowledge({ id: k1.id, history: true })).knowledge.map((k) => k.revision).sort(), [1, 2]);

  // Messages and receipts: recorded carries the committed response; a never-sent id is unknown.
  const posts = [];
  for (const n of [1, 2, 3]) posts.push(await creator.postMessage({ topicId: topic.id, content: `export message ${n} — Grüße` }));
  const recorded = await creator.receipt('message', posts[0].clientId);
  assert.equal(recorded.outcome, 'recorded');
  assert.deepEqual(recorded.response.body, posts[0]);
  assert.deepEqual(await creator.settle('message', posts[0].clientId), posts[0]);
  const workReceipt = await creator.receipt('work', workId);
  assert.equal(workReceipt.outcome, 'recorded');
  assert.equal(workReceipt.response.body.id, item.id);
  assert.equal(workReceipt.response.body.revision, 1, 'the snapshot as committed then');
  assert.equal((await creator.receipt('message', 'never-sent-1')).outcome, 'unknown');
  assert.equal((await worker.receipt('message', posts[0].clientId)).outcome, 'unknown', 'only the caller\'s own namespace');

  // An in-doubt write whose receipt is unknown is not resent; the caller resends it deliberately with the SAME clientId.
  let sent = 0;
  const lost = new ForumClient({
    token: creatorReg.token,
    sleep: async () => {},
    fetch: async (url, init) => {
      if (init.method === 'POST') { sent++; throw new TypeError('fetch failed: connect ECONNRESET'); } // never reaches the server
      return fetch(url, init);
    },
  });
  const doubt = await lost.postMessage({ topicId: topic.id, content: 'in doubt' }).catch((e) => e);
  assert.equal(doubt.inDoubt, true, doubt.message);
  assert.equal(doubt.kind, 'message');
  assert.match(doubt.clientId, /^msg-/);
  assert.equal(sent, 1, 'unknown receipt: no automatic resend');
  const resent = await creator.postMessage({ topicId: topic.id, content: 'in doubt', clientId: doubt.clientId });
  assert.equal((await creator.postMessage({ topicId: topic.id, content: 'in doubt', clientId: doubt.clientId })).id, resent.id);
  assert.deepEqual(await creator.settle(doubt.kind, doubt.clientId), resent);

  // Export: every page verified, the pinned cursor followed across small pages.
  const records = [];
  let pages = 0;
  const final = await worker.exportTopic(topic.id, (recs, page) => { pages++; assert.equal(page.format, 'forum-exchange-v1'); records.push(...recs); }, { limit: 2 });
  assert.ok(pages >= 3, `several pages (${pages})`);
  assert.equal(final.topicId, topic.id);
  assert.deepEqual(records.map((r) => r.seq), [...records.map((r) => r.seq)].sort((a, b) => a - b));
  const kinds = new Set(records.map((r) => r.kind));
  assert.ok(kinds.has('topic') && kinds.has('message') && kinds.has('knowledge'), [...kinds].join());
  assert.deepEqual(records.filter((r) => r.kind === 'message').map((r) => r.record.id), [...posts.map((p) => p.id), resent.id]);
  assert.ok(records.some((r) => r.kind === 'message' && r.record.content === 'export message 1 — Grüße'), 'UTF-8 content verified byte-exactly');
  // A tampered page is refused before its records are used.
  const tampering = new ForumClient({
    token: workerReg.token,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      if (!new URL(url).pathname.endsWith('/api/exchange')) return res;
      const page = await res.json();
      page.records = page.records.map((r) => (r.kind === 'message' ? { ...r, canonicalJson: r.canonicalJson.replace('Grüße', 'Grusse') } : r));
      return new Response(JSON.stringify(page), { status: 200, headers: { 'content-type': 'application/json' } });
    },
  });
  let used = 0;
  await assert.rejects(tampering.exportTopic(topic.id, () => { used++; }), /sha256 mismatch/);
  assert.equal(used, 0);

  // A2A: status, an idempotent post (messageId = clientId), a read action, and a readable error.
  const status = await worker.a2aSend('status');
  assert.equal(status.message.role, 'ROLE_AGENT');
  assert.equal(status.message.parts[0].data.status, 200);
  assert.equal(status.message.parts[0].data.result.version, '0.4.9');
  const mid = newClientId('a2a');
  const a2aPost = await worker.a2aSend('post', { topicId: topic.id, content: 'Hello over A2A.' }, mid);
  const data = a2aPost.message.parts[0].data;
  assert.equal(data.action, 'post');
  assert.equal(data.status, 201);
  assert.equal(data.result.clientId, mid);
  assert.equal(data.result.content, 'Hello over A2A.');
  assert.equal((await worker.a2aSend('post', { topicId: topic.id, content: 'Hello over A2A.' }, mid)).message.parts[0].data.result.id, data.result.id, 'resending the same A2A message is idempotent');
  assert.equal((await worker.receipt('message', mid)).outcome, 'recorded');
  const a2aList = await worker.a2aSend('work.list', { id: item.id });
  assert.equal(a2aList.message.parts[0].data.result.items[0].state, 'completed');
  const bad = await worker.a2aSend('nope', {}).catch((e) => e);
  assert.ok(bad instanceof ForumError);
  assert.equal(bad.status, 400);
  assert.doesNotMatch(bad.message, /object Object/);
  assert.match(bad.message, /HTTP 400: .*unknown action "nope"/);
  assert.equal(bad.body.error.code, 400);
  const invalid = await worker.a2aSend('post', { topicId: topic.id }).catch((e) => e);
  assert.equal(invalid.status, 400);
  assert.match(invalid.message, /content/, invalid.message);
});

test('the Python client registers, posts, retries with the same clientId and settles an in-doubt write', { skip: NO_PYTHON }, async (t) => {
  const s = await startPublicServer();
  const dir = tempDir(t, 'forum-py-');
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);
  writeFileSync(join(dir, 'drive.py'), `
import json, sys
from forum_client import ForumClient, ForumError, new_client_id

out = {}
anonymous = ForumClient()
out["version"] = anonymous.status()["version"]
client, reg = ForumClient.register(name="py-client", provider="test-lab", accepts_public_archive=True, operator_authorized=True)
topic = client.create_topic("Python topic")
cid = new_client_id("msg")
first = client.post_message(topic["id"], "hello from python", client_id=cid)
again = client.post_message(topic["id"], "hello from python", client_id=cid)
out["same"] = first["id"] == again["id"]
try:
    client.post_message(topic["id"], "changed", client_id=cid)
except ForumError as e:
    out["conflict"] = e.status

# In doubt: the first POST reaches the server, then the "connection drops".
flaky = ForumClient(token=reg["token"], sleep=lambda s: None)
real_once = flaky._once
state = {"drops": 0, "receipts": 0}
def once(method, url, *rest):
    if "/api/receipts" in url:
        state["receipts"] += 1
    result = real_once(method, url, *rest)
    if method == "POST" and state["drops"] == 0:
        state["drops"] += 1
        raise ForumError("connection reset", 0)
    return result
flaky._once = once
settled = flaky.post_message(topic["id"], "sent once despite the drop")
out["settled"] = settled["content"]
out["receipts"] = state["receipts"]
msgs = client.messages(topic_id=topic["id"])["messages"]
out["contents"] = sorted(m["content"] for m in msgs)

# Redirects are refused, never followed with the token.
try:
    ForumClient(base_url=sys.argv[1], token="secret").agents()
except ForumError as e:
    out["redirect"] = e.status

processed = []
saves = []
def on_events(events, page):
    for e in events:
        processed.append(e["seq"])
feed_reader = ForumClient(token=reg["token"], sleep=lambda s: None)
feed_reader.follow_feed(on_events, save_cursor=lambda c: saves.append({"after": c["after"], "processedSoFar": list(processed)}),
                        limit=3, stop_when_caught_up=True)
out["processed"] = processed
out["saves"] = saves
events = []
client.follow_feed(lambda ev, page: events.extend(ev), stop_when_caught_up=True)
out["feedHasMessage"] = any(e["kind"] == "message" and e["message"]["id"] == first["id"] for e in events)
print(json.dumps(out))
`);
  // A server that redirects everything elsewhere, and records whether a token ever arrives there.
  let tokenLeaked = false;
  const redirector = createHttpServer((req, res) => {
    if (req.url.startsWith('/landing')) tokenLeaked ||= Boolean(req.headers.authorization);
    res.writeHead(302, { Location: '/landing' }).end();
  });
  await new Promise((resolve) => redirector.listen(0, '127.0.0.1', resolve));
  t.after(() => redirector.close());

  const { stdout } = await execFileP('python3', [join(dir, 'drive.py'), `http://127.0.0.1:${redirector.address().port}`], { cwd: dir, timeout: 30_000 });
  const out = JSON.parse(stdout);
  assert.equal(out.version, '0.4.9');
  assert.equal(out.same, true, 'an identical retry returns the stored message');
  assert.equal(out.conflict, 409);
  assert.equal(out.settled, 'sent once despite the drop');
  assert.equal(out.receipts, 1, 'the receipt was asked once and settled the write');
  assert.deepEqual(out.contents, ['hello from python', 'sent once despite the drop']);
  assert.equal(out.redirect, 302);
  assert.equal(tokenLeaked, false, 'the token never reached the redirect target');
  assert.equal(out.feedHasMessage, true);
  assertSavedAfterProcessing(out.saves.map((x) => ({ cursor: { after: x.after }, processedSoFar: x.processedSoFar })), out.processed);
});

test('the Python client takes snake_case keyword arguments on every method, refuses camelCase, and its errors carry code, status and request_id', { skip: NO_PYTHON }, async (t) => {
  const s = await startPublicServer();
  const dir = tempDir(t, 'forum-py-');
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);
  writeFileSync(join(dir, 'drive.py'), `
import inspect, json
from forum_client import ForumClient, ForumError

out = {}
alice, reg = ForumClient.register(name="py-snake", provider="test-lab", accepts_public_archive=True, operator_authorized=True, sleep=lambda s: None)
bob, bob_reg = ForumClient.register(name="py-snake-2", provider="test-lab", accepts_public_archive=True, operator_authorized=True, sleep=lambda s: None)
out["me"] = alice.me()["id"] == reg["id"]
topic = alice.create_topic("Snake case", room_id="commons")
first = alice.post_message(topic_id=topic["id"], content="snake first")
reply = bob.post_message(topic_id=topic["id"], content="snake reply", reply_to=first["id"])
out["byTopic"] = [m["id"] for m in alice.messages(topic_id=topic["id"], limit=10)["messages"]] == [reply["id"], first["id"]]
out["byReply"] = [m["id"] for m in alice.messages(reply_to=first["id"])["messages"]] == [reply["id"]]
out["byAgent"] = [m["id"] for m in alice.messages(agent_id=bob_reg["id"])["messages"]] == [reply["id"]]
out["byMessage"] = [m["id"] for m in alice.messages(message_id=first["id"])["messages"]] == [first["id"]]
out["search"] = [m["id"] for m in bob.search(q="snake", agent_id=reg["id"], topic_id=topic["id"])["messages"]] == [first["id"]]
k = alice.post_knowledge("Snake", "Case.", "opinion", topic_id=topic["id"])
out["knowledge"] = [x["id"] for x in bob.knowledge(agent_id=reg["id"], history=True)["knowledge"]] == [k["id"]]
item = alice.create_work("Snake work", "Do it.", "Done.", topic_id=topic["id"])
claimed = bob.claim(item["id"], item["revision"], lease_minutes=10)
out["work"] = [w["id"] for w in alice.work(author_id=reg["id"], assignee_id=bob_reg["id"], available=False)["items"]] == [item["id"]]
out["history"] = len(alice.work_history(item["id"], after_revision=1)["revisions"]) == 1
try:
    alice.messages(topicId=topic["id"])
    out["camel"] = "accepted"
except TypeError as e:
    out["camel"] = "TypeError"
try:
    bob.submit(item["id"], 1, "stale revision")
except ForumError as e:
    out["error"] = {"status": e.status, "code": e.code, "requestId": bool(e.request_id and len(e.request_id) >= 8)}
try:
    alice.a2a_send("nope", {})
except ForumError as e:
    out["a2aCode"] = e.code
try:
    ForumClient(token="not-a-token").agents()
except ForumError as e:
    out["unauthorized"] = [e.status, e.code]
public = [m for n, m in inspect.getmembers(ForumClient, inspect.isfunction) if not n.startswith("_")]
out["unhinted"] = sorted(m.__name__ for m in public if "return" not in m.__annotations__)
print(json.dumps(out))
`);
  const { stdout } = await execFileP('python3', [join(dir, 'drive.py')], { cwd: dir, timeout: 60_000 });
  const out = JSON.parse(stdout);
  assert.deepEqual(out, {
    me: true, byTopic: true, byReply: true, byAgent: true, byMessage: true, search: true, knowledge: true, work: true, history: true,
    camel: 'TypeError',
    error: { status: 409, code: 'REVISION_CONFLICT', requestId: true },
    a2aCode: 'VALIDATION',
    unauthorized: [401, 'UNAUTHORIZED'],
    unhinted: [],
  });
});

test('the Python client works the board, publishes knowledge, exports a verified topic, reads receipts and speaks A2A', { skip: NO_PYTHON }, async (t) => {
  const s = await startPublicServer();
  const dir = tempDir(t, 'forum-py-');
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);
  writeFileSync(join(dir, 'drive.py'), `
import json
from forum_client import ForumClient, ForumError, new_client_id

def failure(call):
    try:
        call()
    except ForumError as e:
        return {"status": e.status, "in_doubt": e.in_doubt, "kind": e.kind, "client_id": e.client_id, "message": str(e)}
    return None

out = {}
creator, creator_reg = ForumClient.register(name="py-creator", provider="test-lab", accepts_public_archive=True, operator_authorized=True, sleep=lambda s: None)
worker, worker_reg = ForumClient.register(name="py-worker", provider="test-lab", accepts_public_archive=True, operator_authorized=True, sleep=lambda s: None)

wid = new_client_id("work")
item = creator.create_work("Summarize", "A short summary.", "At most 200 words.", tags=["e2e"], client_id=wid)
again = creator.create_work("Summarize", "A short summary.", "At most 200 words.", tags=["e2e"], client_id=wid)
claimed = worker.claim(item["id"], 1, lease_minutes=15)
out["work"] = {"same": again["id"] == item["id"], "claimed": claimed["state"], "assignee": claimed["assigneeId"] == worker_reg["id"],
               "revision": claimed["revision"], "stale": failure(lambda: worker.claim(item["id"], 1))["status"],
               "history": [r["state"] for r in creator.work_history(item["id"])["revisions"]],
               "receipt": creator.receipt("work", wid)["response"]["body"]["id"] == item["id"]}

topic = creator.create_topic("Python export")
k1 = creator.post_knowledge("Poll delays", "Wait pollAfterSeconds.", "evidence", sources=["https://example.org/spec"], topic_id=topic["id"])
k2 = creator.post_knowledge("Poll delays", "Wait, plus jitter.", "evidence", sources=["https://example.org/spec"], topic_id=topic["id"],
                            previous_id=k1["id"], expected_revision=1)
out["knowledge"] = {"sameId": k1["id"] == k2["id"], "revision": k2["revision"],
                    "history": sorted(k["revision"] for k in worker.knowledge(id=k1["id"], history=True)["knowledge"])}

posts = [creator.post_message(topic["id"], "export message %d \\u2014 Gr\\u00fc\\u00dfe" % n) for n in (1, 2, 3)]
out["receipts"] = {"recorded": creator.receipt("message", posts[0]["clientId"])["response"]["body"] == posts[0],
                   "settle": creator.settle("message", posts[0]["clientId"]) == posts[0],
                   "unknown": creator.receipt("message", "never-sent-1")["outcome"]}

# Unknown receipt after a lost POST: in doubt, not resent; then resent deliberately with the same clientId.
lost = ForumClient(token=creator_reg["token"], sleep=lambda s: None)
real_once = lost._once
sent = {"posts": 0}
def once(method, url, *rest):
    if method == "POST":
        sent["posts"] += 1
        raise ForumError("connection reset before sending", 0)
    return real_once(method, url, *rest)
lost._once = once
doubt = failure(lambda: lost.post_message(topic["id"], "in doubt"))
resent = creator.post_message(topic["id"], "in doubt", client_id=doubt["client_id"])
out["doubt"] = dict(doubt, posts=sent["posts"], resentOnce=creator.post_message(topic["id"], "in doubt", client_id=doubt["client_id"])["id"] == resent["id"])

pages = []
records = []
def on_records(recs, page):
    pages.append(page["format"])
    records.extend(recs)
final = worker.export_topic(topic["id"], on_records, limit=2)
out["export"] = {"pages": len(pages), "topicId": final["topicId"] == topic["id"], "kinds": sorted(set(r["kind"] for r in records)),
                 "messages": [r["record"]["id"] for r in records if r["kind"] == "message"] == [p["id"] for p in posts] + [resent["id"]],
                 "utf8": any(r["kind"] == "message" and r["record"]["content"] == "export message 1 \\u2014 Gr\\u00fc\\u00dfe" for r in records)}

status = worker.a2a_send("status")["message"]["parts"][0]["data"]
mid = new_client_id("a2a")
post = worker.a2a_send("post", {"topicId": topic["id"], "content": "Hello over A2A."}, message_id=mid)["message"]["parts"][0]["data"]
repeat = worker.a2a_send("post", {"topicId": topic["id"], "content": "Hello over A2A."}, message_id=mid)["message"]["parts"][0]["data"]
out["a2a"] = {"status": status["status"], "version": status["result"]["version"], "postStatus": post["status"],
              "clientId": post["result"]["clientId"] == mid, "idempotent": repeat["result"]["id"] == post["result"]["id"],
              "receipt": worker.receipt("message", mid)["outcome"], "error": failure(lambda: worker.a2a_send("nope", {}))}
print(json.dumps(out))
`);
  const { stdout } = await execFileP('python3', [join(dir, 'drive.py')], { cwd: dir, timeout: 60_000 });
  const out = JSON.parse(stdout);
  assert.deepEqual(out.work, { same: true, claimed: 'claimed', assignee: true, revision: 2, stale: 409, history: ['open', 'claimed'], receipt: true });
  assert.deepEqual(out.knowledge, { sameId: true, revision: 2, history: [1, 2] });
  assert.deepEqual(out.receipts, { recorded: true, settle: true, unknown: 'unknown' });
  assert.equal(out.doubt.in_doubt, true, out.doubt.message);
  assert.equal(out.doubt.kind, 'message');
  assert.match(out.doubt.client_id, /^msg-/);
  assert.equal(out.doubt.posts, 1, 'unknown receipt: no automatic resend');
  assert.equal(out.doubt.resentOnce, true);
  assert.ok(out.export.pages >= 3, `several export pages (${out.export.pages})`);
  assert.deepEqual(out.export, { ...out.export, topicId: true, kinds: ['knowledge', 'message', 'topic'], messages: true, utf8: true });
  assert.deepEqual(out.a2a, { ...out.a2a, status: 200, version: '0.4.9', postStatus: 201, clientId: true, idempotent: true, receipt: 'recorded' });
  assert.equal(out.a2a.error.status, 400);
  assert.match(out.a2a.error.message, /HTTP 400: .*unknown action "nope"/);
});

test('the JavaScript and Python helpers fail fast on a 429 whose Retry-After is longer than they wait, saying how long', { skip: NO_PYTHON }, async (t) => {
  const { startServer } = await import('../helpers/server.mjs');
  const s = await startServer(t, { env: { FORUM_RATE_LIMITS: 'on' } });
  const { ForumClient } = await servedJsClient(t, s);
  const input = { name: 'burst', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true };
  for (let i = 0; i < 5; i++) await ForumClient.register(input);
  const sleeps = [];
  const started = performance.now();
  await assert.rejects(ForumClient.register(input, { sleep: async (ms) => { sleeps.push(ms); } }), (err) => {
    assert.equal(err.status, 429);
    assert.equal(err.inDoubt, false);
    assert.ok(err.retryAfterSeconds > 60, `Retry-After ${err.retryAfterSeconds}`);
    assert.match(err.message, /asks to wait \d+ s \(about \d+ min\)/);
    return true;
  });
  assert.deepEqual(sleeps, [], 'nothing was waited for');
  assert.ok(performance.now() - started < 5000);

  const dir = tempDir(t, 'forum-py-429-');
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);
  writeFileSync(join(dir, 'register.py'), `
import json
from forum_client import ForumClient, ForumError
sleeps = []
try:
    ForumClient.register(name="burst", provider="test-lab", accepts_public_archive=True, operator_authorized=True,
                         sleep=lambda s: sleeps.append(s))
    print(json.dumps({"registered": True}))
except ForumError as e:
    print(json.dumps({"status": e.status, "message": str(e), "retryAfter": e.retry_after_seconds, "sleeps": sleeps}))
`);
  const { stdout } = await execFileP('python3', [join(dir, 'register.py')], { cwd: dir, timeout: 30_000 });
  const out = JSON.parse(stdout);
  assert.equal(out.status, 429);
  assert.ok(out.retryAfter > 60);
  assert.match(out.message, /asks to wait \d+ s \(about \d+ min\)/);
  assert.deepEqual(out.sleeps, []);
});

test('the JavaScript helper\'s errors carry the stable code and the request id, for REST and A2A errors', async (t) => {
  const s = await startPublicServer();
  const { ForumClient } = await servedJsClient(t, s);
  const { client } = await ForumClient.register({ name: 'codes', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true });
  const topic = await client.createTopic({ title: 'codes' });
  await client.postMessage({ topicId: topic.id, content: 'once', clientId: 'codes-1' });
  await assert.rejects(client.postMessage({ topicId: topic.id, content: 'changed', clientId: 'codes-1' }), (err) => {
    assert.equal(err.status, 409);
    assert.equal(err.code, 'IDEMPOTENCY_CONFLICT');
    assert.match(err.requestId ?? '', /^[A-Za-z0-9._:-]+$/, 'the X-Request-Id of the answer');
    return true;
  });
  await assert.rejects(client.request('GET', '/api/messages', { query: { limit: 0 } }), (err) => err.status === 400 && err.code === 'VALIDATION' && typeof err.requestId === 'string');
  // requestId is the answer's X-Request-Id: one the caller sent is kept by the server and comes
  // back on the error; the body is the documented {error, code} (requestId only on a 5xx).
  await assert.rejects(client.request('GET', '/api/messages', { query: { limit: 0 }, headers: { 'x-request-id': 'codes-req-0001' } }), (err) => {
    assert.equal(err.requestId, 'codes-req-0001');
    assert.deepEqual(Object.keys(err.body).sort(), ['code', 'error']);
    assert.equal(err.body.code, err.code);
    assert.match(err.message, /HTTP 400: /);
    return true;
  });
  await assert.rejects(client.a2aSend('nope', {}), (err) => {
    assert.equal(err.status, 400);
    assert.equal(typeof err.code, 'string', 'the A2A ErrorInfo reason');
    assert.ok(err.code.length > 0);
    return true;
  });
  await assert.rejects(new ForumClient({ baseUrl: 'http://127.0.0.1:9' }).status(), (err) => err.status === 0 && err.code === null && err.requestId === null);
});
