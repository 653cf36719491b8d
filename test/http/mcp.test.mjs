/**
 * The MCP server (issue 19), black-box: the built forum server as a real process, `node
 * dist/mcp.js` spawned by the MCP SDK's own StdioClientTransport, and the SDK's Client calling
 * its tools. Between the MCP server and the forum sits a small forwarding proxy that can refuse
 * one request with 429 (the real server's limits are covered by limits.test.mjs; waiting out its
 * one-minute window here would take a minute) or drop one response after the forum answered it
 * (an in-doubt write).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { loopbackProxy } from '../helpers/prefix-proxy.mjs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ROOT, register, startServer } from '../helpers/server.mjs';

const MCP_JS = join(ROOT, 'dist', 'mcp.js');
const addFormats = addFormatsModule.default ?? addFormatsModule;

/**
 * A forwarding proxy to `target`. `refuseOnce(method, path)` answers the next matching request
 * itself with 429 and Retry-After: 1; `dropOnce(method, path)` forwards the next matching request
 * and destroys the connection once the forum has answered; `loseOnce(method, path)` destroys the
 * connection of the next matching request without forwarding it. `seen` lists "METHOD /path" of every
 * request forwarded.
 */
async function faultProxy(t, target) {
  const faults = [];
  const seen = [];
  const url = await loopbackProxy(t, {
    upstream: (req) => `${target}${req.url}`,
    intercept: (req, res, relay) => {
      const path = req.url.split('?')[0];
      const i = faults.findIndex((f) => f.method === req.method && f.path === path);
      const fault = i >= 0 ? faults.splice(i, 1)[0] : null;
      if (fault?.type === 'lose') {
        req.resume();
        return req.on('end', () => res.socket.destroy());
      }
      if (fault?.type === 'refuse') {
        req.resume();
        return res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify({ error: 'rate limit: try again in 1 s' }));
      }
      seen.push(`${req.method} ${path}`);
      if (fault?.type !== 'drop') return relay();
      relay((r) => {
        r.resume();
        r.on('end', () => res.socket.destroy());
      });
    },
  });
  return {
    url,
    seen,
    refuseOnce: (method, path) => faults.push({ type: 'refuse', method, path }),
    dropOnce: (method, path) => faults.push({ type: 'drop', method, path }),
    loseOnce: (method, path) => faults.push({ type: 'lose', method, path }),
  };
}

/** Spawns `node dist/mcp.js` with `env` (and `args`) and connects the SDK's Client over stdio; closed after the test. */
async function mcp(t, env, args = []) {
  // NODE_V8_COVERAGE: under c8 (npm test) the MCP process reports its coverage too.
  const inherited = Object.fromEntries(['PATH', 'NODE_V8_COVERAGE'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
  const transport = new StdioClientTransport({ command: process.execPath, args: [MCP_JS, ...args], env: { ...inherited, ...env }, stderr: 'pipe' });
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

/** Calls a tool and asserts it succeeded; resolves to its structuredContent. */
async function call(client, name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name} failed: ${r.content?.[0]?.text}`);
  assert.equal(r.content[0].type, 'text');
  assert.ok(r.content[0].text.length > 0, `${name} has a text summary`);
  return r.structuredContent;
}

/** A forum server, a proxy in front of it, a registered agent and its MCP session. */
async function setup(t) {
  const server = await startServer(t);
  const proxy = await faultProxy(t, server.url);
  const agent = await register(server, 'mcp-alice');
  const alice = await mcp(t, { FORUM_URL: proxy.url, FORUM_TOKEN: agent.token });
  return { server, proxy, agent, alice };
}

test('the MCP server lists a described tool for every forum action, with input schemas that compile as JSON Schema', async (t) => {
  const { alice } = await setup(t);
  const { tools } = await alice.listTools();
  const names = tools.map((x) => x.name);
  for (const n of ['forum_status', 'forum_register', 'forum_search', 'forum_read_messages', 'forum_changes', 'forum_open_topic', 'forum_post_message',
    'knowledge_publish', 'knowledge_revise', 'knowledge_list', 'work_list', 'work_history', 'work_changes', 'work_create', 'work_claim', 'work_renew',
    'work_release', 'work_submit', 'work_review', 'work_cancel', 'forum_receipt', 'forum_opportunities']) {
    assert.ok(names.includes(n), `tool ${n} is listed`);
  }
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object', `${tool.name}: inputSchema is an object schema`);
    assert.ok(tool.description.length >= 60, `${tool.name}: description says what it does`);
    assert.doesNotThrow(() => ajv.compile(tool.inputSchema), `${tool.name}: inputSchema compiles in strict mode`);
    assert.ok(!JSON.stringify(tool.inputSchema).includes('$ref'), `${tool.name}: inputSchema is self-contained`);
  }
  const post = tools.find((x) => x.name === 'forum_post_message').inputSchema;
  assert.deepEqual(post.required, ['topicId', 'content'], 'clientId is optional: minted by the MCP server');
  assert.equal(post.properties.content.maxLength, 8000, 'limits come from schemas/MessageInput.json');

  const { resources } = await alice.listResources();
  assert.deepEqual(resources.map((r) => r.uri).sort(), ['forum://guides/exchange.md', 'forum://guides/retry-budget.md', 'forum://guides/start.md', 'forum://openapi.json']);
  const start = await alice.readResource({ uri: 'forum://guides/start.md' });
  assert.match(start.contents[0].text, /register/i);
  const openapi = JSON.parse((await alice.readResource({ uri: 'forum://openapi.json' })).contents[0].text);
  assert.ok(openapi.paths['/api/messages'], 'the OpenAPI document lists /api/messages');
});

test('through MCP tools an agent posts, finds it by search, follows the change feed from a cursor and takes work through review', async (t) => {
  const { proxy, alice } = await setup(t);
  const status = await call(alice, 'forum_status');
  assert.equal(status.writeStop, false);

  const topic = await call(alice, 'forum_open_topic', { title: 'MCP flow' });
  const first = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'hello from mcp-first' });
  assert.equal(first.topicId, topic.id);
  assert.ok(first.clientId, 'a clientId was minted');

  const found = await call(alice, 'forum_search', { q: 'mcp-first' });
  assert.deepEqual(found.messages.map((m) => m.id), [first.id]);

  const page1 = await call(alice, 'forum_changes', {});
  assert.ok(JSON.stringify(page1.events).includes(first.id), 'the first page has the message');
  const cursor = { after: page1.cursor.after, originId: page1.cursor.originId };
  const reply = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'second, a reply', replyTo: first.id });
  const r = await alice.callTool({ name: 'forum_changes', arguments: cursor });
  assert.match(r.content[0].text, /"after":\d+/, 'the summary gives the cursor of the next call');
  const { events } = r.structuredContent;
  assert.ok(events.every((e) => e.seq > cursor.after), 'the page starts after the cursor');
  assert.equal(events.length, 1, 'from the cursor only the new message arrives');
  assert.ok(JSON.stringify(events[0]).includes(reply.id));

  // A second agent joins through the register tool (no FORUM_TOKEN) and takes the work.
  const bob = await mcp(t, { FORUM_URL: proxy.url });
  const noToken = await bob.callTool({ name: 'forum_search', arguments: { q: 'x' } });
  assert.ok(noToken.isError);
  assert.match(noToken.content[0].text, /forum_register/);
  const reg = await call(bob, 'forum_register', { name: 'mcp-bob', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true });
  assert.ok(reg.token && reg.id);
  const twice = await bob.callTool({ name: 'forum_register', arguments: { name: 'mcp-bob-2', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true } });
  assert.ok(twice.isError, 'a session registers at most once');
  assert.match(twice.content[0].text, /already has a token/);

  const work = await call(alice, 'work_create', { title: 'Compare two papers', description: 'Read both.', acceptanceCriteria: 'One page.', tags: ['research'] });
  assert.equal(work.state, 'open');
  const own = await alice.callTool({ name: 'work_claim', arguments: { workItemId: work.id, expectedRevision: work.revision } });
  assert.ok(own.isError, 'the creator cannot claim their own work');
  assert.match(own.content[0].text, /403/);
  const claimed = await call(bob, 'work_claim', { workItemId: work.id, expectedRevision: work.revision });
  assert.equal(claimed.state, 'claimed');
  assert.equal(claimed.assigneeId, reg.id);
  const stale = await bob.callTool({ name: 'work_submit', arguments: { workItemId: work.id, expectedRevision: work.revision, content: 'done' } });
  assert.ok(stale.isError);
  assert.match(stale.content[0].text, /Conflict.*reread/is, 'a stale revision says to reread and retry');
  const submitted = await call(bob, 'work_submit', { workItemId: work.id, expectedRevision: claimed.revision, content: 'The comparison is in the topic.' });
  assert.equal(submitted.state, 'submitted');
  const reviewed = await call(alice, 'work_review', { workItemId: work.id, expectedRevision: submitted.revision, decision: 'accept', feedback: 'Good.' });
  assert.equal(reviewed.state, 'completed');
  const history = await call(alice, 'work_history', { workItemId: work.id });
  assert.deepEqual(history.revisions.map((w) => w.state), ['open', 'claimed', 'submitted', 'completed']);
  const feed = await call(bob, 'work_changes', {});
  assert.ok(feed.events.length >= 4);

  const k = await call(alice, 'knowledge_publish', { title: 'Note', content: 'A hypothesis.', category: 'hypothesis' });
  const k2 = await call(alice, 'knowledge_revise', { previousId: k.id, expectedRevision: k.revision, title: 'Note', content: 'Revised.', category: 'hypothesis' });
  assert.equal(k2.revision, 2);

  const bad = await alice.callTool({ name: 'forum_post_message', arguments: { topicId: topic.id, content: '   ' } });
  assert.ok(bad.isError);
  assert.match(bad.content[0].text, /Invalid input.*content/s, 'the error names the field to fix');
});

test('a post whose response is lost is settled by its receipt, and retried through the tool with its clientId it lands once', async (t) => {
  const { proxy, alice } = await setup(t);
  const topic = await call(alice, 'forum_open_topic', { title: 'In doubt' });
  proxy.dropOnce('POST', '/api/messages');
  const m = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'lost-response-post', clientId: 'mcp-doubt-1' });
  assert.equal(m.clientId, 'mcp-doubt-1');
  assert.equal(proxy.seen.filter((s) => s === 'POST /api/messages').length, 1, 'the write was not resent');
  assert.ok(proxy.seen.includes('GET /api/receipts'), 'the receipt was asked');
  const again = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'lost-response-post', clientId: 'mcp-doubt-1' });
  assert.equal(again.id, m.id, 'the retry returns the same message');
  const found = await call(alice, 'forum_search', { q: 'lost-response-post' });
  assert.equal(found.messages.length, 1, 'the message exists once');
  const receipt = await call(alice, 'forum_receipt', { kind: 'message', clientId: 'mcp-doubt-1' });
  assert.equal(receipt.outcome, 'recorded');
});

test('a post lost before it reached the forum is an in-doubt tool error naming its clientId; retried with it, it lands once', async (t) => {
  const { proxy, alice } = await setup(t);
  const topic = await call(alice, 'forum_open_topic', { title: 'Lost' });
  proxy.loseOnce('POST', '/api/messages');
  const lost = await alice.callTool({ name: 'forum_post_message', arguments: { topicId: topic.id, content: 'lost-request-post' } });
  assert.ok(lost.isError);
  const text = lost.content[0].text;
  assert.match(text, /In doubt/);
  assert.match(text, /forum_receipt/);
  const clientId = /"clientId": "([A-Za-z0-9_-]+)"/.exec(text)?.[1];
  assert.ok(clientId, `the error names the clientId to retry with: ${text}`);
  assert.equal(proxy.seen.filter((s) => s === 'POST /api/messages').length, 0, 'the lost write was not resent by itself');
  const m = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'lost-request-post', clientId });
  const again = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'lost-request-post', clientId });
  assert.equal(again.id, m.id);
  const found = await call(alice, 'forum_search', { q: 'lost-request-post' });
  assert.equal(found.messages.length, 1, 'the message exists once');
});

test('a 429 is waited out for Retry-After and the call then succeeds', async (t) => {
  const { proxy, alice } = await setup(t);
  const topic = await call(alice, 'forum_open_topic', { title: 'Rate limited' });
  proxy.refuseOnce('POST', '/api/messages');
  const started = Date.now();
  const m = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'after the 429' });
  assert.ok(Date.now() - started >= 1000, 'it waited Retry-After (1 s)');
  assert.equal(m.content, 'after the 429');
  assert.equal(proxy.seen.filter((s) => s === 'POST /api/messages').length, 1, 'the refused request was sent again once');
});

test('a bad token is a tool error that says to fix FORUM_TOKEN', async (t) => {
  const { proxy } = await setup(t);
  const client = await mcp(t, { FORUM_URL: proxy.url, FORUM_TOKEN: 'not-a-token' });
  const r = await client.callTool({ name: 'forum_search', arguments: { q: 'x' } });
  assert.ok(r.isError);
  assert.match(r.content[0].text, /401/);
  assert.match(r.content[0].text, /FORUM_TOKEN/);
  assert.ok(!r.content[0].text.includes('not-a-token'), 'the token is not echoed');
  const status = await call(client, 'forum_status');
  assert.ok(status.version, 'public tools still work');
});

test('without FORUM_URL the MCP server exits 2 and says what to set', () => {
  const r = spawnSync(process.execPath, [MCP_JS], { env: { PATH: process.env.PATH ?? '' }, input: '', encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /FORUM_URL/);
  assert.equal(r.stdout, '', 'stdout carries only MCP messages');
});

test('the MCP binary answers --help and --version on stdout with exit 0, and refuses unknown flags with exit 2', () => {
  const run = (...args) => spawnSync(process.execPath, [MCP_JS, ...args], { env: { PATH: process.env.PATH ?? '' }, input: '', encoding: 'utf8' });
  for (const flag of ['--help', '-h']) {
    const r = run(flag);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^usage: agent-forum-mcp/);
    assert.match(r.stdout, /FORUM_URL/);
  }
  const version = run('--version');
  assert.equal(version.status, 0);
  assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  const bad = run('--verbose');
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /Unknown option '--verbose'/);
  assert.equal(bad.stdout, '');
});

test('a FORUM_URL with credentials is refused at start with exit 2, without echoing the password', () => {
  const r = spawnSync(process.execPath, [MCP_JS], { env: { PATH: process.env.PATH ?? '', FORUM_URL: 'http://alice:s3cret-pw@127.0.0.1:9/' }, input: '', encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /credentials/);
  assert.ok(!r.stderr.includes('s3cret-pw') && !r.stderr.includes('alice'), 'neither the user nor the password is echoed');
  assert.equal(r.stdout, '');
});

test('a JSON-RPC line over the stdio read buffer is reported on stderr and ends the process with a non-zero status', () => {
  const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(11 * 1024 * 1024) } }) + '\n';
  const r = spawnSync(process.execPath, [MCP_JS], { env: { PATH: process.env.PATH ?? '', FORUM_URL: 'http://127.0.0.1:9' }, input: line, encoding: 'utf8', maxBuffer: 1 << 20 });
  assert.notEqual(r.status, 0, 'not a silent exit 0');
  assert.match(r.stderr, /stdio transport error: .*exceeded maximum size/);
  assert.match(r.stderr, /closed after an error/);
});

test('--read-only offers only read tools and --toolsets only the named groups; an unknown toolset exits 2', async (t) => {
  const { proxy, agent } = await setup(t);
  const ro = await mcp(t, { FORUM_URL: proxy.url, FORUM_TOKEN: agent.token }, ['--read-only']);
  const roTools = (await ro.listTools()).tools;
  assert.ok(roTools.length > 5 && roTools.every((x) => x.annotations.readOnlyHint === true), 'only read tools');
  const knowledge = await mcp(t, { FORUM_URL: proxy.url, FORUM_TOKEN: agent.token }, ['--toolsets', 'knowledge']);
  assert.deepEqual((await knowledge.listTools()).tools.map((x) => x.name).sort(), ['knowledge_list', 'knowledge_publish', 'knowledge_revise']);
  const bad = spawnSync(process.execPath, [MCP_JS, '--toolsets', 'nope'], { env: { PATH: process.env.PATH ?? '', FORUM_URL: proxy.url }, input: '', encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown toolset "nope"/);
});

test('over stdio a host that reads only the text content sees the data, and the server says participant text is untrusted', async (t) => {
  const { alice } = await setup(t);
  assert.match(alice.getInstructions(), /untrusted data/);
  const topic = await call(alice, 'forum_open_topic', { title: 'Text only' });
  await call(alice, 'forum_post_message', { topicId: topic.id, content: 'visible-in-text' });
  const r = await alice.callTool({ name: 'forum_read_messages', arguments: { topicId: topic.id } });
  const text = r.content.map((c) => c.text).join('\n');
  assert.ok(text.includes('visible-in-text'), 'the message content is in the text content');
  assert.match(r.content[0].text, /untrusted data/);
  const tool = (await alice.listTools()).tools.find((x) => x.name === 'forum_whoami');
  assert.equal(tool.annotations.readOnlyHint, true);
  assert.equal((await call(alice, 'forum_whoami')).name, 'mcp-alice');
});

test('a 1 MiB search query is refused as -32602 Invalid params naming the field, and a 414/431 from the forum is advised as input to fix, not to retry later', async (t) => {
  const { alice } = await setup(t);
  await assert.rejects(alice.callTool({ name: 'forum_search', arguments: { q: 'x'.repeat(1024 * 1024) } }), (err) => err.code === -32602 && /arguments\.q must NOT have more than 200 characters/.test(err.message));
  const { errorAdvice } = await import('../../dist/mcp/server.js');
  for (const status of [414, 431]) {
    assert.match(errorAdvice({ message: 'm', status, body: { error: 'too long', code: 'URI_TOO_LONG' }, retryAfterSeconds: null, inDoubt: false, kind: null, clientId: null }), /^Invalid input.*Fix that field/);
  }
});
