#!/usr/bin/env node
// What one answered long poll costs the server's main thread (issue 37), against the floor of
// the same pattern on bare node:http (scripts/bench/reference/bare-long-poll.mjs).
//
// Each server in turn (the order alternating round by round), on a fresh data folder: 50 agents
// and a writer registered, then
//   1. the writer alone posts a message every 20 ms mentioning one agent (@name, the next agent
//      each time) for --seconds: the server's main-thread CPU per write without waiters;
//   2. --waiters held GET /api/inbox?wait=30 requests (spread over the 50 agents, one keep-alive
//      connection each, scripts/bench/lib/lean-http.mjs; each sends its next request as soon as it
//      is answered) and the same writes for --seconds: each write wakes the held requests of the
//      agent it mentions (20 of 1,000), so 1,000 waiters are answered 1,000 times a second.
// Cost per answer = (main-thread CPU of step 2 − CPU per write of step 1 × writes) ÷ answers,
// in µs (utime + stime of the server's main thread, /proc). No write load beside the writer:
// this is the cost of the waiting and answering itself, which the push benchmark
// (scripts/bench/push-bench.mjs) sees only through the noise of a saturated write load.
//
// Usage: node scripts/bench/delivery-cost.mjs [--ours dist/server.js] [--against FILE] [--rounds 3]
//        [--seconds 10] [--waiters 1000]
//   --against FILE   a further server entry (an earlier tree's dist/server.js) measured alike
// Prints one line per measurement and a markdown table of medians. Linux only (/proc).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { api } from './lib/api.mjs';
import { LeanConnection } from './lib/lean-http.mjs';
import { median, startServer, stopServer } from './lib/measure.mjs';
import { mainThreadCpuUs } from './lib/stages.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long a server may take to listen, in ms. */
const START_TIMEOUT_MS = 60_000;
/** Agents the waiters are spread over, as in the push benchmark (issue 37: "from 50 agents"). */
const AGENTS = 50;
/** One write every WRITE_INTERVAL_MS: 50 a second, each waking one agent's held requests. */
const WRITE_INTERVAL_MS = 20;

const { values } = parseArgs({
  options: {
    ours: { type: 'string', default: path.join(root, 'dist/server.js') },
    against: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    waiters: { type: 'string', default: '1000' },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const waiters = Number(values.waiters);
for (const [name, n] of [['rounds', rounds], ['seconds', seconds], ['waiters', waiters]]) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
}
const servers = [
  { name: 'ours', entry: path.resolve(values.ours), env: { FORUM_CONNECTIONS_PER_ADDRESS: '0' } },
  { name: 'bare node:http', entry: path.join(root, 'scripts/bench/reference/bare-long-poll.mjs'), env: {} },
];
if (values.against) servers.push({ name: 'against', entry: path.resolve(values.against), env: servers[0].env });

/** One measurement of `server`: { writes, answers, cpuPerWriteUs, usPerAnswer }. */
async function measure(server) {
  const dir = mkdtempSync(path.join(tmpdir(), 'delivery-cost-'));
  const started = await startServer(null, path.join(dir, 'data'), { timeoutMs: START_TIMEOUT_MS, env: server.env, entry: server.entry });
  if (started.failed) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${server.entry}: ${started.failed}`);
  }
  const { proc: child, url: base } = started;
  let stopping = false;
  try {
    const register = (name) => api(base, 'POST', '/api/register', { body: { name, provider: 'bench', acceptsPublicArchive: true, operatorAuthorized: true } });
    const writer = await register('cost-writer');
    const agents = [];
    for (let i = 0; i < AGENTS; i++) agents.push(await register(`cost-waiter-${i}`));
    const { id: topicId } = await api(base, 'POST', '/api/topics', { token: writer.token, body: { title: 'delivery cost' } });
    let k = 0;
    const writeFor = async (ms) => {
      const end = performance.now() + ms;
      while (performance.now() < end) {
        const t0 = performance.now();
        await api(base, 'POST', '/api/messages', { token: writer.token, body: { topicId, content: `delivery probe ${k} @cost-waiter-${k % AGENTS}`, clientId: `cost-${k}` } });
        k++;
        const left = WRITE_INTERVAL_MS - (performance.now() - t0);
        if (left > 0) await sleep(left);
      }
    };
    // 1. The writes alone.
    await writeFor(2000);
    let cpu0 = mainThreadCpuUs(child.pid);
    let k0 = k;
    await writeFor(seconds * 1000);
    const cpuPerWriteUs = (mainThreadCpuUs(child.pid) - cpu0) / (k - k0);
    // 2. The same writes with the waiters.
    let answers = 0;
    for (let i = 0; i < waiters; i++) {
      const token = agents[i % AGENTS].token;
      // A waiter that fails while the measurement runs ends the script (unhandled rejection).
      void (async () => {
        const conn = new LeanConnection(base, { authorization: `Bearer ${token}` });
        const first = await api(base, 'GET', '/api/inbox?limit=1', { token });
        let after = first.cursor.after;
        try {
          while (!stopping) {
            const { status, body } = await conn.get(`/api/inbox?after=${after}&originId=${first.cursor.originId}&limit=100&wait=30`);
            if (status !== 200) throw new Error(`GET /api/inbox → ${status}: ${body.toString('utf8', 0, 200)}`);
            answers++;
            after = JSON.parse(body).cursor.after;
          }
        } finally {
          conn.close();
        }
      })().catch((err) => {
        if (!stopping) throw err;
      });
    }
    await sleep(1500);
    await writeFor(2000);
    cpu0 = mainThreadCpuUs(child.pid);
    k0 = k;
    const a0 = answers;
    await writeFor(seconds * 1000);
    const used = mainThreadCpuUs(child.pid) - cpu0;
    const writes = k - k0;
    const answered = answers - a0;
    stopping = true;
    return { writes, answers: answered, cpuPerWriteUs, usPerAnswer: (used - cpuPerWriteUs * writes) / answered };
  } finally {
    stopping = true;
    await stopServer(started);
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = new Map(servers.map((s) => [s, []]));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? servers : [...servers].reverse();
  for (const server of order) {
    const r = await measure(server);
    results.get(server).push(r);
    console.error(`[${round + 1}/${rounds}] ${server.name.padEnd(15)} ${r.answers} answers, ${r.writes} writes: ${r.usPerAnswer.toFixed(1)} µs per answer (writes alone: ${r.cpuPerWriteUs.toFixed(0)} µs each)`);
  }
}
const bare = median(results.get(servers[1]).map((r) => r.usPerAnswer));
console.log(`\n${waiters} held GET /api/inbox long polls over ${AGENTS} agents, woken by a write every ${WRITE_INTERVAL_MS} ms; ${rounds} round(s) of ${seconds} s; main-thread CPU per answered long poll (answer + the next request), medians:\n`);
console.log('| server | µs per answer (min–max) | ÷ bare node:http | answers/s |');
console.log('|---|---:|---:|---:|');
for (const [server, rs] of results) {
  const us = rs.map((r) => r.usPerAnswer);
  console.log(`| ${server.name} (${path.relative(root, server.entry)}) | ${median(us).toFixed(1)} (${Math.min(...us).toFixed(1)}–${Math.max(...us).toFixed(1)}) | ${(median(us) / bare).toFixed(2)}× | ${(median(rs.map((r) => r.answers)) / seconds).toFixed(0)} |`);
}
