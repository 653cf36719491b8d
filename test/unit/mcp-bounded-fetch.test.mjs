/**
 * The stdio MCP server's bounded fetch (src/mcp/bounded-fetch.ts, issue 51 defect 5): answers
 * within the bound come back whole with their status and headers; a body that passes the bound
 * while it streams, or a Content-Length over it, is refused with AnswerTooLargeError and the
 * body is cancelled, not read to its end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AnswerTooLargeError, answerTooLarge, boundedFetch } from '../../dist/mcp/bounded-fetch.js';

/** A fetch stand-in answering `chunks` (a body stream) and counting how many chunks were pulled. */
function fakeFetch(chunks, { status = 200, headers = {} } = {}) {
  const seen = { pulled: 0, cancelled: false, signal: null };
  const impl = async (_url, init) => {
    seen.signal = init.signal;
    let i = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (i === chunks.length) return controller.close();
        seen.pulled++;
        controller.enqueue(chunks[i++]);
      },
      cancel() { seen.cancelled = true; },
    }, { highWaterMark: 0 });
    return new Response(body, { status, headers });
  };
  return { impl, seen };
}

test('an answer within the bound comes back whole, with its status and headers', async () => {
  const { impl } = fakeFetch([Buffer.from('{"error":"no",'), Buffer.from('"code":"X"}')], { status: 429, headers: { 'retry-after': '7', 'content-type': 'application/json' } });
  const res = await boundedFetch(100, impl)('http://127.0.0.1/x', {});
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('retry-after'), '7');
  assert.deepEqual(await res.json(), { error: 'no', code: 'X' });
});

test('a body that passes the bound while streaming is refused and the rest is never pulled', async () => {
  const chunk = new Uint8Array(40);
  const { impl, seen } = fakeFetch(Array.from({ length: 1000 }, () => chunk));
  const err = await boundedFetch(100, impl)('http://127.0.0.1/x', {}).catch((e) => e);
  assert.ok(err instanceof AnswerTooLargeError);
  assert.equal(err.limitBytes, 100);
  assert.match(err.message, /passed 100 bytes.*MCP_STDIO_ANSWER_BYTES_MAX/);
  assert.ok(seen.pulled <= 4, `pulled ${seen.pulled} chunks of 40 bytes for a 100-byte bound`);
  assert.equal(seen.cancelled, true);
  assert.equal(seen.signal.aborted, true, 'the request is aborted (the connection closes)');
});

test('a Content-Length over the bound is refused before any of the body is read', async () => {
  const { impl, seen } = fakeFetch([new Uint8Array(10)], { headers: { 'content-length': '5000' } });
  const err = await boundedFetch(100, impl)('http://127.0.0.1/x', {}).catch((e) => e);
  assert.ok(err instanceof AnswerTooLargeError);
  assert.equal(err.declaredBytes, 5000);
  assert.equal(seen.pulled, 0);
});

test('answerTooLarge finds the refusal under the client helper\'s wrapping errors, and nothing else', () => {
  const inner = new AnswerTooLargeError(100, null);
  const wrapped = new Error('retry budget exhausted', { cause: new Error('GET /api/status: no response', { cause: inner }) });
  assert.equal(answerTooLarge(wrapped), inner);
  assert.equal(answerTooLarge(new Error('other', { cause: new Error('deeper') })), null);
  assert.equal(answerTooLarge('text'), null);
});
