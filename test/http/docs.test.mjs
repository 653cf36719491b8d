/**
 * Guidance and docs (issue 6): /openapi.json against the validator and the route table (both
 * ways), the guides and client files with their caching headers, the start.md walkthrough
 * executed block by block against a real server, and both client helpers end to end.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ROOT, startServer, tempDir } from '../helpers/server.mjs';

const { publicRoutes } = await import(pathToFileURL(join(ROOT, 'dist', 'api', 'routes.js')).href);
const { Router } = await import(pathToFileURL(join(ROOT, 'dist', 'http', 'router.js')).href);
const execFileP = promisify(execFile);

/** Paths of part 4 and part 1's guidance paths: a guide may only call paths of the specification. */
const SPEC_PATHS = new Set([
  '/api/status', '/api/opportunities', '/api/register', '/api/agents', '/api/rooms', '/api/topics', '/api/messages',
  '/api/knowledge', '/api/search', '/api/changes', '/api/work/changes', '/api/exchange', '/api/receipts', '/api/work',
  '/api/work/action', '/api/work/history', '/a2a/message:send', '/openapi.json', '/api/docs', '/api/start.md',
  '/api/exchange.md', '/api/retry-budget.md', '/.well-known/agent-card.json', '/.well-known/agent.json',
]);

const routes = publicRoutes();
const routed = (method, path) => routes.some((r) => r.method === method && r.path === path);

/**
 * One server for the whole file (every test uses its own agents and topics), on port 0 without
 * FORUM_PUBLIC_URL: the public URL then follows the bound address, so the guides' {{BASE_URL}}
 * links work as served.
 */
let shared;
const cleanups = [];
before(async () => {
  shared = await startServer({ after: (fn) => cleanups.push(fn) });
});
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});
const startPublicServer = async () => shared;

const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;

test('/openapi.json is a valid OpenAPI 3.1.1 document of version 0.4.9 whose schemas all compile', async (t) => {
  const s = await startPublicServer();
  const res = await s.get('/openapi.json');
  assert.equal(res.status, 200);
  assert.match(res.headers['content-type'], /^application\/json/);
  const doc = res.body;
  assert.equal(doc.openapi, '3.1.1');
  assert.equal(doc.info.version, '0.4.9');
  assert.deepEqual(doc.servers, [{ url: s.url, description: 'This service (FORUM_PUBLIC_URL)' }]);

  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  validator.resolveRefs(); // throws on a dangling $ref

  // Every component schema is usable JSON Schema 2020-12 once mounted at its OpenAPI location.
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema({ $id: 'https://forum.invalid/openapi.json', components: doc.components });
  for (const name of Object.keys(doc.components.schemas)) {
    assert.ok(ajv.getSchema(`https://forum.invalid/openapi.json#/components/schemas/${name}`), `schema ${name} compiles`);
    assert.equal(doc.components.schemas[name].$id, undefined);
    assert.equal(doc.components.schemas[name].$schema, undefined);
  }
  // No bare schema name survives as a reference.
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? [];
  for (const r of refs) assert.match(r, /"\$ref":"#\/components\/(schemas|responses|headers)\//);
  assert.deepEqual(doc.components.securitySchemes.bearer, { ...doc.components.securitySchemes.bearer, type: 'http', scheme: 'bearer' });
  assert.deepEqual(doc.security, [{ bearer: [] }]);
});

test('every route of the table is documented with its method and every documented operation is a route', async (t) => {
  const s = await startPublicServer();
  const doc = (await s.get('/openapi.json')).body;
  const documented = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) documented.push({ method: method.toUpperCase(), path, op });
  }
  // Route table → document (prefix routes: each of their concrete files; catch-alls: each operation).
  const operationsOf = (r) =>
    r.method === '*' ? r.operations.map((o) => [o.method, o.path]) : (r.path.endsWith('/*') ? r.files.map((f) => f.path) : [r.path]).map((p) => [r.method, p]);
  for (const r of routes) {
    const ops = operationsOf(r);
    assert.ok(ops.length > 0, `${r.method} ${r.path} documents at least one path`);
    for (const [m, p] of ops) {
      const op = doc.paths[p]?.[m.toLowerCase()];
      assert.ok(op, `${m} ${p} is documented`);
      assert.ok(op.operationId.startsWith(r.operationId), `${m} ${p}: operationId ${op.operationId} comes from ${r.operationId}`);
      assert.deepEqual(op.tags, [r.tag]);
      if (r.auth === 'public') assert.deepEqual(op.security, [], `${p} is public`);
      else assert.equal(op.security, undefined, `${p} uses the global bearer requirement`);
    }
  }
  // Document → route table: the router dispatches every documented operation to a route.
  const router = new Router(routes);
  for (const { method, path, op } of documented) {
    const route = router.match(method, path);
    assert.ok(op.operationId.startsWith(route.operationId), `${method} ${path} is served by ${route.operationId}`);
  }
  const total = routes.reduce((n, r) => n + operationsOf(r).length, 0);
  assert.equal(documented.length, total, 'no operation is documented twice or invented');
  // And the running server really answers every documented public GET that needs no parameter with 200.
  for (const { method, path, op } of documented) {
    if (method !== 'GET' || !Array.isArray(op.security)) continue;
    if ((op.parameters ?? []).some((p) => p.required)) continue;
    assert.equal((await s.get(path)).status, 200, `GET ${path}`);
  }
});

test('operations carry query parameters, body examples, the error statuses of part 7 and Retry-After', async (t) => {
  const s = await startPublicServer();
  const doc = (await s.get('/openapi.json')).body;
  const list = doc.paths['/api/messages'].get;
  const limit = list.parameters.find((p) => p.name === 'limit');
  assert.deepEqual(limit, { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } });
  const messageId = list.parameters.find((p) => p.name === 'messageId');
  assert.equal(messageId.schema.pattern, '^[A-Za-z0-9_-]{1,120}$');
  assert.equal(messageId.description, 'Exact message.');
  assert.deepEqual(Object.keys(list.responses), ['200', '400', '401', '403', '429', '500', '503']);

  const post = doc.paths['/api/messages'].post;
  assert.deepEqual(post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/MessageInput' });
  assert.equal(typeof post.requestBody.content['application/json'].example.clientId, 'string');
  assert.deepEqual(Object.keys(post.responses), ['201', '400', '401', '403', '404', '409', '413', '415', '423', '429', '500', '503', '507']);
  assert.match(post.description, /30 per token per minute/);

  const register = doc.paths['/api/register'].post;
  assert.deepEqual(register.security, []);
  assert.equal(register.responses['401'], undefined, 'a public route never answers 401');
  assert.equal(register.requestBody.content['application/json'].example.operatorAuthorized, true);

  const tooMany = doc.components.responses[post.responses['429'].$ref.split('/').pop()];
  assert.deepEqual(tooMany.headers['Retry-After'], { $ref: '#/components/headers/Retry-After' });
  assert.deepEqual(tooMany.content['application/json'].schema, { $ref: '#/components/schemas/Error' });
  assert.ok(doc.components.responses[post.responses['503'].$ref.split('/').pop()].headers['Retry-After']);
  assert.deepEqual(doc.components.headers['Retry-After'].schema, { type: 'integer', minimum: 1 });

  // Non-JSON documents are described with their content types.
  assert.ok(doc.paths['/api/start.md'].get.responses['200'].content['text/markdown']);
  assert.ok(doc.paths['/api/docs'].get.responses['200'].content['text/html']);
  assert.ok(doc.paths['/api/client/forum-client.mjs'].get.responses['200'].content['text/javascript']);
  assert.ok(doc.paths['/api/client/forum_client.py'].get.responses['200'].content['text/x-python']);
  assert.ok(doc.paths['/api/docs/assets/favicon-32x32.png'].get.responses['200'].content['image/png']);
});

const DOCUMENTS = [
  ['/openapi.json', 'application/json; charset=utf-8'],
  ['/api/docs', 'text/html; charset=utf-8'],
  ['/api/start.md', 'text/markdown; charset=utf-8'],
  ['/api/exchange.md', 'text/markdown; charset=utf-8'],
  ['/api/retry-budget.md', 'text/markdown; charset=utf-8'],
  ['/api/client/forum-client.mjs', 'text/javascript; charset=utf-8'],
  ['/api/client/forum_client.py', 'text/x-python; charset=utf-8'],
  ['/api/docs/assets/swagger-ui.css', 'text/css; charset=utf-8'],
  ['/api/docs/assets/swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['/api/docs/assets/init.js', 'text/javascript; charset=utf-8'],
  ['/api/docs/assets/favicon-32x32.png', 'image/png'],
];

test('guides, clients and docs assets are served with their content type, ETag, Cache-Control and 304 on If-None-Match', async (t) => {
  const s = await startPublicServer();
  for (const [path, type] of DOCUMENTS) {
    const res = await s.get(path);
    assert.equal(res.status, 200, path);
    assert.equal(res.headers['content-type'], type, path);
    assert.equal(res.headers['cache-control'], 'public, max-age=300', path);
    assert.match(res.headers.etag, /^"[A-Za-z0-9_-]{22}"$/, path);
    const again = await s.get(path, undefined, { 'if-none-match': res.headers.etag });
    assert.equal(again.status, 304, `${path} revalidates`);
    assert.equal(again.body, '');
    assert.equal(again.headers.etag, res.headers.etag);
    assert.equal(again.headers['cache-control'], 'public, max-age=300');
    assert.equal((await s.get(path, undefined, { 'if-none-match': `"other", W/${res.headers.etag}` })).status, 304, `${path}: weak, listed`);
    assert.equal((await s.get(path, undefined, { 'if-none-match': '"stale"' })).status, 200, `${path}: a stale ETag gets the document`);
    if (type.startsWith('text/markdown') || type.startsWith('text/javascript; charset=utf-8') && path.includes('/client/') || type.startsWith('text/x-python')) {
      assert.doesNotMatch(res.body, /\{\{BASE_URL\}\}/, `${path} has no placeholder left`);
      assert.ok(res.body.includes(s.url), `${path} links to FORUM_PUBLIC_URL`);
    }
  }
  const head = await s.request('HEAD', '/api/start.md');
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  assert.match(head.headers.etag, /^"/);
  // Only allow-listed files are served; nothing else of the package or the disk.
  for (const p of ['/api/docs/assets/package.json', '/api/docs/assets/index.html', '/api/docs/assets/..%2f..%2fpackage.json', '/api/client/forum-client.ts']) {
    assert.equal((await s.get(p)).status, 404, p);
  }
  // The guides are the files in src/api/docs/guides with {{BASE_URL}} replaced.
  const source = readFileSync(join(ROOT, 'src', 'api', 'docs', 'guides', 'start.md'), 'utf8');
  assert.equal((await s.get('/api/start.md')).body, source.split('{{BASE_URL}}').join(s.url));
});

test('the docs page loads Swagger UI only from this server and forbids inline scripts', async (t) => {
  const s = await startPublicServer();
  const res = await s.get('/api/docs');
  const srcs = [...res.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  for (const src of srcs) assert.ok(src.startsWith('/'), `${src} is served by this server`);
  assert.ok(srcs.includes('/api/docs/assets/swagger-ui-bundle.js'));
  assert.doesNotMatch(res.body, /<script>(?!<\/script>)/, 'no inline script');
  assert.match(res.headers['content-security-policy'], /script-src 'self'/);
  const init = await s.get('/api/docs/assets/init.js');
  assert.match(init.body, /url: '\/openapi\.json'/);
  assert.match(init.body, /validatorUrl: null/);
});

test('the worked example of exchange.md is a real SHA-256 over the UTF-8 bytes of its canonical JSON', () => {
  const md = readFileSync(join(ROOT, 'src', 'api', 'docs', 'guides', 'exchange.md'), 'utf8');
  const example = md.slice(md.indexOf('### Worked example'));
  const [canonical, digest] = [...example.matchAll(/```text\n(.*)\n```/g)].map((m) => m[1]);
  assert.equal(createHash('sha256').update(canonical, 'utf8').digest('hex'), digest);
  // It is canonical: keys sorted, no whitespace between tokens.
  const parsed = JSON.parse(canonical);
  assert.deepEqual(Object.keys(parsed), Object.keys(parsed).sort());
  assert.equal(JSON.stringify(parsed), canonical);
  // The page example in the guide carries the same string and hash.
  const page = JSON.parse(md.match(/```json\n(\{\n {2}"format": "forum-exchange-v1"[\s\S]*?)```/)[1]);
  assert.equal(page.records[0].canonicalJson, canonical);
  assert.equal(page.records[0].sha256, digest);
  assert.match(md, new RegExp(`${Buffer.byteLength(canonical)} UTF-8 bytes, ${canonical.length} characters`));
});

// ---------------------------------------------------------------------------------------------
// start.md walkthrough

/** The ```sh blocks of a markdown document, in order. */
function shBlocks(md) {
  return [...md.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** API paths (without query) called in a block, with their methods. */
function callsOf(block, base) {
  const calls = [];
  // One curl command may span lines ending in a backslash.
  const commands = block.replace(/\\\n/g, ' ').split(/\bcurl /).slice(1);
  for (const cmd of commands) {
    const m = cmd.match(new RegExp(`${base.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(/[^\\s"'?)]*)`));
    if (!m) continue;
    calls.push({ method: /-X POST/.test(cmd) ? 'POST' : 'GET', path: m[1] });
  }
  return calls;
}

/** A PATH prefix with a `curl` that is the undici shim (used when real curl is missing or FORUM_TEST_CURL=shim). */
function curlShimBin(t) {
  const dir = tempDir(t, 'forum-curl-');
  const file = join(dir, 'curl');
  writeFileSync(file, `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'test', 'helpers', 'curl-shim.mjs')}" "$@"\n`);
  chmodSync(file, 0o755);
  return dir;
}

test('the curl examples of start.md run in order against the server and each request succeeds', async (t) => {
  const s = await startPublicServer();
  const md = (await s.get('/api/start.md')).body;
  const blocks = shBlocks(md);
  assert.ok(blocks.length >= 15, `start.md has its walkthrough (${blocks.length} sh blocks)`);

  // Every endpoint the guide calls exists in the specification and in the route table, and every
  // block runs.
  const runnable = [];
  for (const [i, block] of blocks.entries()) {
    const calls = callsOf(block, s.url);
    for (const c of calls) {
      assert.ok(SPEC_PATHS.has(c.path), `block ${i} calls ${c.method} ${c.path}, a path of the specification`);
      assert.ok(routed(c.method, c.path), `block ${i} calls ${c.method} ${c.path}, which the server routes`);
    }
    runnable.push({ i, block, curls: (block.match(/\bcurl -/g) ?? []).length });
  }
  for (const must of ['POST /api/register', 'POST /api/topics', 'POST /api/messages', 'GET /api/messages']) {
    assert.ok(runnable.some((r) => callsOf(r.block, s.url).some((c) => `${c.method} ${c.path}` === must)), `${must} is walked through`);
  }

  // The work blocks claim "the first available item": another agent offers one first.
  const other = await s.register('work-creator');
  const created = await s.post('/api/work', { clientId: 'seed-1', title: 'Summarize three papers', description: 'Summaries with numbers.', acceptanceCriteria: 'One paragraph each.' }, other.token);
  assert.equal(created.status, 201, JSON.stringify(created.body));

  const script = [
    'set -eu',
    'set -o pipefail',
    // Every curl reports its HTTP status on stderr, marked, without touching the block's stdout.
    `curl() { command curl --write-out '%{stderr}@@HTTP %{http_code}\\n' "$@"; }`,
    ...runnable.flatMap(({ i, block }) => [`echo '@@BLOCK ${i}' >&2`, block]),
    "echo '@@DONE' >&2",
  ].join('\n');
  const cwd = tempDir(t, 'forum-walk-');
  const useShim = process.env.FORUM_TEST_CURL === 'shim' || !which('curl');
  if (useShim) t.diagnostic('curl is not installed (or FORUM_TEST_CURL=shim): running the blocks with the undici curl shim');
  const env = { ...process.env, PATH: useShim ? `${curlShimBin(t)}:${process.env.PATH}` : process.env.PATH };
  const run = spawnSync('bash', ['-c', script], { cwd, env, encoding: 'utf8', timeout: 60_000 });

  // Attribute every HTTP status to its block; report the failing block with its text.
  const perBlock = new Map();
  let current = null;
  for (const line of run.stderr.split('\n')) {
    const b = line.match(/^@@BLOCK (\d+)$/);
    if (b) perBlock.set((current = Number(b[1])), []);
    else if (line.startsWith('@@HTTP ') && current !== null) perBlock.get(current).push(Number(line.slice(7)));
  }
  for (const { i, block, curls } of runnable) {
    const statuses = perBlock.get(i);
    const context = `block ${i}:\n${block}\nstatuses: ${JSON.stringify(statuses)}\nstderr: ${run.stderr.slice(-2000)}\nstdout: ${run.stdout.slice(-2000)}`;
    assert.ok(statuses, `block ${i} ran\n${context}`);
    assert.equal(statuses.length, curls, `every curl of block ${i} got a response\n${context}`);
    for (const st of statuses) assert.ok(st >= 200 && st < 300, `block ${i} succeeded\n${context}`);
  }
  assert.equal(run.status, 0, `the walkthrough script exits 0\n${run.stderr.slice(-3000)}`);
  assert.match(run.stderr, /@@DONE/);

  // The token stored in registration.json by the guide is a working token, and the retry in the
  // guide reused its clientId: the topic holds the message, the reply and the message posted over
  // A2A (section 9), not a duplicate.
  const registration = JSON.parse(readFileSync(join(cwd, 'registration.json'), 'utf8'));
  const topics = await s.get('/api/topics', registration.token);
  const topic = topics.body.find((tp) => tp.title === 'Benchmarks of small retrieval models');
  assert.ok(topic, 'the walkthrough topic exists');
  const messages = await s.get(`/api/messages?topicId=${topic.id}`, registration.token);
  assert.equal(messages.body.messages.length, 3, 'the identical retry did not duplicate the message');
  const overA2A = messages.body.messages.find((m) => m.content === 'Hello over A2A.');
  assert.match(overA2A?.clientId ?? '', /-a2a$/, 'the A2A messageId became the clientId');
});

// ---------------------------------------------------------------------------------------------
// Client helpers end to end

test('the JavaScript client registers, posts, retries with the same clientId, settles an in-doubt write and follows the feed', async (t) => {
  const s = await startPublicServer();
  const dir = tempDir(t, 'forum-client-');
  const file = join(dir, 'forum-client.mjs');
  const served = await s.get('/api/client/forum-client.mjs');
  writeFileSync(file, served.body);
  const { ForumClient, ForumError, newClientId } = await import(pathToFileURL(file).href);

  // The served copy defaults to this server.
  const anonymous = new ForumClient();
  assert.equal((await anonymous.status()).version, '0.4.9');

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
  assert.ok(lines.some((l) => /receipt message/.test(l)), 'the receipt was asked');
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
  await assert.rejects(noRetry.createTopic({ title: 'in doubt' }), (err) => err.inDoubt === true && err.status === 0);
  assert.equal(topicPosts, 1);

  const seen = [];
  const saved = [];
  const cursor = await client.followFeed({
    onEvents: async (events) => { seen.push(...events); },
    saveCursor: (c) => { saved.push({ cursor: c, seenSoFar: seen.length }); },
    stopWhenCaughtUp: true,
  });
  assert.ok(seen.some((e) => e.kind === 'message' && e.message.id === first.id), 'the feed shows the message');
  assert.ok(saved.length >= 1 && saved.every((x) => x.seenSoFar > 0 || x.cursor.after > 0));
  assert.deepEqual(saved.at(-1).cursor, cursor);
});

test('the Python client registers, posts, retries with the same clientId and settles an in-doubt write', async (t) => {
  if (!which('python3')) {
    t.skip('python3 is not installed on this machine: the Python client (forum_client.py) was NOT tested');
    return;
  }
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
def once(method, url, body, auth):
    if "/api/receipts" in url:
        state["receipts"] += 1
    result = real_once(method, url, body, auth)
    if method == "POST" and state["drops"] == 0:
        state["drops"] += 1
        raise ForumError("connection reset", 0)
    return result
flaky._once = once
settled = flaky.post_message(topic["id"], "sent once despite the drop")
out["settled"] = settled["content"]
out["receipts"] = state["receipts"]
msgs = client.messages(topicId=topic["id"])["messages"]
out["contents"] = sorted(m["content"] for m in msgs)

# Redirects are refused, never followed with the token.
try:
    ForumClient(base_url=sys.argv[1], token="secret").agents()
except ForumError as e:
    out["redirect"] = e.status

events = []
saved = []
client.follow_feed(lambda ev, page: events.extend(ev), save_cursor=lambda c: saved.append((c, len(events))), stop_when_caught_up=True)
out["feedHasMessage"] = any(e["kind"] == "message" and e["message"]["id"] == first["id"] for e in events)
out["cursorAfterEvents"] = all(n > 0 for c, n in saved)
print(json.dumps(out))
`);
  // A server that redirects everything elsewhere, and records whether a token ever arrives there.
  const { createServer: createHttpServer } = await import('node:http');
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
  assert.equal(out.receipts, 1, 'the receipt was asked once, then the same clientId settled it');
  assert.deepEqual(out.contents, ['hello from python', 'sent once despite the drop']);
  assert.equal(out.redirect, 302);
  assert.equal(tokenLeaked, false, 'the token never reached the redirect target');
  assert.equal(out.feedHasMessage, true);
  assert.equal(out.cursorAfterEvents, true);
});
