/**
 * Issue 28 item 6: the replies Node's HTTP server would write itself (a missing Host, an Expect it
 * cannot meet, CONNECT, parser errors) carry the service's headers and `{error, code}` body like
 * every other answer: X-Request-Id, nosniff, JSON, CORS when the request has Origin.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { sharedServer } from '../helpers/server.mjs';
import { rawExchange } from '../helpers/raw.mjs';

const server = sharedServer();

/** The first response in `out`: { status, headers (lower-case names), body (parsed JSON) }. */
function parse(out) {
  const end = out.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no response head in ${JSON.stringify(out.slice(0, 200))}`);
  const [statusLine, ...lines] = out.slice(0, end).split('\r\n');
  const headers = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const text = out.slice(end + 4, end + 4 + Number(headers['content-length']));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(text) };
}

/** Asserts the headers and body shape every error answer of the service has. */
function assertServiceError(res, status, code) {
  assert.equal(res.status, status);
  assert.equal(res.body.code, code);
  assert.equal(typeof res.body.error, 'string');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.match(res.headers['content-type'], /^application\/json/);
  assert.match(res.headers['x-request-id'] ?? '', /^[A-Za-z0-9._:-]+$/);
}

test('an HTTP/1.1 request without Host gets 400 MALFORMED_REQUEST with the service headers, the client request id and CORS', async () => {
  const s = await server();
  const out = await rawExchange(s.url, ['GET /api/status HTTP/1.1\r\nOrigin: https://example.org\r\nX-Request-Id: no-host-1\r\n\r\n'], { endAfter: false });
  const res = parse(out);
  assertServiceError(res, 400, 'MALFORMED_REQUEST');
  assert.match(res.body.error, /Host/);
  assert.equal(res.headers['x-request-id'], 'no-host-1');
  assert.equal(res.headers['access-control-allow-origin'], '*');
  assert.equal(res.headers.connection, 'close');
});

test('a request with two Host headers gets 400 MALFORMED_REQUEST; HTTP/1.0 without Host is served', async () => {
  const s = await server();
  assertServiceError(parse(await rawExchange(s.url, ['GET /api/status HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'], { endAfter: false })), 400, 'MALFORMED_REQUEST');
  const ok = await rawExchange(s.url, ['GET /api/status HTTP/1.0\r\n\r\n'], { endAfter: false });
  assert.match(ok, /^HTTP\/1.1 200 /);
});

test('Expect other than 100-continue gets 417 EXPECTATION_FAILED with the service headers, the client request id and CORS', async () => {
  const s = await server();
  const out = await rawExchange(s.url, ['GET /api/status HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nOrigin: https://example.org\r\nX-Request-Id: teapot-1\r\n\r\n'], { endAfter: false });
  const res = parse(out);
  assertServiceError(res, 417, 'EXPECTATION_FAILED');
  assert.equal(res.headers['x-request-id'], 'teapot-1');
  assert.equal(res.headers['access-control-allow-origin'], '*');
});

test('Expect: 100-continue still gets 100 Continue and then the answer', async () => {
  const s = await server();
  const body = JSON.stringify({ name: 'continue', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true });
  const { port } = new URL(s.url);
  const sock = connect(Number(port), '127.0.0.1');
  let out = '';
  const done = new Promise((resolve) => sock.on('close', resolve));
  sock.on('data', (d) => {
    out += d;
    if (out.startsWith('HTTP/1.1 100 Continue\r\n\r\n') && !sock.sentBody) {
      sock.sentBody = true;
      sock.write(body);
    }
  });
  sock.write(`POST /api/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
  await done;
  assert.match(out, /^HTTP\/1.1 100 Continue\r\n\r\nHTTP\/1.1 201 /);
});

test('Expect: 100-continue with a Content-Length over 32 KiB gets an immediate 413 (no 100 Continue) and the connection closes', async () => {
  const s = await server();
  // The body is never sent: the server must answer from the head alone, then close.
  const out = await rawExchange(s.url, [`POST /api/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${40 * 1024}\r\nExpect: 100-continue\r\nX-Request-Id: big-continue-1\r\n\r\n`], { endAfter: false });
  assert.doesNotMatch(out, /100 Continue/);
  const res = parse(out);
  assertServiceError(res, 413, 'BODY_TOO_LARGE');
  assert.equal(res.headers['x-request-id'], 'big-continue-1');
  assert.equal(res.headers.connection, 'close');
});

test('CONNECT gets 405 METHOD_NOT_ALLOWED with the service headers instead of a dropped connection', async () => {
  const s = await server();
  const res = parse(await rawExchange(s.url, ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nX-Request-Id: connect-1\r\n\r\n'], { endAfter: false }));
  assertServiceError(res, 405, 'METHOD_NOT_ALLOWED');
  assert.equal(res.headers['x-request-id'], 'connect-1');
  assert.ok(res.headers.allow);
});

test("the HTTP parser's own refusals (garbage, header overflow, conflicting framing) carry the service headers and a code", async () => {
  const s = await server();
  const flood = Array.from({ length: 400 }, (_, i) => `X-Flood-${i}: ${'y'.repeat(60)}\r\n`).join('');
  const cases = [
    ['XXXX garbage\r\n\r\n', 400, 'MALFORMED_REQUEST'],
    [`GET /api/status HTTP/1.1\r\nHost: x\r\n${flood}\r\n`, 431, 'HEADERS_TOO_LARGE'],
    ['POST /api/register HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'MALFORMED_REQUEST'],
  ];
  for (const [raw, status, code] of cases) assertServiceError(parse(await rawExchange(s.url, [raw], { endAfter: false })), status, code);
});
