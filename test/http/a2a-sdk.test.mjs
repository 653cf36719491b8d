/**
 * Interop with the official A2A client (@a2a-js/sdk, pinned devDependency): it resolves our agent
 * card from the running server and sends every action through its HTTP+JSON (REST) transport with
 * a bearer token; the results must equal what the REST endpoints return.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AgentCard, Role } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, RestTransportFactory, createAuthenticatingFetchWithRetry } from '@a2a-js/sdk/client';
import { A2AError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { ROOT, startServer, tempDir } from '../helpers/server.mjs';

/** A client made by the SDK's factory from the card at `baseUrl`, sending `token`; records requests. */
async function sdkClient(baseUrl, token, sent = []) {
  const recording = (url, init) => {
    sent.push({ url: String(url), init });
    return fetch(url, init);
  };
  const fetchImpl = createAuthenticatingFetchWithRetry(recording, {
    headers: async () => ({ Authorization: `Bearer ${token}` }),
    shouldRetryWithHeaders: async () => undefined,
  });
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new RestTransportFactory({ fetchImpl })] });
  return new ClientFactory(options).createFromUrl(baseUrl);
}

/** The SDK's SendMessageRequest for one action. */
function request(action, input, messageId = randomUUID()) {
  return {
    tenant: '',
    message: {
      messageId,
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'data', value: { action, input } }, metadata: undefined, filename: '', mediaType: 'application/json' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

/** Sends one action through the SDK client; returns the data part {action, status, result}. */
async function act(client, action, input, messageId) {
  const reply = await client.sendMessage(request(action, input, messageId));
  assert.equal(reply.role, Role.ROLE_AGENT);
  assert.equal(reply.parts.length, 1);
  assert.equal(reply.parts[0].content.$case, 'data');
  const data = reply.parts[0].content.value;
  assert.equal(data.action, action);
  return data;
}

test('the official A2A SDK resolves the card and runs every action over HTTP+JSON; results equal REST', async (t) => {
  // Port 0 and no FORUM_PUBLIC_URL: the card's interface URL follows the bound address.
  const s = await startServer(t);
  const a = await s.register('sdk-creator');
  const b = await s.register('sdk-worker');

  // The card as the SDK's resolver reads it is a valid 1.0 AgentCard: the proto types keep every
  // field (proto3 JSON only drops the empty scope list we spell out).
  const card = await new DefaultAgentCardResolver().resolve(s.url);
  const raw = (await s.get('/.well-known/agent-card.json')).body;
  assert.deepEqual(AgentCard.toJSON(card), { ...raw, securityRequirements: [{ schemes: { bearer: {} } }] });
  assert.equal(card.supportedInterfaces[0].url, `${s.url}/a2a`);

  const sent = [];
  const alice = await sdkClient(s.url, a.token, sent);
  const bob = await sdkClient(s.url, b.token);

  const status = await act(alice, 'status', {});
  assert.equal(status.result.version, '0.4.9');
  assert.equal(status.result.registeredAgents, 2);
  // What the SDK put on the wire (the note): JSON, A2A-Version 1.0, bearer, data part with mediaType.
  const last = sent.at(-1);
  assert.equal(last.url, `${s.url}/a2a/message:send`);
  assert.equal(last.init.headers.get('content-type'), 'application/json');
  assert.equal(last.init.headers.get('a2a-version'), '1.0');
  assert.equal(last.init.headers.get('authorization'), `Bearer ${a.token}`);
  const wire = JSON.parse(last.init.body);
  assert.equal(wire.message.role, 'ROLE_USER');
  assert.deepEqual(wire.message.parts, [{ data: { action: 'status', input: {} }, mediaType: 'application/json' }]);

  const topic = await act(alice, 'topic', { title: 'SDK topic' });
  assert.equal(topic.status, 201);
  assert.deepEqual((await s.get('/api/topics', a.token)).body[0], topic.result);

  const messageId = randomUUID();
  const post = await act(alice, 'post', { topicId: topic.result.id, content: 'hello from the sdk' }, messageId);
  assert.equal(post.result.clientId, messageId);
  assert.deepEqual((await s.get(`/api/messages?messageId=${post.result.id}`, a.token)).body.messages, [post.result]);
  assert.deepEqual((await act(alice, 'post', { topicId: topic.result.id, content: 'hello from the sdk' }, messageId)).result, post.result, 'resending is a retry');

  const knowledge = await act(alice, 'knowledge', { title: 'SDK note', content: 'hello knowledge', category: 'opinion', topicId: topic.result.id });
  assert.equal(knowledge.status, 201);
  const read = await act(bob, 'read', { q: 'hello', limit: 10 });
  assert.deepEqual(read.result, (await s.get('/api/search?q=hello&limit=10', b.token)).body);
  assert.ok(read.result.knowledge.some((k) => k.id === knowledge.result.id));
  const changes = await act(bob, 'changes', { after: 0, limit: 10 });
  assert.deepEqual(changes.result, (await s.get('/api/changes?after=0&limit=10', b.token)).body);

  const created = await act(alice, 'work.create', { title: 'SDK work', description: 'Done through the SDK.', acceptanceCriteria: 'It exists.' });
  assert.equal(created.status, 201);
  const claimed = await act(bob, 'work.act', { action: 'claim', workItemId: created.result.id, expectedRevision: 1, leaseMinutes: 15 });
  assert.equal(claimed.result.state, 'claimed');
  const list = await act(bob, 'work.list', { id: created.result.id });
  assert.deepEqual(list.result, (await s.get(`/api/work?id=${created.result.id}`, b.token)).body);
  const history = await act(bob, 'work.history', { workItemId: created.result.id });
  assert.deepEqual(history.result, (await s.get(`/api/work/history?workItemId=${created.result.id}`, b.token)).body);
  const workChanges = await act(bob, 'work.changes', { after: 0 });
  assert.deepEqual(workChanges.result, (await s.get('/api/work/changes?after=0', b.token)).body);

  // The card says streaming is false, so the SDK falls back to message:send for a stream.
  const streamed = [];
  for await (const event of alice.sendMessageStream(request('status', {}))) streamed.push(event);
  assert.equal(streamed.length, 1);
  assert.equal(streamed[0].payload.value.parts[0].content.value.action, 'status');

  // Errors reach SDK users as the SDK's typed errors (A2A reasons) or as A2AError with the REST status.
  await assert.rejects(alice.getTask({ tenant: '', id: created.result.id }), (err) => err instanceof TaskNotFoundError && err.statusCode === 404);
  const tasks = await alice.listTasks({ tenant: '', contextId: '', pageToken: '' });
  assert.deepEqual(tasks.tasks, [], 'ListTasks is the empty page: this agent creates no tasks');
  assert.equal(tasks.totalSize, 0);
  assert.equal(tasks.nextPageToken, '');
  await assert.rejects(act(alice, 'topic', { title: '' }), (err) => err instanceof A2AError && err.statusCode === 400 && /title/.test(err.message));
  await assert.rejects(act(alice, 'nope', {}), (err) => err instanceof A2AError && /work\.act/.test(err.message));
  const stranger = await sdkClient(s.url, 'not-a-token');
  await assert.rejects(act(stranger, 'status', {}), (err) => err instanceof A2AError && err.statusCode === 401);
});

test('the A2A SDK example of /api/start.md runs as written: saved next to the installed SDK and run with FORUM_TOKEN, it posts through A2A', async (t) => {
  const s = await startServer(t);
  const a = await s.register('example-runner');
  const guide = (await s.get('/api/start.md')).body;
  // The text tells the reader which SDK version to install, where to save the block and how to run it.
  const intro = guide.indexOf('save this as `a2a-example.mjs`');
  assert.ok(intro > 0, 'start.md introduces the example');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const pinned = pkg.devDependencies['@a2a-js/sdk'];
  assert.ok(guide.slice(0, intro).endsWith(`\`npm install @a2a-js/sdk@${pinned}\`, `), 'the install command names the version this test runs against');
  assert.match(guide.slice(intro, intro + 200), /`FORUM_TOKEN=<your token> node a2a-example\.mjs`/);
  const block = /```js\n([\s\S]*?)```/.exec(guide.slice(intro));
  assert.ok(block, 'a js code block follows');
  const code = block[1];
  assert.ok(code.includes(`const BASE_URL = '${s.url}';`), 'the served guide carries this server\'s base URL');
  assert.ok(!code.includes(a.token));

  // The reader's folder after `npm install @a2a-js/sdk@<pinned>`: the repository's node_modules stands in for it.
  const dir = tempDir(t, 'forum-a2a-example-');
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'a2a-example.mjs'), code);
  const { stdout } = await promisify(execFile)(process.execPath, ['a2a-example.mjs'], { cwd: dir, env: { ...process.env, FORUM_TOKEN: a.token }, timeout: 30_000 });
  const lines = stdout.trim().split('\n');
  assert.equal(lines.length, 4, stdout);
  assert.equal(lines[0], `status 200 ${pkg.version}`);
  const [, topicId] = /^topic 201 (tp_\S+)$/.exec(lines[1]) ?? assert.fail(lines[1]);
  const [, messageId] = /^post 201 (msg_\S+)$/.exec(lines[2]) ?? assert.fail(lines[2]);
  assert.match(lines[3], /^read 200 \d+$/);
  // What it wrote is what REST shows, by the runner's agent.
  const topics = (await s.get('/api/topics', a.token)).body;
  assert.deepEqual(topics.map((x) => [x.id, x.title, x.authorId]), [[topicId, 'Hello over A2A', a.id]]);
  const messages = (await s.get(`/api/messages?messageId=${messageId}`, a.token)).body.messages;
  assert.equal(messages[0].content, 'First post through the A2A SDK.');
  assert.equal(messages[0].topicId, topicId);
});
