/**
 * Issue 28 "every request gets its answer": a busy server answers late instead of dropping the
 * connection (item 8), a refused body still lets the client read its 413 and nothing pipelined
 * after it runs unanswered (item 5).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startInProcess } from '../helpers/inprocess.mjs';
import { rawExchange } from '../helpers/raw.mjs';

/**
 * A client in its own process (so it keeps running while the test blocks the server's event
 * loop): opens one connection, sends `GET /api/status`, prints `first` once the answer is in,
 * sends the same request again `gapMs` later on the same connection and prints, as one JSON line,
 * every status line it got and whether the server closed the connection.
 */
const KEEP_ALIVE_CLIENT = `
import { connect } from 'node:net';
const [port, gapMs] = process.argv.slice(1).map(Number);
const req = 'GET /api/status HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n';
const sock = connect(port, '127.0.0.1');
let got = '';
let error = null;
const statuses = () => got.match(/HTTP\\/1\\.1 \\d+/g) ?? [];
const done = (closed) => { console.log(JSON.stringify({ statuses: statuses(), closed, error })); process.exit(0); };
sock.on('error', (e) => (error = e.code));
sock.on('close', () => done(true));
sock.on('data', (d) => {
  const before = statuses().length;
  got += d;
  const n = statuses().length;
  if (before === 0 && n === 1) {
    console.log('first');
    setTimeout(() => sock.write(req), gapMs);
  }
  if (n === 2) setTimeout(() => done(false), 100);
});
sock.on('connect', () => sock.write(req));
setTimeout(() => done(false), 15000);
`;

/** Busy-waits `ms` on this thread: the event loop (and the in-process server on it) stands still. */
function blockEventLoop(ms) {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

test('a request that arrives on a kept-alive connection while the server is busy past its keep-alive timeout is answered, not dropped', async (t) => {
  const keepAliveTimeoutMs = 1000;
  const h = await startInProcess(t, {
    timeouts: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs, checkIntervalMs: 1000, socketIdleTimeoutMs: 30_000 },
  });
  const { port } = new URL(h.url);
  // The client sends its second request 400 ms after the first answer, well inside the keep-alive
  // window; the server is then busy (background work runs in setImmediate slices) from ~100 ms to
  // ~2,100 ms, past the keep-alive deadline, with the request unread in the socket buffer.
  const child = spawn(process.execPath, ['--input-type=module', '-e', KEEP_ALIVE_CLIENT, String(port), '400'], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  const result = new Promise((resolve) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.startsWith('first\n') && !out.includes('{')) {
        if (!child.blocked) {
          child.blocked = true;
          setTimeout(() => setImmediate(() => blockEventLoop(keepAliveTimeoutMs + 1000)), 100);
        }
      }
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line));
    });
  });
  const { statuses, closed, error } = await result;
  assert.deepEqual(statuses, ['HTTP/1.1 200', 'HTTP/1.1 200'], `the second request was dropped (closed ${closed}, ${error})`);
  assert.equal(closed, false);
});

test('an idle kept-alive connection is still closed once its keep-alive timeout has passed', async (t) => {
  const h = await startInProcess(t, {
    timeouts: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 300, checkIntervalMs: 100, socketIdleTimeoutMs: 30_000 },
  });
  const started = Date.now();
  const out = await rawExchange(h.url, ['GET /api/status HTTP/1.1\r\nHost: x\r\n\r\n'], { endAfter: false });
  assert.match(out, /^HTTP\/1.1 200/);
  assert.ok(Date.now() - started < 5000, 'closed long after the keep-alive timeout');
});
