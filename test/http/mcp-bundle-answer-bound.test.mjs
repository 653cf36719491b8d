/**
 * Issue 51 defect 5: the stdio MCP bundle (dist/agent-forum-mcp.mjs) bounds an answer from its
 * forum while reading it. A fake forum on 127.0.0.1 streams a 256 MiB answer; the bundle must
 * answer the tool call with a tool error naming MCP_STDIO_ANSWER_BYTES_MAX, and must have closed
 * every connection before the fake forum could send the whole answer (it stopped reading early
 * instead of reading the answer whole and refusing it afterwards).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT } from '../helpers/server.mjs';
import { MCP_STDIO_ANSWER_BYTES_MAX } from '../../dist/constants.js';

const BUNDLE = join(ROOT, 'dist', 'agent-forum-mcp.mjs');
const ANSWER_BYTES = 256 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'a');

/**
 * A fake forum: every request is answered 200 application/json with ANSWER_BYTES of body,
 * streamed in 64 KiB chunks with backpressure (`declareLength` sends Content-Length, else
 * chunked). `requests` records, per request, the bytes handed to the socket and whether the
 * client closed the connection before the whole answer was sent.
 */
async function fakeForum(t, { declareLength }) {
  const requests = [];
  const server = createServer(async (req, res) => {
    const seen = { path: req.url, sentBytes: 0, cutEarly: false };
    requests.push(seen);
    res.on('close', () => { if (!res.writableFinished) seen.cutEarly = true; });
    res.writeHead(200, { 'content-type': 'application/json', ...(declareLength ? { 'content-length': String(ANSWER_BYTES) } : {}) });
    res.write('{"padding":"');
    seen.sentBytes += 12;
    while (seen.sentBytes + CHUNK.length < ANSWER_BYTES && !res.destroyed) {
      seen.sentBytes += CHUNK.length;
      if (!res.write(CHUNK)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
    }
    if (!res.destroyed) res.end(Buffer.alloc(ANSWER_BYTES - seen.sentBytes, 'a'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }));
  return { url: `http://127.0.0.1:${server.address().port}`, requests };
}

/** The bundle over stdio as an MCP host runs it, pointed at `forumUrl`. */
async function bundleClient(t, forumUrl) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BUNDLE], env: { PATH: process.env.PATH, FORUM_URL: forumUrl, FORUM_TOKEN: 'fake-token' }, stderr: 'pipe' });
  const client = new Client({ name: 'answer-bound-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

for (const declareLength of [false, true]) {
  test(`the stdio bundle refuses a forum answer over MCP_STDIO_ANSWER_BYTES_MAX with a tool error naming the bound and closes the connection before the answer is sent (${declareLength ? 'Content-Length declared' : 'chunked'})`, async (t) => {
    const forum = await fakeForum(t, { declareLength });
    const client = await bundleClient(t, forum.url);
    const result = await client.callTool({ name: 'forum_status', arguments: {} });
    assert.equal(result.isError, true, JSON.stringify(result.content).slice(0, 500));
    const text = result.content.map((c) => c.text).join('\n');
    assert.match(text, new RegExp(`\\b${MCP_STDIO_ANSWER_BYTES_MAX}\\b`), 'the error names the bound in bytes');
    assert.match(text, /MCP_STDIO_ANSWER_BYTES_MAX/);
    assert.match(text, /smaller page|narrower filter/, 'the error says what to do');
    assert.ok(forum.requests.length >= 1, 'the bundle asked the fake forum');
    // Give the fake forum's last 'close' event its turn before reading what it saw.
    await new Promise((resolve) => setImmediate(resolve));
    for (const r of forum.requests) {
      assert.equal(r.path, '/api/status');
      assert.equal(r.cutEarly, true, 'the bundle closed the connection before the whole answer was sent');
      assert.ok(r.sentBytes < ANSWER_BYTES, `stopped after ${r.sentBytes} of ${ANSWER_BYTES} bytes`);
    }
  });
}
