/**
 * Issue 28 item 7: a malformed percent-escape anywhere in a request target — a `%` without two hex
 * digits, or escapes that are not UTF-8 — is answered 400 BAD_TARGET on every route of the
 * public table, in the path and in the query string, never 500 and never silently decoded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { sharedServer } from '../helpers/server.mjs';

const server = sharedServer();
const BAD_ESCAPES = ['%E0%A4%A', '%ZZ', '%FF', '%C3', '%ED%A0%80', '100%'];

/** The error code of an answer: `code` of {error, code}, or the ErrorInfo reason of A2A's google.rpc.Status. */
function codeOf(body) {
  if (typeof body.code === 'string') return body.code;
  return body.error?.details?.find((d) => d['@type']?.endsWith('ErrorInfo'))?.reason;
}

/** Sends `method path` (the target exactly as given) and resolves to { status, body }. */
async function send(base, method, path, token) {
  const headers = { authorization: `Bearer ${token}` };
  if (method === 'POST') headers['content-type'] = 'application/json';
  const res = await request(base + path, { method, headers, body: method === 'POST' ? '{}' : undefined });
  const text = await res.body.text();
  return { status: res.statusCode, text };
}

test('every operation of /openapi.json answers 400 BAD_TARGET to a malformed escape in its path and in its query string', async () => {
  const s = await server();
  const { token } = await s.register('escapes');
  const doc = (await s.get('/openapi.json')).body;
  let checked = 0;
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item).map((m) => m.toUpperCase())) {
      for (const bad of BAD_ESCAPES) {
        // In a path parameter where the operation has one, else appended to its last segment.
        const inPath = template.includes('{') ? template.replace(/\{[^}]+\}/g, bad) : `${template}${template.endsWith('/') ? '' : '/'}x${bad}`;
        const concrete = template.replace(/\{[^}]+\}/g, 'id1');
        for (const target of [inPath, `${concrete}?x=${bad}`, `${concrete}?q=a&x=y${bad}z`]) {
          const res = await send(s.url, method, target, token);
          let body;
          assert.doesNotThrow(() => (body = JSON.parse(res.text)), `${method} ${target}: not JSON: ${res.text.slice(0, 200)}`);
          assert.equal(res.status, 400, `${method} ${target}: ${res.text.slice(0, 300)}`);
          assert.equal(codeOf(body), 'BAD_TARGET', `${method} ${target}: ${res.text.slice(0, 300)}`);
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 300, `only ${checked} targets checked`);
  assert.doesNotMatch(s.stderr + s.stdout, /internal_error/);
});

test('an A2A task path with a malformed escape is answered in the A2A error format with reason BAD_TARGET', async () => {
  const s = await server();
  const { token } = await s.register('escapes-a2a');
  for (const path of ['/a2a/tasks/%E0%A4%A', '/a2a/tasks/%ZZ', '/a2a/tasks/%FF:cancel']) {
    const res = await send(s.url, path.endsWith(':cancel') ? 'POST' : 'GET', path, token);
    const body = JSON.parse(res.text);
    assert.equal(res.status, 400, res.text);
    assert.equal(body.error?.status, 'INVALID_ARGUMENT', res.text);
    assert.equal(codeOf(body), 'BAD_TARGET');
  }
});

test('well-formed escapes still pass: UTF-8 escapes and %25 for a literal percent sign', async () => {
  const s = await server();
  const { token } = await s.register('escapes-ok');
  for (const qs of ['q=%E2%82%AC', 'q=100%25', 'q=%F0%9F%98%80', 'q=%c3%a4']) assert.equal((await s.get(`/api/messages?${qs}`, token)).status, 200, qs);
  assert.equal((await s.get('/api/status?x=%41')).status, 200);
});
