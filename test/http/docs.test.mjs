/**
 * Guidance and docs (issue 6): /openapi.json against the validator and the route table (both
 * ways), the guides and client files with their caching headers, the docs page behind a path
 * prefix, the numbers and status codes the guides state against the code, and the start.md
 * walkthrough executed block by block against a real server. The client helpers end to end are in
 * test/http/clients.test.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Agent, setGlobalDispatcher } from 'undici';
import { ROOT, api, sharedServer, startServer, tempDir, which, logText } from '../helpers/server.mjs';
import { bodyValidator } from '../../dist/http/validate.js';
import { prefixProxy } from '../helpers/prefix-proxy.mjs';

const { publicRoutes } = await import(pathToFileURL(join(ROOT, 'dist', 'api', 'routes.js')).href);
const { Router } = await import(pathToFileURL(join(ROOT, 'dist', 'http', 'router.js')).href);

/** Paths of part 4 and part 1's guidance paths: a guide may only call paths of the specification. */
const SPEC_PATHS = new Set([
  '/api/status', '/api/opportunities', '/api/register', '/api/agents', '/api/rooms', '/api/topics', '/api/messages',
  '/api/knowledge', '/api/search', '/api/changes', '/api/work/changes', '/api/exchange', '/api/receipts', '/api/work',
  '/api/work/action', '/api/work/history', '/a2a/message:send', '/openapi.json', '/api/docs', '/api/start.md',
  '/api/exchange.md', '/api/retry-budget.md', '/.well-known/agent-card.json', '/.well-known/agent.json',
]);
/**
 * Our extensions a guide may call too, each introduced there as this service's extension: the inbox
 * (issue 37), long-polled in start.md's section on staying up to date (issue 51); GET /api/limits
 * (issue 54), in its section on limits; the tokens an agent manages (issue 53), in start.md's
 * section on registering; checkpoints and proofs (issue 53) in exchange.md.
 */
const EXTENSION_PATHS = new Set(['/api/inbox', '/api/limits', '/api/me/tokens', '/api/me/tokens/revoke', '/api/checkpoint', '/api/proofs/inclusion', '/api/proofs/consistency']);
/** A path of the specification: one of SPEC_PATHS or EXTENSION_PATHS, or a client helper file under /api/client/ (part 1). */
const specPath = (path) => SPEC_PATHS.has(path) || EXTENSION_PATHS.has(path) || /^\/api\/client\/[^/]+$/.test(path);

const routes = publicRoutes();
/** Whether the route table has `method path`, exactly or under a prefix route (`/api/client/*`). */
const routed = (method, path) => routes.some((r) => r.method === method && (r.path === path || (r.path.endsWith('*') && path.startsWith(r.path.slice(0, -1)))));

/**
 * One server for the whole file (every test uses its own agents and topics), on port 0 without
 * FORUM_PUBLIC_URL: the public URL then follows the bound address, so the guides' {{BASE_URL}}
 * links work as served.
 */
const startPublicServer = sharedServer();

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

test('POST /a2a/message:send documents A2A-Version as header or query parameter from the route table, and the server accepts exactly what it documents', async (t) => {
  const s = await startPublicServer();
  const doc = (await s.get('/openapi.json')).body;
  const send = doc.paths['/a2a/message:send'].post;
  const route = routes.find((r) => r.operationId === 'a2aSendMessage');
  assert.deepEqual(route.parameters.map((p) => `${p.in}:${p.name}`), ['header:A2A-Version', 'query:A2A-Version'], 'the route declares both');
  const header = send.parameters.find((p) => p.in === 'header' && p.name === 'A2A-Version');
  const query = send.parameters.find((p) => p.in === 'query' && p.name === 'A2A-Version');
  assert.ok(header, 'documented as a header parameter');
  assert.ok(query, 'documented as a query parameter');
  // Either one suffices, so neither is required on its own; the descriptions say one of them is.
  assert.equal(header.required, false);
  assert.equal(query.required, false);
  assert.match(header.description, /Required unless the query parameter A2A-Version is sent/);
  assert.match(query.description, /only when the header is absent/);
  assert.match(query.description, /one of the two is required/);
  assert.deepEqual(query.schema, header.schema);
  assert.equal(header.example, '1.0', '"Try it out" pre-fills the header with a working value');
  assert.equal(query.example, undefined, 'the query parameter is not pre-filled, so "Try it out" sends the header alone');
  assert.match(send.summary, /as header or query parameter/);

  // The documented pattern and the server agree on every value.
  const pattern = new RegExp(header.schema.pattern, 'u');
  const agent = await s.register('a2a-version');
  const body = (n) => ({ message: { messageId: `version-${n}`, role: 'ROLE_USER', parts: [{ data: { action: 'status' }, mediaType: 'application/json' }] } });
  for (const [i, v] of ['1.0', '1.0.0', '1.0.7', '1.1', '0.3', '1', '1.0.01', '2.0', 'v1.0', '1.0.x'].entries()) {
    const res = await s.post('/a2a/message:send', body(i), agent.token, { 'A2A-Version': v });
    assert.equal(res.status === 200, pattern.test(v), `A2A-Version ${v}: documented ${pattern.test(v) ? 'valid' : 'invalid'}, server ${res.status}`);
  }
  for (const [i, v] of ['1.0', '1.0.3', '1.1', '0.3', 'v1.0'].entries()) {
    const res = await s.post(`/a2a/message:send?A2A-Version=${encodeURIComponent(v)}`, body(`query-${i}`), agent.token);
    assert.equal(res.status === 200, pattern.test(v), `query A2A-Version=${v}: documented ${pattern.test(v) ? 'valid' : 'invalid'}, server ${res.status}`);
  }
  const missing = await s.post('/a2a/message:send', body('none'), agent.token);
  assert.equal(missing.status, 400);
  assert.match(JSON.stringify(missing.body), /VERSION_NOT_SUPPORTED/);
  const headerWins = await s.post('/a2a/message:send?A2A-Version=1.0', body('both'), agent.token, { 'A2A-Version': '0.3' });
  assert.equal(headerWins.status, 400, 'the query parameter is used only when the header is absent');
});

test('the WorkActionInput discriminator maps each action to its variant, and request validation is unchanged', async (t) => {
  const s = await startPublicServer();
  const doc = (await s.get('/openapi.json')).body;
  const input = doc.components.schemas.WorkActionInput;
  const actions = ['claim', 'renew', 'release', 'submit', 'review', 'cancel'];
  const component = (a) => `#/components/schemas/WorkAction${a[0].toUpperCase()}${a.slice(1)}`;
  assert.deepEqual(input.discriminator, { propertyName: 'action', mapping: Object.fromEntries(actions.map((a) => [a, component(a)])) });
  assert.deepEqual(input.oneOf.map((o) => o.$ref).sort(), Object.values(input.discriminator.mapping).sort());
  for (const [action, ref] of Object.entries(input.discriminator.mapping)) {
    assert.deepEqual(doc.components.schemas[ref.split('/').pop()].properties.action, { const: action }, `${action} → ${ref}`);
  }
  // ajv (which refuses `mapping`) validates from schemas/, where the discriminator is unchanged...
  const source = JSON.parse(readFileSync(join(ROOT, 'schemas', 'WorkActionInput.json'), 'utf8'));
  assert.deepEqual(source.discriminator, { propertyName: 'action' });
  // ...and answers as before: the tag first, then the chosen variant's own rules.
  const a = await s.register('discriminator');
  const base = { workItemId: 'wk_none', expectedRevision: 1, clientId: 'disc-1' };
  const cases = [
    [{ ...base, action: 'steal' }, 400, /field "action" must be one of the documented values/],
    [{ ...base, action: 7 }, 400, /field "action"/],
    [{ ...base }, 400, /missing required field "action"/],
    [{ ...base, action: 'release', leaseMinutes: 30 }, 400, /unknown field "leaseMinutes"/],
    [{ ...base, action: 'review', decision: 'accept' }, 400, /missing required field "feedback"/],
    [{ ...base, action: 'claim', leaseMinutes: 4 }, 400, /field "leaseMinutes"/],
    [{ ...base, action: 'claim', leaseMinutes: 30 }, 404, /./],
  ];
  for (const [body, status, message] of cases) {
    const res = await s.post('/api/work/action', body, a.token);
    assert.equal(res.status, status, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
    assert.match(res.body.error, message, JSON.stringify(body));
  }
});

test('response schemas carry the spec\'s bounds: UTC work timestamps, Int maxima, at most 100 messages per list', async (t) => {
  const s = await startPublicServer();
  const doc = (await s.get('/openapi.json')).body;
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema({ $id: 'https://forum.invalid/openapi.json', components: doc.components });
  const schema = (name) => ajv.getSchema(`https://forum.invalid/openapi.json#/components/schemas/${name}`);
  const valid = (name, value) => schema(name)(value);

  // A real work item through claim, submit and review, so every timestamp is set once.
  const creator = await s.register('bounds-creator');
  const worker = await s.register('bounds-worker');
  const act = async (token, body) => {
    const res = await s.post('/api/work/action', body, token);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  const created = (await s.post('/api/work', { clientId: 'bounds-1', title: 'Bounds', description: 'd', acceptanceCriteria: 'c' }, creator.token)).body;
  const claimed = await act(worker.token, { action: 'claim', workItemId: created.id, expectedRevision: 1, clientId: 'b-claim' });
  const submitted = await act(worker.token, { action: 'submit', workItemId: created.id, expectedRevision: 2, content: 'r', clientId: 'b-submit' });
  const reviewed = await act(creator.token, { action: 'review', workItemId: created.id, expectedRevision: 3, decision: 'revise', feedback: 'f', clientId: 'b-review' });
  for (const item of [created, claimed, submitted, reviewed]) assert.ok(valid('WorkItem', item), JSON.stringify(schema('WorkItem').errors));
  assert.ok(claimed.leaseUntil && submitted.result && reviewed.review);

  const offset = (ts) => ts.replace(/Z$/, '+00:00');
  const mutations = {
    created: (w) => ({ ...w, created: offset(w.created) }),
    updated: (w) => ({ ...w, updated: offset(w.updated) }),
    leaseUntil: () => ({ ...claimed, leaseUntil: offset(claimed.leaseUntil) }),
    'result.created': () => ({ ...submitted, result: { ...submitted.result, created: offset(submitted.result.created) } }),
    'review.created': (w) => ({ ...w, review: { ...w.review, created: offset(w.review.created) } }),
    sequence: (w) => ({ ...w, sequence: 2 ** 53 }),
    revision: (w) => ({ ...w, revision: 2 ** 53 }),
  };
  for (const [what, mutate] of Object.entries(mutations)) assert.equal(valid('WorkItem', mutate(reviewed)), false, `WorkItem ${what} out of the spec is refused`);
  assert.ok(valid('WorkItem', { ...reviewed, sequence: 2 ** 53 - 1, revision: 2 ** 53 - 1 }), 'Int reaches 9007199254740991');

  const status = (await s.get('/api/status')).body;
  assert.ok(valid('Status', status), JSON.stringify(schema('Status').errors));
  for (const field of ['registeredAgents', 'activeAgents']) assert.equal(valid('Status', { ...status, [field]: 2 ** 53 }), false, `Status ${field} is an Int`);

  const topic = (await s.post('/api/topics', { title: 'bounds' }, creator.token)).body;
  const message = (await s.post('/api/messages', { topicId: topic.id, content: 'm', clientId: 'bounds-m' }, creator.token)).body;
  const list = (n) => ({ messages: Array.from({ length: n }, () => message) });
  assert.ok(valid('MessageList', list(100)));
  assert.equal(valid('MessageList', list(101)), false, 'MessageList holds at most 100 messages, like KnowledgeList');
  assert.equal(doc.components.schemas.MessageList.properties.messages.maxItems, doc.components.schemas.KnowledgeList.properties.knowledge.maxItems);
});

test('rate-limited operations, and the A2A binding for its limited actions, document the RateLimit and RateLimit-Policy fields (and the deprecated RateLimit-Limit/-Remaining/-Reset) the server sends with their successes and 429s', async (t) => {
  const s = await startPublicServer();
  const doc = (await s.get('/openapi.json')).body;
  const names = ['RateLimit', 'RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];
  /** A route's own limit class, or for a dispatching route the classes of the routes its actions run. */
  const classesOf = (r) => [...new Set([r.rateLimit, ...(r.dispatches ?? []).map((d) => routes.find((x) => x.method === d.method && x.path === d.path)?.rateLimit)].filter(Boolean))];
  let limited = 0;
  let dispatching = 0;
  for (const r of routes) {
    if (r.method === '*' || r.path.endsWith('/*')) continue;
    const op = doc.paths[r.path][r.method.toLowerCase()];
    const classes = classesOf(r);
    for (const [status, res] of Object.entries(op.responses)) {
      if (!/^2/.test(status)) continue;
      const has = names.filter((n) => res.headers?.[n]);
      assert.deepEqual(has, classes.length > 0 ? names : [], `${r.method} ${r.path} ${status} (limit classes ${classes.join(', ') || 'none'})`);
      if (classes.length > 0) limited++;
      if (r.dispatch && classes.length > 0) dispatching++;
    }
  }
  assert.ok(limited >= 11, 'registration, every write, every change read and POST /a2a/message:send');
  assert.equal(dispatching, 3, 'the A2A binding (200) and POST /mcp (200, 202) report the limits of the write and change-read routes they run');
  const a2aNote = doc.paths['/a2a/message:send'].post.description;
  assert.match(a2aNote, /Actions `topic`, `post`, `knowledge`, `work\.create`, `work\.act` count toward the write limit: 30 per token per minute/);
  assert.match(a2aNote, /Actions `changes`, `inbox`, `work\.changes` count toward the change-read limit: 60 per token per minute/);
  assert.deepEqual(Object.keys(doc.components.responses.TooManyRequests.headers), ['Retry-After', ...names]);

  // Live, with the limits on: what the server sends conforms to the documented headers.
  const ajv = new Ajv2020({ strict: false });
  const conforms = (name, value) => {
    const schema = doc.components.headers[name].schema;
    return ajv.validate(schema, schema.type === 'integer' ? Number(value) : value);
  };
  const live = await startServer(t, { env: { FORUM_RATE_LIMITS: 'on' } });
  const reg = await live.post('/api/register', { name: 'limits', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true });
  const topic = await live.post('/api/topics', { title: 'limits' }, reg.body.token);
  const changes = await live.get('/api/changes', reg.body.token);
  // The same limits through the A2A binding: a write action and a change-read action report theirs.
  const a2a = (action, input) =>
    live.post('/a2a/message:send', { message: { messageId: `limits-${action}`, role: 'ROLE_USER', parts: [{ data: { action, input } }] } }, reg.body.token, { 'A2A-Version': '1.0' });
  const a2aWrite = await a2a('topic', { title: 'limits over A2A' });
  const a2aChanges = await a2a('changes', {});
  for (const [res, policy] of [[reg, '"registration";q=5;w=3600'], [topic, '"write";q=30;w=60'], [changes, '"changeRead";q=60;w=60'], [a2aWrite, '"write";q=30;w=60'], [a2aChanges, '"changeRead";q=60;w=60']]) {
    assert.ok(res.status >= 200 && res.status < 300, JSON.stringify(res.body));
    assert.equal(res.headers['ratelimit-policy'], policy);
    for (const n of names) assert.ok(conforms(n, res.headers[n.toLowerCase()]), `${n}: ${res.headers[n.toLowerCase()]}`);
  }
  assert.equal(Number(a2aWrite.headers['ratelimit-remaining']), Number(topic.headers['ratelimit-remaining']) - 1, 'the A2A write took a slot of the same write limit');
  assert.equal((await live.get('/api/status')).headers['ratelimit-policy'], undefined, 'a route without a limit class sends none, as documented');
  assert.equal((await a2a('status', {})).headers['ratelimit-policy'], undefined, 'an A2A action without a limit class sends none, as documented');
  let refused;
  for (let i = 0; i < 6 && !refused; i++) {
    const res = await live.post('/api/register', { name: `limits-${i}`, provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true });
    if (res.status === 429) refused = res;
  }
  assert.ok(refused, 'the sixth registration within the hour is refused');
  for (const n of ['Retry-After', ...names]) assert.ok(conforms(n, refused.headers[n.toLowerCase()]), `429 ${n}: ${refused.headers[n.toLowerCase()]}`);
});

const DOCUMENTS = [
  ['/openapi.json', 'application/json; charset=utf-8'],
  ['/api/docs', 'text/html; charset=utf-8'],
  ['/api/start.md', 'text/markdown; charset=utf-8'],
  ['/api/exchange.md', 'text/markdown; charset=utf-8'],
  ['/api/retry-budget.md', 'text/markdown; charset=utf-8'],
  ['/api/client/forum-client.mjs', 'text/javascript; charset=utf-8'],
  ['/api/client/forum_client.py', 'text/x-python; charset=utf-8'],
  ['/api/client/', 'application/json; charset=utf-8'],
  ['/api/docs/assets/swagger-ui.css', 'text/css; charset=utf-8'],
  ['/api/docs/assets/swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['/api/docs/assets/init.js', 'text/javascript; charset=utf-8'],
  ['/api/docs/assets/favicon-32x32.png', 'image/png'],
  // The agent card goes through the same static-document code (src/api/docs/static.ts).
  ['/.well-known/agent-card.json', 'application/json; charset=utf-8'],
  ['/.well-known/agent.json', 'application/json; charset=utf-8'],
];

test('guides, clients, docs assets and the agent card are served with their content type, ETag, Cache-Control and 304 on If-None-Match', async (t) => {
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

test('GET /api/client/ lists every client helper the route table serves, with its absolute URL under FORUM_PUBLIC_URL, content type and description', async (t) => {
  const s = await startPublicServer();
  const res = await s.get('/api/client/');
  assert.equal(res.status, 200);
  bodyValidator('ClientIndex')(structuredClone(res.body)); // throws naming the field otherwise
  const served = routes.find((r) => r.operationId === 'getClient').files;
  assert.deepEqual(res.body.files.map((f) => f.url), served.map((f) => `${s.url}${f.path}`), 'the index lists exactly the files served');
  for (const file of res.body.files) {
    assert.equal(file.url, `${s.url}/api/client/${file.name}`);
    assert.match(file.description, /^[^\n]{20,300}$/, `${file.name}: one line`);
    const got = await api(file.url, 'GET', '');
    assert.equal(got.status, 200, file.url);
    assert.equal(got.headers['content-type'], file.contentType, file.url);
  }
  const op = (await s.get('/openapi.json')).body.paths['/api/client/'].get;
  assert.deepEqual(op.security, [], 'public');
  assert.deepEqual(op.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/ClientIndex' });
  assert.deepEqual(Object.keys(op.responses), ['200', '304', '429', '500', '503']);
});

test('the docs page loads Swagger UI only from this server, with relative URLs, and forbids inline scripts', async (t) => {
  const s = await startPublicServer();
  const res = await s.get('/api/docs');
  const srcs = [...res.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  // Relative to the page, so the page also works behind a path prefix (next test).
  for (const src of srcs) assert.doesNotMatch(src, /^(\/|[a-z]+:)/i, `${src} is a relative URL`);
  const page = `${s.url}/api/docs`;
  const resolved = srcs.map((src) => new URL(src, page).pathname);
  assert.ok(resolved.includes('/api/docs/assets/swagger-ui-bundle.js'));
  assert.ok(resolved.includes('/api/docs/assets/init.js'));
  for (const path of resolved) assert.equal((await s.get(path)).status, 200, `${path} is served`);
  assert.doesNotMatch(res.body, /<script>(?!<\/script>)/, 'no inline script');
  assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'every script is a file');
  const csp = res.headers['content-security-policy'];
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-eval|script-src[^;]*unsafe-inline/);
  const init = await s.get('/api/docs/assets/init.js');
  const docUrl = init.body.match(/url: new URL\('([^']+)', document\.baseURI\)/);
  assert.ok(docUrl, 'init.js loads the document relative to the page');
  assert.equal(new URL(docUrl[1], page).pathname, '/openapi.json');
  assert.match(init.body, /validatorUrl: null/);
});


test('behind a path-prefixed FORUM_PUBLIC_URL the docs page, its assets, the document and its links all resolve under the prefix', async (t) => {
  const proxy = await prefixProxy(t);
  const s = await startServer(t, { env: { FORUM_PUBLIC_URL: `${proxy.url}/` } });
  proxy.setTarget(s.url); // the bound address; every link below must use the public one
  const viaProxy = (path) => api(proxy.url, 'GET', path);

  const page = `${proxy.url}/api/docs`;
  const html = await viaProxy('/api/docs');
  assert.equal(html.status, 200);
  const urls = [...html.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => new URL(m[1], page).href);
  const init = await viaProxy('/api/docs/assets/init.js');
  urls.push(new URL(init.body.match(/url: new URL\('([^']+)'/)[1], page).href);
  const doc = (await viaProxy('/openapi.json')).body;
  assert.deepEqual(doc.servers.map((x) => x.url), [proxy.url]);
  for (const m of doc.info.description.matchAll(/\]\(([^)]+)\)/g)) urls.push(m[1]);
  for (const f of (await viaProxy('/api/client/')).body.files) urls.push(f.url);
  assert.ok(urls.length >= 14, urls.join('\n'));
  for (const url of urls) {
    assert.ok(url.startsWith(`${proxy.url}/`), `${url} stays under the prefix`);
    const res = await api(proxy.url, 'GET', url.slice(proxy.url.length));
    assert.equal(res.status, 200, url);
  }
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
// Guides against the code

const C = await import(pathToFileURL(join(ROOT, 'dist', 'constants.js')).href);
const E = await import(pathToFileURL(join(ROOT, 'dist', 'errors.js')).href);

/** A guide's text with markdown emphasis removed and every run of whitespace one space, so wrapped phrases match. */
const guideText = (name) => readFileSync(join(ROOT, 'src', 'api', 'docs', 'guides', name), 'utf8').replace(/\*\*/g, '').replace(/\s+/g, ' ');

/** Which limit a number belongs to: the limit keyword nearest before it (within 160 characters). */
function nearestKeyword(text, index, keywords) {
  const window = text.slice(Math.max(0, index - 160), index);
  let best = null;
  for (const [name, re] of Object.entries(keywords)) {
    for (const m of window.matchAll(new RegExp(re, 'gi'))) if (!best || m.index > best.index) best = { name, index: m.index };
  }
  return best?.name ?? null;
}

test('the numbers and status codes the guides state are the ones in the code', async (t) => {
  const s = await startPublicServer();
  const doc = (await s.get('/openapi.json')).body;
  const guides = { 'start.md': guideText('start.md'), 'exchange.md': guideText('exchange.md'), 'retry-budget.md': guideText('retry-budget.md') };
  /** Status of the shared error response `name` as the generated document uses it (for statuses without a factory). */
  const documentedStatus = (name) => {
    for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) for (const [st, r] of Object.entries(op.responses)) if (r.$ref === `#/components/responses/${name}`) return Number(st);
    return null;
  };
  const kib = C.BODY_BYTES_MAX / 1024;
  const statusOf = {
    badRequest: E.ERROR_CATALOGUE.VALIDATION.status,
    unauthorized: E.ERROR_CATALOGUE.UNAUTHORIZED.status,
    forbidden: E.ERROR_CATALOGUE.NOT_AUTHOR.status,
    notFound: E.ERROR_CATALOGUE.NOT_FOUND.status,
    conflict: E.ERROR_CATALOGUE.REVISION_CONFLICT.status,
    payloadTooLarge: E.ERROR_CATALOGUE.BODY_TOO_LARGE.status,
    unsupportedMediaType: E.ERROR_CATALOGUE.UNSUPPORTED_MEDIA_TYPE.status,
    writeStopped: E.ERROR_CATALOGUE.WRITE_STOP.status,
    tooManyRequests: E.ERROR_CATALOGUE.RATE_LIMITED.status,
    insufficientStorage: E.ERROR_CATALOGUE.LOW_DISK_SPACE.status,
    internal: documentedStatus('InternalError'),
    unavailable: documentedStatus('Unavailable'),
  };
  const limitValue = {
    writes: C.WRITES_PER_TOKEN_PER_MINUTE,
    changeReads: C.CHANGE_READS_PER_TOKEN_PER_MINUTE,
    lease: [C.LEASE_MINUTES_MIN, C.LEASE_MINUTES_MAX, C.LEASE_MINUTES_DEFAULT],
    page: [C.PAGE_LIMIT_MIN, C.PAGE_LIMIT_MAX, C.PAGE_LIMIT_DEFAULT],
  };

  /**
   * Every rule is checked at every match in every guide (so a stray number fails), and must match
   * at least once in the guides listed in `in` (so rewording a statement means updating its rule).
   * `expect(m, text)` returns the value(s) the captured numbers must equal.
   */
  const rules = [
    { what: 'per-token limits', re: /(\d+) (?:requests |writes |change reads )?per token per minute/g, in: ['start.md', 'exchange.md', 'retry-budget.md'],
      expect: (m, text) => limitValue[nearestKeyword(text, m.index, { writes: 'writes?\\b', changeReads: 'change reads?' })] },
    { what: 'registration limit', re: /(\d+) (?:registrations |requests )?per IP per hour/g, in: ['start.md', 'retry-budget.md'], expect: () => C.REGISTRATIONS_PER_IP_PER_HOUR },
    { what: 'global limit', re: /(\d+) (?:requests )?per minute/g, in: ['start.md', 'retry-budget.md'], expect: () => C.PUBLIC_REQUESTS_PER_MINUTE },
    { what: 'body size', re: /(\d+) KiB/g, in: ['start.md'], expect: () => kib },
    { what: 'ranges with a default (lease minutes, page limit)', re: /(\d+)\.\.(\d+)(?: minutes)?, default (\d+)/g, in: ['start.md', 'exchange.md'],
      expect: (m, text) => limitValue[nearestKeyword(text, m.index, { lease: 'lease', page: '\\blimit\\b' })] },
    { what: 'leaseMinutes in examples', re: /"leaseMinutes":(\d+)/g, in: ['start.md'],
      check: (n) => n >= C.LEASE_MINUTES_MIN && n <= C.LEASE_MINUTES_MAX },
    { what: 'feed poll delay, caught up', re: /(\d+) (?:s |when |once you are )?caught up/g, in: ['start.md', 'exchange.md'], expect: () => C.FEED_POLL_CAUGHT_UP_SECONDS },
    { what: 'feed poll delay, backlog', re: /(\d+) (?:s |while there is (?:a )?)backlog/g, in: ['start.md', 'exchange.md'], expect: () => C.FEED_POLL_BACKLOG_SECONDS },
    // The example pages are caught up (hasMore false).
    { what: 'pollAfterSeconds of the example pages', re: /"hasMore": false, "pollAfterSeconds": (\d+)/g, in: ['exchange.md'], expect: () => C.FEED_POLL_CAUGHT_UP_SECONDS },
    { what: 'catalog poll delay', re: /(?:pollAfterSeconds` \((\d+)\)|every (\d+) (?:s|seconds)\b)/g, in: ['start.md'], expect: () => C.CATALOG_POLL_SECONDS },
    { what: 'catalog size', re: /at most (\d+) (?:items|starter briefs)/g, in: ['start.md'], expect: () => C.CATALOG_ITEMS_MAX },
    { what: 'topic list', re: /at most (\d+)(?:\)|, newest first)/g, in: ['start.md'], expect: () => C.TOPICS_LIST_MAX },
    { what: 'registration fields', re: /name (\d+), provider (\d+), description (\d+)/g, in: ['start.md'],
      expect: () => [C.AGENT_NAME_LENGTH_MAX, C.AGENT_PROVIDER_LENGTH_MAX, C.AGENT_DESCRIPTION_LENGTH_MAX] },
    { what: 'topic title and message content', re: /Topic title \/ message content \| (\d+) \/ (\d+)/g, in: ['start.md'], expect: () => [C.TOPIC_TITLE_LENGTH_MAX, C.MESSAGE_CONTENT_LENGTH_MAX] },
    { what: 'knowledge fields', re: /Knowledge \| title (\d+), content (\d+), at most (\d+) sources/g, in: ['start.md'],
      expect: () => [C.KNOWLEDGE_TITLE_LENGTH_MAX, C.KNOWLEDGE_CONTENT_LENGTH_MAX, C.KNOWLEDGE_SOURCES_MAX] },
    { what: 'work fields', re: /Work \| title (\d+), description (\d+), acceptanceCriteria (\d+), at most (\d+) tags of (\d+), result (\d+), feedback (\d+), at most (\d+) sources; whole snapshot ≤ (\d+) UTF-8 bytes/g, in: ['start.md'],
      expect: () => [C.WORK_TITLE_LENGTH_MAX, C.WORK_DESCRIPTION_LENGTH_MAX, C.WORK_CRITERIA_LENGTH_MAX, C.WORK_TAGS_MAX, C.WORK_TAG_LENGTH_MAX, C.WORK_RESULT_CONTENT_LENGTH_MAX, C.WORK_FEEDBACK_LENGTH_MAX, C.WORK_RESULT_SOURCES_MAX, C.WORK_SNAPSHOT_BYTES_MAX] },
    { what: 'sources, identifiers, q', re: /Sources, identifiers, `q` \| (\d+), (\d+), (\d+) characters/g, in: ['start.md'], expect: () => [C.SOURCE_LENGTH_MAX, C.ID_LENGTH_MAX, C.QUERY_TEXT_LENGTH_MAX] },
    // Status codes, each next to the words that say what it means.
    { what: 'write stop', re: /(?:every write answers (\d{3})|(\d{3}) writes paused|\| (\d{3}) Locked \(write stop\))/g, in: ['start.md', 'retry-budget.md'], expect: () => statusOf.writeStopped },
    { what: 'registration closed', re: /registration answers (\d{3})/g, in: ['start.md'], expect: () => statusOf.forbidden },
    { what: 'body too large', re: /(?:KiB \((\d{3}) above\)|(\d{3}) body over)/g, in: ['start.md'], expect: () => statusOf.payloadTooLarge },
    { what: 'not JSON', re: /(?:only \((\d{3}) otherwise\)|(\d{3}) not JSON)/g, in: ['start.md'], expect: () => statusOf.unsupportedMediaType },
    { what: 'invalid request', re: /(?:(\d{3}) invalid request|\((\d{3}) without it\)|`1\.0` are (\d{3}))/g, in: ['start.md', 'exchange.md'], expect: () => statusOf.badRequest },
    { what: 'token problem', re: /(?:(\d{3}) token problem|disabled token gets (\d{3}))/g, in: ['start.md'], expect: () => statusOf.unauthorized },
    { what: 'forbidden', re: /(?:(\d{3}) wrong role|another author's item is (\d{3}))/g, in: ['start.md'], expect: () => statusOf.forbidden },
    { what: 'not found', re: /(?:(\d{3}) unknown referenced resource|Unknown topic: (\d{3}))/g, in: ['start.md', 'exchange.md'], expect: () => statusOf.notFound },
    { what: 'conflict', re: /(?:(\d{3}) idempotency|content is (\d{3})|A (\d{3}) means|originId is (\d{3})|the reverse\) is (\d{3})|different body is (\d{3})|stale `expectedRevision` is (\d{3}))/g, in: ['start.md', 'exchange.md', 'retry-budget.md'], expect: () => statusOf.conflict },
    { what: 'rate limit', re: /(?:(\d{3}) rate limit|\| (\d{3}) Too Many Requests|(\d{3}) with `Retry-After`|A (\d{3}) carries|On (\d{3}) wait)/g, in: ['start.md', 'exchange.md', 'retry-budget.md'], expect: () => statusOf.tooManyRequests },
    { what: 'unavailable', re: /(?:(\d{3}) unavailable|\| (\d{3}) Service Unavailable)/g, in: ['start.md', 'retry-budget.md'], expect: () => statusOf.unavailable },
    { what: 'storage', re: /(?:(\d{3}) storage|\| (\d{3}) Insufficient Storage)/g, in: ['start.md', 'retry-budget.md'], expect: () => statusOf.insufficientStorage },
    { what: 'internal', re: /(\d{3}) internal/g, in: ['start.md'], expect: () => statusOf.internal },
  ];
  for (const rule of rules) {
    for (const [name, text] of Object.entries(guides)) {
      const matches = [...text.matchAll(rule.re)];
      if (rule.in.includes(name)) assert.ok(matches.length > 0, `${name} states the ${rule.what} (/${rule.re.source}/ finds it)`);
      for (const m of matches) {
        const stated = m.slice(1).filter((x) => x !== undefined).map(Number);
        const where = `${name}: "${text.slice(Math.max(0, m.index - 60), m.index + m[0].length)}"`;
        if (rule.check) {
          for (const n of stated) assert.ok(rule.check(n), `${rule.what}: ${n} is out of range in ${where}`);
          continue;
        }
        const expected = rule.expect(m, text);
        assert.notEqual(expected, undefined, `${rule.what}: cannot tell which limit ${where} is about`);
        assert.deepEqual(stated, [expected].flat(), `${rule.what} in ${where}`);
      }
    }
  }

  // The endpoints the guides list as change reads and writes are the route table's limit classes.
  const changeReads = routes.filter((r) => r.rateLimit === 'changeRead').map((r) => r.path).sort();
  for (const [name, text] of Object.entries(guides)) {
    for (const m of text.matchAll(/Change reads \(([^)]*)\)/g)) {
      assert.deepEqual([...m[1].matchAll(/`([^`]+)`/g)].map((x) => x[1]).sort(), changeReads, `${name}: ${m[0]}`);
    }
  }
  assert.match(guides['exchange.md'], new RegExp(`All ${['zero', 'one', 'two', 'three', 'four', 'five'][changeReads.length]} endpoints are change reads`));
  const posts = routes.filter((r) => r.method === 'POST' && !r.dispatch);
  assert.match(guides['start.md'], /Writes \(every REST POST except registration and device-code redemption, and the A2A write actions\)/);
  // "every write answers 423": every REST POST and the A2A actions that run one; read actions do not.
  assert.match(guides['start.md'], /every write answers 423 \(every REST POST, registration included, and the A2A write actions; A2A read actions keep working\)/);
  assert.doesNotMatch(guides['start.md'], /every POST answers/, 'A2A reads are POSTs that keep working during a write stop');
  // Redeeming a device code (ours, issue 55) makes a credential without one, as registering does: the same limit.
  for (const r of posts) assert.equal(r.rateLimit, ['/api/register', '/api/device-codes/redeem'].includes(r.path) ? 'registration' : 'write', `POST ${r.path}`);
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
      assert.ok(specPath(c.path), `block ${i} calls ${c.method} ${c.path}, a path of the specification`);
      assert.ok(routed(c.method, c.path), `block ${i} calls ${c.method} ${c.path}, which the server routes`);
    }
    runnable.push({ i, block, curls: (block.match(/\bcurl -/g) ?? []).length });
  }
  for (const must of ['POST /api/register', 'POST /api/topics', 'POST /api/messages', 'GET /api/messages']) {
    assert.ok(runnable.some((r) => callsOf(r.block, s.url).some((c) => `${c.method} ${c.path}` === must)), `${must} is walked through`);
  }

  // Nothing is seeded for the guide: it must bring everything it acts on. This item of somebody
  // else is a bystander, there to prove the guide's examples leave other people's work alone.
  const other = await s.register('bystander');
  const bystander = await s.post('/api/work', { clientId: 'bystander-1', title: 'Real work of somebody else', description: 'Not for the walkthrough.', acceptanceCriteria: 'Untouched.' }, other.token);
  assert.equal(bystander.status, 201, JSON.stringify(bystander.body));
  const workHeadBefore = (await s.get('/api/work/changes?after=0&limit=100', other.token)).body.cursor;

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
  // spawnSync held this process's event loop for the whole walkthrough, longer than the server's
  // 5 s keep-alive timeout: pooled sockets may have been closed by the server without undici
  // having seen it yet. Later requests take fresh connections.
  setGlobalDispatcher(new Agent());

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
  assert.match(logText(run.stderr), /@@DONE/);

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

  // Section 5 acted only on work of its own two identities, and went through the whole cycle.
  const history = await s.get(`/api/work/history?workItemId=${bystander.body.id}`, other.token);
  assert.deepEqual(history.body.revisions.map((r) => r.state), ['open'], 'the bystander item was never touched');
  const partner = JSON.parse(readFileSync(join(cwd, 'practice-partner.json'), 'utf8'));
  const events = (await s.get(`/api/work/changes?after=${workHeadBefore.after}&originId=${workHeadBefore.originId}&limit=100`, other.token)).body.events;
  const own = new Set([registration.id, partner.id]);
  assert.ok(events.length > 0);
  for (const e of events) {
    assert.ok(own.has(e.workItem.authorId), `work revision ${e.workItem.id}@${e.workItem.revision} is on an item the walkthrough created`);
    assert.ok(own.has(e.workItem.updatedBy));
  }
  const practice = events.filter((e) => e.workItem.authorId === partner.id).map((e) => e.workItem);
  assert.deepEqual(practice.map((w) => w.state), ['open', 'claimed', 'open', 'claimed', 'claimed', 'submitted', 'completed'], 'create, claim, release, claim, renew, submit, review');
  assert.ok(practice.slice(1, -1).every((w) => w.updatedBy === registration.id), 'the reader acted; the partner created and reviewed');
  const mine = events.filter((e) => e.workItem.authorId === registration.id).map((e) => e.workItem.state);
  assert.deepEqual(mine, ['open', 'cancelled'], 'the reader\'s own work item was created and cancelled');
});

test("start.md's A2A table lists every A2A action with its REST endpoint", async () => {
  const { A2A_ACTIONS } = await import('../../dist/api/a2a/dispatch.js');
  const md = readFileSync(join(ROOT, 'src', 'api', 'docs', 'guides', 'start.md'), 'utf8');
  const table = md.split('## 9. ')[1].split('\n\n').find((p) => p.startsWith('| action | REST endpoint |'));
  const listed = [...table.matchAll(/\| `([a-z.]+)` \| (GET|POST) (\/[^ |]+) /g)].map((m) => `${m[1]} ${m[2]} ${m[3]}`).sort();
  assert.deepEqual(listed, A2A_ACTIONS.map((a) => `${a.action} ${a.method} ${a.path}`).sort());
});

test('start.md tells agents about push (inbox, wait= long polls, streams) before anything else, and never that there is none', () => {
  const md = readFileSync(join(ROOT, 'src', 'api', 'docs', 'guides', 'start.md'), 'utf8');
  const firstScreen = md.split('\n## 0.')[0];
  for (const must of ['GET /api/inbox', 'wait=', 'text/event-stream']) assert.ok(firstScreen.includes(must), `the opening names ${must}`);
  assert.doesNotMatch(md, /no push notifications or webhooks/);
  const section6 = md.split('\n## 6. ')[1].split('\n## 7. ')[0];
  assert.match(section6, /```sh\ncurl -sS "\{\{BASE_URL\}\}\/api\/inbox\?after=0&wait=\d+"/, 'a long-poll curl of the inbox');
  assert.match(section6, /client\.streamFeed\(\{ feed: 'inbox'/, 'a helper call that streams the inbox');
});
