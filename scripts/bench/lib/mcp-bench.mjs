// /mcp tool-call throughput and memory by MCP revision (issue 54): the 2026-07-28 path (official
// SDK 2.x, src/mcp/modern.ts) beside the 2025-11-25 path (SDK 1.x, src/mcp/server.ts) of the same
// server, in one run. One server on a fresh folder holds a topic of 20 messages; N connections
// (default 4, /mcp's MCP_IN_FLIGHT_MAX; one agent per two, its per-agent bound) each send `tools/call forum_read_messages {topicId, limit: 20}` back to back (closed loop, one
// request in flight per connection) for S seconds, first in one revision then in the other, the
// order alternating round by round, so a change in the machine's load hits both alike. Per cell:
// calls/s, p50/p99 ms, and the server's peak RSS (sampled every 100 ms from /proc). The table shows
// the median of the rounds and the ratio 2026 ÷ 2025 (issue 54's target: throughput and memory
// within 10 %).
//
// Used by scripts/bench.mjs (its "/mcp by revision" section, and alone: node scripts/bench.mjs
// --only mcp).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { api } from './api.mjs';
import { median, memoryOf, percentile, register, startServer, stopServer } from './measure.mjs';

/** Issue 54's bound: 2026-07-28 throughput ≥ this × 2025's, and its peak RSS ≤ 1 / this × 2025's. */
export const MCP_RATIO_MIN = 0.9;

const TOOL = 'forum_read_messages';
/** src/constants.ts MCP_IN_FLIGHT_PER_AGENT_MAX: the calls one agent may have in flight on /mcp. */
const MCP_IN_FLIGHT_PER_AGENT = 2;
const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';

/** The request of one tool call in `revision`: headers and JSON body. */
function callOf(revision, token, topicId, id) {
  const args = { topicId, limit: 20 };
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': revision };
  if (revision === MODERN) {
    headers['mcp-method'] = 'tools/call';
    headers['mcp-name'] = TOOL;
    const _meta = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientInfo': { name: 'mcp-bench', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
    return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: TOOL, arguments: args, _meta } }) };
  }
  return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: TOOL, arguments: args } }) };
}

/**
 * One tool call; resolves to its ms. Throws when the answer is not a 200 JSON-RPC result without
 * `isError` (a refused call must never count as a fast one).
 */
async function callOnce(url, dispatcher, revision, token, topicId, id) {
  const { headers, body } = callOf(revision, token, topicId, id);
  const t0 = performance.now();
  const res = await request(`${url}/mcp`, { method: 'POST', headers, body, dispatcher });
  const text = await res.body.text();
  const ms = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`${revision} tools/call → ${res.statusCode}: ${text.slice(0, 300)}`);
  const json = text.startsWith('{') ? JSON.parse(text) : JSON.parse(text.slice(text.indexOf('data: ') + 6).split('\n')[0]);
  if (json.error || json.result?.isError) throw new Error(`${revision} tools/call failed: ${text.slice(0, 300)}`);
  return ms;
}

/** One cell: `connections` closed loops for `seconds`. Output: {calls, rps, p50Ms, p99Ms, peakRssMiB}. */
async function cell(server, revision, tokens, topicId, connections, seconds) {
  const dispatcher = new Agent({ connections, pipelining: 1 });
  const times = [];
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(server.proc.pid).rss / 1024)), 100);
  const until = performance.now() + seconds * 1000;
  let id = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: connections }, async (_, i) => {
    const token = tokens[i % tokens.length];
    while (performance.now() < until) times.push(await callOnce(server.url, dispatcher, revision, token, topicId, ++id));
  }));
  const elapsed = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  await dispatcher.close();
  return { calls: times.length, rps: times.length / elapsed, p50Ms: median(times), p99Ms: percentile(times, 99), peakRssMiB: peak };
}

/**
 * Measures both revisions. Input: `entry` (the server script, e.g. <root>/dist/server.js),
 * `connections`, `seconds` per cell, `rounds`, `log`. Output: {connections, seconds, rounds,
 * cells: {[revision]: [{calls, rps, p50Ms, p99Ms, peakRssMiB}, ...]}} or {failed: reason}.
 */
export async function measureMcp({ entry, connections = 4, seconds = 5, rounds = 4, log = () => {} }) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'forum-mcp-bench-'));
  const server = await startServer(path.dirname(entry), dataDir, { timeoutMs: 120_000, entry });
  if (server.failed) {
    rmSync(dataDir, { recursive: true, force: true });
    return { failed: server.failed };
  }
  try {
    // One agent per MCP_IN_FLIGHT_PER_AGENT_MAX connections, so the per-agent bound never queues a call.
    const tokens = [];
    for (let i = 0; i < Math.ceil(connections / MCP_IN_FLIGHT_PER_AGENT); i++) tokens.push(await register(server.url, `mcp-bench-${i}`));
    const topic = await api(server.url, 'POST', '/api/topics', { token: tokens[0], body: { title: 'mcp bench' } });
    for (let i = 0; i < 20; i++) await api(server.url, 'POST', '/api/messages', { token: tokens[0], body: { topicId: topic.id, content: `message ${i} of the /mcp benchmark, long enough to be a real answer`, clientId: `m${i}` } });
    const cells = { [LEGACY]: [], [MODERN]: [] };
    // Warm-up: both paths compiled and their SDKs loaded before anything is counted.
    for (const revision of [LEGACY, MODERN]) await cell(server, revision, tokens, topic.id, connections, 1);
    for (let r = 0; r < rounds; r++) {
      for (const revision of r % 2 === 0 ? [LEGACY, MODERN] : [MODERN, LEGACY]) {
        const c = await cell(server, revision, tokens, topic.id, connections, seconds);
        cells[revision].push(c);
        log(`  /mcp ${revision} round ${r + 1}: ${c.rps.toFixed(0)} calls/s, p50 ${c.p50Ms.toFixed(2)} ms, p99 ${c.p99Ms.toFixed(2)} ms, peak RSS ${c.peakRssMiB.toFixed(0)} MiB`);
      }
    }
    return { connections, seconds, rounds, cells };
  } finally {
    await stopServer(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Markdown lines of the section: one row per revision (medians of the rounds) and the ratio. */
export function renderMcp(result) {
  if (result.failed) return [`/mcp by revision: not measured (${result.failed})`];
  const row = (revision) => {
    const cs = result.cells[revision];
    return { rps: median(cs.map((c) => c.rps)), p50: median(cs.map((c) => c.p50Ms)), p99: median(cs.map((c) => c.p99Ms)), rss: median(cs.map((c) => c.peakRssMiB)) };
  };
  const legacy = row(LEGACY);
  const modern = row(MODERN);
  const rpsRatio = modern.rps / legacy.rps;
  const rssRatio = modern.rss / legacy.rss;
  const verdict = (ok) => (ok ? 'met' : '**missed**');
  return [
    `### /mcp tool calls by revision (${result.connections} connections, ${result.seconds} s × ${result.rounds} rounds, medians; \`${TOOL}\`)`,
    '',
    '| revision | SDK | calls/s | p50 ms | p99 ms | peak RSS MiB |',
    '|---|---|---:|---:|---:|---:|',
    `| ${LEGACY} | 1.x | ${legacy.rps.toFixed(0)} | ${legacy.p50.toFixed(2)} | ${legacy.p99.toFixed(2)} | ${legacy.rss.toFixed(0)} |`,
    `| ${MODERN} | 2.x | ${modern.rps.toFixed(0)} | ${modern.p50.toFixed(2)} | ${modern.p99.toFixed(2)} | ${modern.rss.toFixed(0)} |`,
    '',
    `2026 ÷ 2025: throughput ${rpsRatio.toFixed(2)}× (target ≥ ${MCP_RATIO_MIN}: ${verdict(rpsRatio >= MCP_RATIO_MIN)}), peak RSS ${rssRatio.toFixed(2)}× (target ≤ ${(1 / MCP_RATIO_MIN).toFixed(2)}: ${verdict(rssRatio <= 1 / MCP_RATIO_MIN)}).`,
  ];
}
