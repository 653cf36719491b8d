/**
 * The push benchmark's lean GET client (scripts/bench/lib/lean-http.mjs): keep-alive, whole bodies
 * however they are split, a new connection after `Connection: close`, and clear failures.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { LeanConnection } from '../../scripts/bench/lib/lean-http.mjs';

/** A local server whose handler is `handle`; counts connections. Closed after the test. */
async function serve(t, handle) {
  const server = http.createServer(handle);
  const stats = { connections: 0 };
  server.on('connection', () => stats.connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { base: `http://127.0.0.1:${server.address().port}`, stats };
}

test('GETs on one keep-alive connection each resolve to their status and whole body, headers sent with each', async (t) => {
  const big = 'x'.repeat(200_000); // arrives in many chunks
  const { base, stats } = await serve(t, (req, res) => {
    const body = req.url === '/big' ? big : JSON.stringify({ url: req.url, auth: req.headers.authorization });
    res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  const conn = new LeanConnection(base, { authorization: 'Bearer t1' });
  t.after(() => conn.close());
  const a = await conn.get('/a?x=1');
  assert.equal(a.status, 200);
  assert.deepEqual(JSON.parse(a.body.toString()), { url: '/a?x=1', auth: 'Bearer t1' });
  const b = await conn.get('/big');
  assert.equal(b.body.length, big.length);
  assert.equal((await conn.get('/missing')).status, 404);
  assert.equal(stats.connections, 1, 'one connection for all three');
});

test('after a response with Connection: close the next GET opens a new connection', async (t) => {
  const { base, stats } = await serve(t, (req, res) => {
    res.writeHead(200, { 'content-length': 2, connection: 'close' });
    res.end('ok');
  });
  const conn = new LeanConnection(base);
  t.after(() => conn.close());
  assert.equal((await conn.get('/1')).body.toString(), 'ok');
  assert.equal((await conn.get('/2')).body.toString(), 'ok');
  assert.equal(stats.connections, 2);
});

test('a response without Content-Length, or a connection closed before the answer, rejects the GET', async (t) => {
  const { base } = await serve(t, (req, res) => {
    if (req.url === '/chunked') {
      res.write('part');
      res.end();
      return;
    }
    req.socket.destroy();
  });
  const conn = new LeanConnection(base);
  t.after(() => conn.close());
  await assert.rejects(conn.get('/chunked'), /without Content-Length/);
  await assert.rejects(conn.get('/gone'), /closed the connection before answering/);
  conn.close();
  await assert.rejects(conn.get('/after-close'), /closed by the harness/);
});
