/**
 * The memory bound of POST /mcp (issue 34), black-box: the probe that once took the server from
 * 108 MiB to 5 GB — concurrent JSON-RPC batches of 100 reads of a 100-message topic of long
 * messages, then a crowd of concurrent full-page reads and exports — run against the built server,
 * while the server's resident set (VmRSS in /proc/<pid>/status) is sampled and /api/status is
 * polled. The growth must stay within MCP_RSS_GROWTH_BYTES_MAX (docs/api/mcp.md) and status
 * must keep answering promptly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { MCP_IN_FLIGHT_MAX, MCP_IN_FLIGHT_PER_AGENT_MAX, MCP_QUEUE_PER_AGENT_MAX, MCP_RSS_GROWTH_BYTES_MAX, MESSAGE_CONTENT_LENGTH_MAX } from '../../dist/constants.js';
import { register, startServer } from '../helpers/server.mjs';

const ACCEPT = 'application/json, text/event-stream';
/** The slowest /api/status answer accepted while /mcp is flooded (the probe once stalled it ~9 s). */
const STATUS_MS_MAX = 1000;

/**
 * A child process that GETs the URL in argv[1] once and prints "ready", then every 50 ms until its
 * stdin closes, then prints the latencies (ms) of every later answer as a JSON array (a non-200
 * answer as 1e9).
 */
const POLLER = `
import { request } from 'undici';
const url = process.argv[1];
const ms = [];
let polling = true;
process.stdin.on('end', () => (polling = false));
process.stdin.resume();
await (await request(url)).body.text();
process.stdout.write('ready\\n');
while (polling) {
  const t0 = performance.now();
  const r = await request(url);
  await r.body.text();
  ms.push(r.statusCode === 200 ? performance.now() - t0 : 1e9);
  await new Promise((r) => setTimeout(r, 50));
}
process.stdout.write(JSON.stringify(ms));
`;

/** The server process's resident set in bytes, from /proc/<pid>/status. */
function rssOf(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]) * 1024;
}

test('concurrent /mcp batches and full-page reads of a 100-message topic keep the server\'s RSS growth under MCP_RSS_GROWTH_BYTES_MAX and /api/status prompt', async (t) => {
  const server = await startServer(t);
  const agents = [];
  for (let i = 0; i < 4; i++) agents.push(await register(server, `flood-${i}`));
  const token = agents[0].token;
  const topic = (await server.post('/api/topics', { title: 'long thread' }, token)).body;
  // Quotes double in the text copy of a result: the longest answers a page can give.
  const content = `${'word "quoted" '.repeat(Math.floor(MESSAGE_CONTENT_LENGTH_MAX / 14))}`.slice(0, MESSAGE_CONTENT_LENGTH_MAX);
  for (let i = 0; i < 100; i++) {
    const r = await server.post('/api/messages', { topicId: topic.id, content, clientId: `long-${i}` }, agents[i % 4].token);
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }

  const post = (message, as = token) =>
    server.request('POST', '/mcp', { body: message, token: as, headers: { accept: ACCEPT, 'mcp-protocol-version': '2025-06-18' } });
  const read = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'forum_read_messages', arguments: { topicId: topic.id, limit: 100 } } });
  const exportPage = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'forum_export_topic', arguments: { topicId: topic.id, limit: 40 } } });

  // One page fits the bound: the probe measures real answers, not refusals.
  const one = await post(read(1));
  assert.equal(one.body.result?.isError, undefined, JSON.stringify(one.body).slice(0, 300));
  assert.equal(one.body.result.structuredContent.messages.length, 100);
  const answerBytes = Buffer.byteLength(JSON.stringify(one.body));
  assert.ok(answerBytes > 1024 * 1024, `each read answers over 1 MiB (${answerBytes} bytes)`);

  await new Promise((r) => setTimeout(r, 300));
  const baseline = rssOf(server.proc.pid);
  let peak = baseline;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(server.proc.pid));
    } catch {
      // The process is gone; the assertions below report it.
    }
  }, 10);
  // The poller runs in its own process, so the time this process spends reading the flood's
  // answers is not counted as the server's.
  const poller = spawn(process.execPath, ['--input-type=module', '-e', POLLER, `${server.url}/api/status`], { stdio: ['pipe', 'pipe', 'inherit'] });
  let polled = '';
  poller.stdout.on('data', (d) => (polled += d));
  const pollerDone = new Promise((resolve) => poller.once('exit', resolve));
  t.after(() => poller.kill());
  while (!polled.includes('ready\n')) await new Promise((r) => setTimeout(r, 20));

  try {
    const batch = Array.from({ length: 100 }, (_, i) => read(i + 1));
    const batches = await Promise.all(Array.from({ length: 12 }, () => post(batch)));
    for (const b of batches) assert.equal(b.body.error?.code, -32600, 'a batch is refused, not run');
    // Four agents, each sending more at once than its share of the slots and the queue: every
    // slot is busy, and what is over an agent's share is told to come back.
    const share = MCP_IN_FLIGHT_PER_AGENT_MAX + MCP_QUEUE_PER_AGENT_MAX;
    assert.ok(agents.length * MCP_IN_FLIGHT_PER_AGENT_MAX >= MCP_IN_FLIGHT_MAX, 'the crowd can fill every slot');
    const crowd = agents.length * (share + 6);
    const replies = await Promise.all(Array.from({ length: crowd }, (_, i) => post(i % 8 === 0 ? exportPage(i) : read(i), agents[i % agents.length].token)));
    const answered = agents.map(() => 0);
    let refused = 0;
    replies.forEach((r, i) => {
      if (r.status === 503) {
        assert.ok(Number(r.headers['retry-after']) >= 1, 'a request over the queue is told when to retry');
        assert.match(r.body.error, /busy/);
        refused++;
        return;
      }
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
      assert.equal(r.body.result?.isError, undefined, JSON.stringify(r.body).slice(0, 300));
      answered[i % agents.length]++;
    });
    for (const n of answered) assert.ok(n >= share, `every agent got its share answered (${answered.join(', ')} of ${crowd / agents.length} each)`);
    t.diagnostic(`crowd of ${crowd}: ${refused} refused with 503`);
  } finally {
    poller.stdin.end();
    await pollerDone;
    clearInterval(sampler);
  }
  const statusMs = JSON.parse(polled.slice(polled.indexOf('\n') + 1));
  const growth = peak - baseline;
  const mib = (n) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  assert.ok(growth < MCP_RSS_GROWTH_BYTES_MAX, `RSS grew ${mib(growth)} (from ${mib(baseline)} to ${mib(peak)}); the documented bound is ${mib(MCP_RSS_GROWTH_BYTES_MAX)}`);
  const slowest = Math.max(...statusMs);
  assert.ok(statusMs.length > 0 && slowest < STATUS_MS_MAX, `/api/status answered within ${STATUS_MS_MAX} ms throughout (slowest ${slowest.toFixed(0)} ms of ${statusMs.length})`);
  t.diagnostic(`RSS ${mib(baseline)} → peak ${mib(peak)} (growth ${mib(growth)}); slowest status ${slowest.toFixed(0)} ms`);
});
