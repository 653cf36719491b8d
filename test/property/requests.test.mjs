/**
 * Property-based tests (fast-check) over every route of the table: random and mutated bodies and
 * query strings never produce a 500, always give an {error} body with a 4xx when refused, and a
 * refused request never writes a record.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { publicRoutes } from '../../dist/api/routes.js';
import { getSchema } from '../../dist/http/validate.js';
import { startInProcess } from '../helpers/inprocess.mjs';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 40);

/** Arbitrary values that stress types, lengths, Unicode and patterns. */
const anyValue = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom('', ' ', 'commons', 'tp_0000000003', 'https://example.org', 'http://', 'javascript:alert(1)', '../../etc/passwd', '\u0000', 'a'.repeat(200)),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 10 }), { maxLength: 12 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);

function propertyNames(schemaName) {
  const s = getSchema(schemaName);
  const names = new Set(Object.keys(s.properties ?? {}));
  for (const alt of s.oneOf ?? []) for (const k of Object.keys(getSchema(alt.$ref)?.properties ?? {})) names.add(k);
  return [...names];
}

/** Bodies: the schema's example with fields mutated, dropped or added, or arbitrary JSON. */
function bodyArbitrary(schemaName) {
  const example = getSchema(schemaName)['x-example'] ?? {};
  const names = propertyNames(schemaName);
  const key = fc.oneof(fc.constantFrom(...(names.length ? names : ['x'])), fc.string({ maxLength: 8 }));
  const mutated = fc.tuple(fc.dictionary(key, anyValue, { maxKeys: 4 }), fc.subarray(Object.keys(example))).map(([changes, drop]) => {
    const body = { ...example, ...changes };
    for (const k of drop) delete body[k];
    return JSON.stringify(body);
  });
  return fc.oneof(mutated, fc.json({ maxDepth: 3 }), fc.string({ maxLength: 40 }));
}

function queryArbitrary(schemaName) {
  const names = schemaName ? propertyNames(schemaName) : [];
  const key = fc.oneof(fc.constantFrom(...(names.length ? names : ['x'])), fc.string({ maxLength: 6 }));
  const value = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('0', '1', '01', '-1', '1e3', '100', '101', 'true', 'yes', '9007199254740992', '2026-01-01T00:00:00Z'));
  return fc.array(fc.tuple(key, value), { maxLength: 5 }).map((pairs) => new URLSearchParams(pairs).toString());
}

/**
 * A refusal is a 4xx with {error: "..."}, or a google.rpc.Status on routes with their own error
 * format (A2A). On POST /mcp a protocol error the MCP SDK transport finds in the message itself
 * (malformed JSON-RPC, batch rules) is a JSON-RPC error response {jsonrpc, error: {code, message}},
 * as the MCP transport spec shows it; refusals of the pipeline (auth, size, type) stay {error: "..."}.
 */
function assertRefusalShape(res, what, route) {
  assert.ok(res.status < 500, `${what} gave ${res.status}: ${JSON.stringify(res.body)}`);
  if (res.status >= 400) {
    if (route?.errorFormat) assert.equal(typeof res.body?.error?.message, 'string', `${what}: 4xx without {error: {message}}`);
    else if (route?.path === '/mcp' && res.body?.jsonrpc === '2.0') assert.ok(Number.isInteger(res.body.error?.code) && typeof res.body.error.message === 'string', `${what}: JSON-RPC error without code and message`);
    else assert.equal(typeof res.body?.error, 'string', `${what}: 4xx without {error}`);
  }
}

test('random and mutated bodies on every POST route never give 500 and never write when refused', async (t) => {
  const h = await startInProcess(t);
  const agent = await h.register('fuzzer');
  const posts = publicRoutes().filter((r) => r.method === 'POST' && r.body);
  assert.ok(posts.length >= 4, 'the POST routes are found');
  for (const route of posts) {
    await fc.assert(
      fc.asyncProperty(bodyArbitrary(route.body), async (raw) => {
        const before = h.app.log.headSeq;
        const res = await h.request('POST', route.path, { raw, token: agent.token, headers: { 'content-type': 'application/json', 'a2a-version': '1.0', accept: 'application/json, text/event-stream' } });
        assertRefusalShape(res, `POST ${route.path} ${raw.slice(0, 80)}`, route);
        if (res.status >= 400) assert.equal(h.app.log.headSeq, before, `refused POST ${route.path} wrote a record`);
      }),
      { numRuns: RUNS },
    );
  }
});

test('random query strings on every GET route never give 500', async (t) => {
  const h = await startInProcess(t);
  const agent = await h.register('fuzzer');
  const gets = publicRoutes().filter((r) => r.method === 'GET' && !r.path.endsWith('/*'));
  for (const route of gets) {
    await fc.assert(
      fc.asyncProperty(queryArbitrary(route.query), async (qs) => {
        const before = h.app.log.headSeq;
        const res = await h.get(`${route.path}?${qs}`, agent.token);
        assertRefusalShape(res, `GET ${route.path}?${qs}`, route);
        assert.equal(h.app.log.headSeq, before, 'a read wrote a record');
      }),
      { numRuns: RUNS },
    );
  }
});
