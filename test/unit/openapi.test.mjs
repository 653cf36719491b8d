/**
 * The OpenAPI generator is generic: any route with schema names is documented from the table
 * alone (routes other areas add appear without touching the generator), and a table it cannot
 * document faithfully stops startup.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ROOT } from '../helpers/server.mjs';

const { buildOpenApi, errorStatuses, toComponentSchema, withServer } = await import(pathToFileURL(join(ROOT, 'dist', 'api', 'docs', 'openapi.js')).href);

const schemas = new Map([
  ['Error', { $id: 'Error', $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', required: ['error'], properties: { error: { type: 'string' } } }],
  ['Id', { $id: 'Id', type: 'string', pattern: '^[a-zA-Z0-9_-]+$' }],
  ['Thing', {
    $id: 'Thing', type: 'object',
    properties: { id: { $ref: 'Id' }, default: { $ref: '#/$defs/Part' }, parts: { type: 'array', items: { $ref: '#/$defs/Part' } } },
    $defs: { Part: { type: 'object', properties: { owner: { $ref: 'Id' } } } },
    'x-example': { id: 'th_1' },
  }],
  ['ThingQuery', { $id: 'ThingQuery', type: 'object', required: ['id'], properties: { id: { $ref: 'Id', description: 'Which thing.' }, limit: { type: 'integer', minimum: 1, maximum: 100, default: 50 } } }],
]);

const route = (over) => ({ method: 'GET', path: '/api/things', auth: 'bearer', operationId: 'listThings', summary: 'Things.', tag: 'Things', responses: { 200: { description: 'ok', schema: 'Thing' } }, handler: () => ({ status: 200 }), ...over });

test('a new area\'s routes are documented from the table alone, and the document validates', async () => {
  const doc = withServer(buildOpenApi([
    route({ query: 'ThingQuery', rateLimit: 'changeRead', errors: [404, 409] }),
    route({ method: 'POST', operationId: 'createThing', body: 'Thing', rateLimit: 'write', responses: { 201: { description: 'made', schema: 'Thing' } } }),
  ], schemas), 'http://forum.test');
  const get = doc.paths['/api/things'].get;
  assert.deepEqual(get.parameters[0], { name: 'id', in: 'query', required: true, schema: { $ref: '#/components/schemas/Id' }, description: 'Which thing.' });
  assert.deepEqual(Object.keys(get.responses), ['200', '400', '401', '403', '404', '409', '429', '500', '503']);
  assert.match(get.description, /60 per token per minute/);
  const post = doc.paths['/api/things'].post;
  assert.deepEqual(post.requestBody.content['application/json'], { schema: { $ref: '#/components/schemas/Thing' }, example: { id: 'th_1' } });
  assert.deepEqual(doc.tags, [{ name: 'Things' }]);
  assert.equal(doc.servers[0].url, 'http://forum.test');
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors));
});

test('schema references are rewritten to components, including local $defs pointers', () => {
  const thing = toComponentSchema(schemas.get('Thing'), 'Thing', new Set(schemas.keys()));
  assert.equal(thing.$id, undefined);
  assert.deepEqual(thing.properties.id, { $ref: '#/components/schemas/Id' });
  assert.deepEqual(thing.properties.default, { $ref: '#/components/schemas/Thing/$defs/Part' }, 'a property named like a keyword is still a schema');
  assert.deepEqual(thing.properties.parts.items, { $ref: '#/components/schemas/Thing/$defs/Part' });
  assert.deepEqual(thing.$defs.Part.properties.owner, { $ref: '#/components/schemas/Id' });
  assert.deepEqual(thing['x-example'], { id: 'th_1' }, 'examples are data and copied verbatim');
  assert.throws(() => toComponentSchema({ $ref: 'Nope' }, 'X', new Set(schemas.keys())), /\$ref "Nope" names no schema/);
});

test('a table the generator cannot document faithfully is refused', () => {
  assert.throws(() => buildOpenApi([route({ path: '/files/*' })], schemas), /must list its concrete files/);
  assert.throws(() => buildOpenApi([route({ path: '/files/*', files: [{ path: '/other/a.txt', contentType: 'text/plain' }] })], schemas), /not under \/files\/\*/);
  assert.throws(() => buildOpenApi([route({}), route({ path: '/api/other' })], schemas), /duplicate operationId listThings/);
  assert.throws(() => buildOpenApi([route({ query: 'Missing' })], schemas), /query schema "Missing"/);
  assert.throws(() => buildOpenApi([route({ errors: [418] })], schemas), /no documented error response for status 418/);
  assert.throws(() => buildOpenApi([route({ method: '*', path: '/rpc/*' })], schemas), /must be a prefix route listing its operations/);
  const op = { method: 'GET', path: '/elsewhere/x', operationIdSuffix: 'X', summary: 'x', errors: [404] };
  assert.throws(() => buildOpenApi([route({ method: '*', path: '/rpc/*', operations: [op] })], schemas), /not under \/rpc\/\*/);
  assert.throws(() => buildOpenApi([route({ errorFormat: { schema: 'Missing', render: () => '' } })], schemas), /error format schema "Missing"/);
});

test('a catch-all route documents each of its operations, and an error format gets its own error responses', async () => {
  const withFormat = new Map([...schemas, ['RpcError', { $id: 'RpcError', type: 'object', properties: { error: { type: 'object' } } }]]);
  const errorFormat = { schema: 'RpcError', render: () => '{}' };
  const doc = withServer(buildOpenApi([
    route({ method: 'POST', path: '/rpc/send', operationId: 'rpcSend', body: 'Thing', errorFormat }),
    route({
      method: '*', path: '/rpc/*', operationId: 'rpcOther', responses: {}, errorFormat,
      operations: [
        { method: 'GET', path: '/rpc/tasks/{id}', operationIdSuffix: 'GetTask', summary: 'Never found.', errors: [404] },
        { method: 'DELETE', path: '/rpc/tasks/{id}/configs/{configId}', operationIdSuffix: 'DeleteConfig', summary: 'Unsupported.', errors: [400] },
      ],
    }),
  ], withFormat), 'http://forum.test');
  assert.deepEqual(doc.paths['/rpc/send'].post.responses['400'], { $ref: '#/components/responses/RpcErrorBadRequest' });
  assert.deepEqual(doc.components.responses.RpcErrorBadRequest.content['application/json'].schema, { $ref: '#/components/schemas/RpcError' });
  assert.deepEqual(doc.components.responses.BadRequest.content['application/json'].schema, { $ref: '#/components/schemas/Error' });
  const get = doc.paths['/rpc/tasks/{id}'].get;
  assert.equal(get.operationId, 'rpcOtherGetTask');
  assert.deepEqual(get.parameters, [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }]);
  assert.deepEqual(Object.keys(get.responses), ['401', '404', '429', '500', '503']);
  assert.deepEqual(get.responses['404'], { $ref: '#/components/responses/RpcErrorNotFound' });
  assert.deepEqual(doc.paths['/rpc/tasks/{id}/configs/{configId}'].delete.parameters.map((p) => p.name), ['id', 'configId']);
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors));
});

test('a prefix route documents each of its files with its own content type', () => {
  const doc = buildOpenApi([route({
    path: '/files/*', auth: 'public', operationId: 'getFile', summary: 'A file', responses: { 200: { description: 'file' } }, errors: [404],
    files: [{ path: '/files/a.css', contentType: 'text/css; charset=utf-8' }, { path: '/files/b.png', contentType: 'image/png' }],
  })], schemas);
  assert.deepEqual(Object.keys(doc.paths), ['/files/a.css', '/files/b.png']);
  assert.equal(doc.paths['/files/a.css'].get.operationId, 'getFileACss');
  assert.deepEqual(doc.paths['/files/a.css'].get.responses['200'].content, { 'text/css': { schema: { type: 'string' } } });
  assert.deepEqual(doc.paths['/files/b.png'].get.responses['200'].content, { 'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } } });
  assert.deepEqual(doc.paths['/files/b.png'].get.security, []);
});

test('error statuses follow part 7 per method; 401 only where a token is checked', () => {
  assert.deepEqual(errorStatuses(route({ method: 'POST', auth: 'public' })), [400, 403, 404, 409, 413, 415, 423, 429, 500, 503, 507]);
  assert.deepEqual(errorStatuses(route({ method: 'POST' })), [400, 401, 403, 404, 409, 413, 415, 423, 429, 500, 503, 507]);
  assert.deepEqual(errorStatuses(route({})), [400, 401, 403, 429, 500, 503]);
  assert.deepEqual(errorStatuses(route({ auth: 'public', responses: { 200: { description: 'a guide', contentType: 'text/markdown' } } })), [429, 500, 503]);
  // A JSON document with a schema that answers conditional GETs (the agent card) is a static document too.
  const card = { 200: { description: 'a card', schema: 'Thing', headers: ['ETag'] }, 304: { description: 'not modified' } };
  assert.deepEqual(errorStatuses(route({ auth: 'public', responses: card })), [429, 500, 503]);
});

test('a route\'s handler-read headers and query parameters become parameters with their example, before the query schema\'s', async () => {
  const header = { name: 'X-Proto-Version', in: 'header', required: true, description: 'Protocol version.', schema: { type: 'string', pattern: '^1\\.0$' }, example: '1.0' };
  const query = { ...header, in: 'query', required: false, description: 'The same, as a query parameter.' };
  const doc = withServer(buildOpenApi([route({ method: 'POST', operationId: 'send', body: 'Thing', parameters: [header, query] }), route({ query: 'ThingQuery', parameters: [header] })], schemas), 'http://forum.test');
  const post = doc.paths['/api/things'].post;
  assert.deepEqual(post.parameters, [
    { name: 'X-Proto-Version', in: 'header', required: true, description: 'Protocol version.', schema: { type: 'string', pattern: '^1\\.0$' }, example: '1.0' },
    { name: 'X-Proto-Version', in: 'query', required: false, description: 'The same, as a query parameter.', schema: { type: 'string', pattern: '^1\\.0$' }, example: '1.0' },
  ]);
  // The route's own parameters first, then the query schema's parameters.
  assert.deepEqual(doc.paths['/api/things'].get.parameters.map((p) => `${p.in}:${p.name}`), ['header:X-Proto-Version', 'query:id', 'query:limit']);
  assert.equal(doc.paths['/api/things'].get.parameters[0].schema === header.schema, false, 'the route\'s schema object is copied, not shared');
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors));
  // A parameter the query schema already documents would describe one value twice.
  assert.throws(() => buildOpenApi([route({ query: 'ThingQuery', parameters: [{ ...query, name: 'limit' }] })], schemas), /parameter limit \(in query\) is documented twice/);
});

test('a discriminator without mapping gets the mapping derived from its oneOf variants; an underivable one is refused', async () => {
  const variant = (name, value) => [name, { $id: name, type: 'object', required: ['kind'], properties: { kind: { const: value }, n: { type: 'integer' } } }];
  const withUnion = new Map([
    ...schemas,
    variant('PingInput', 'ping'),
    variant('PongInput', 'pong'),
    ['AnyInput', { $id: 'AnyInput', type: 'object', required: ['kind'], discriminator: { propertyName: 'kind' }, oneOf: [{ $ref: 'PingInput' }, { $ref: 'PongInput' }] }],
  ]);
  const doc = withServer(buildOpenApi([route({ method: 'POST', operationId: 'any', body: 'AnyInput' })], withUnion), 'http://forum.test');
  assert.deepEqual(doc.components.schemas.AnyInput.discriminator, {
    propertyName: 'kind',
    mapping: { ping: '#/components/schemas/PingInput', pong: '#/components/schemas/PongInput' },
  });
  assert.equal(withUnion.get('AnyInput').discriminator.mapping, undefined, 'the loaded schema (ajv\'s input) is not touched');
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors));

  const broken = new Map([...withUnion, ['PongInput', { $id: 'PongInput', type: 'object', properties: { kind: { type: 'string' } } }]]);
  assert.throws(() => buildOpenApi([route({})], broken), /schema AnyInput: discriminator "kind": every oneOf entry must reference a schema whose "kind" is a const or enum/);
  const twice = new Map([...withUnion, variant('PongInput', 'ping')]);
  assert.throws(() => buildOpenApi([route({})], twice), /discriminator value "ping" maps to two schemas/);
});

test('success responses of rate-limited routes carry the RateLimit and RateLimit-Policy fields and the deprecated RateLimit-Limit/-Remaining/-Reset; so does 429', async () => {
  const doc = withServer(buildOpenApi([
    route({ method: 'POST', operationId: 'createThing', body: 'Thing', rateLimit: 'write', responses: { 201: { description: 'made', schema: 'Thing' } } }),
    route({ query: 'ThingQuery' }),
    route({ path: '/api/thing-changes', operationId: 'thingChanges', rateLimit: 'changeRead', responses: { 200: { description: 'ok', schema: 'Thing', headers: ['ETag'] } } }),
  ], schemas), 'http://forum.test');
  const names = ['RateLimit', 'RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];
  const refs = (list) => Object.fromEntries(list.map((n) => [n, { $ref: `#/components/headers/${n}` }]));
  assert.deepEqual(doc.paths['/api/things'].post.responses['201'].headers, refs(names));
  assert.deepEqual(doc.paths['/api/thing-changes'].get.responses['200'].headers, refs(['ETag', ...names]));
  assert.equal(doc.paths['/api/things'].get.responses['200'].headers, undefined, 'a route without a limit class reports no RateLimit-* headers');
  assert.deepEqual(Object.keys(doc.components.responses.TooManyRequests.headers), ['Retry-After', ...names]);
  assert.deepEqual(doc.components.headers['RateLimit-Policy'].schema, { type: 'string', pattern: '^"[A-Za-z]+";q=[0-9]+;w=[0-9]+$' });
  assert.deepEqual(doc.components.headers.RateLimit.schema, { type: 'string', pattern: '^"[A-Za-z]+";r=[0-9]+;t=[0-9]+$' });
  for (const old of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) assert.equal(doc.components.headers[old].deprecated, true, `${old} is documented as deprecated`);
  for (const current of ['RateLimit', 'RateLimit-Policy']) assert.equal(doc.components.headers[current].deprecated, undefined);
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors));
});

test('a dispatching route\'s successes carry the RateLimit fields when an action it dispatches runs a rate-limited route', async () => {
  const dispatches = [
    { name: 'make', method: 'POST', path: '/api/things' },
    { name: 'list', method: 'GET', path: '/api/things' },
    { name: 'gone', method: 'POST', path: '/api/not-installed' },
  ];
  const rpc = (over) => route({ method: 'POST', path: '/rpc/send', operationId: 'rpcSend', body: 'Thing', dispatch: true, dispatches, ...over });
  const table = [route({ method: 'POST', operationId: 'createThing', body: 'Thing', rateLimit: 'write', responses: { 201: { description: 'made', schema: 'Thing' } } }), route({ query: 'ThingQuery' })];
  const doc = withServer(buildOpenApi([...table, rpc({})], schemas), 'http://forum.test');
  const send = doc.paths['/rpc/send'].post;
  assert.deepEqual(Object.keys(send.responses['200'].headers), ['RateLimit', 'RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
  assert.equal(send.description, 'Action `make` counts toward the write limit: 30 per token per minute. A success of such an action carries the RateLimit and RateLimit-Policy fields of its limit; the other actions count toward none of these limits and send none.');
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors));
  // Without a limited target there is nothing to report.
  const unlimited = buildOpenApi([table[1], rpc({})], schemas).paths['/rpc/send'].post;
  assert.equal(unlimited.responses['200'].headers, undefined);
  assert.equal(unlimited.description, undefined);
});

test('info.description links to the guides absolutely under the public base URL, also with a path prefix', () => {
  const doc = buildOpenApi([route({})], schemas);
  const served = withServer(doc, 'https://host.example/forum');
  const links = [...served.info.description.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]);
  assert.ok(links.length >= 5, served.info.description);
  for (const l of links) assert.match(l, /^https:\/\/host\.example\/forum\/api\//);
  assert.ok(links.includes('https://host.example/forum/api/start.md'));
  assert.doesNotMatch(JSON.stringify(served), /\{\{BASE_URL\}\}/);
  assert.deepEqual(served.servers, [{ url: 'https://host.example/forum', description: 'This service (FORUM_PUBLIC_URL)' }]);
  assert.notEqual(served.info, doc.info, 'the shared document is not mutated');
});
