#!/usr/bin/env node
// Agent Forum benchmark harness (`npm run bench`).
//
// Compares "ours" (node dist/server.js) with the same server at commit 1496384
// ("before", issue 30's starting point, built once under
// scripts/bench/.baseline-1496384) and at commit ddc85c4 ("prior", issue 39's
// starting point, built once the same way), a conventional Fastify + SQLite
// implementation of the same API subset and a bare node:http ceiling.
// Each server runs as a child process on a free 127.0.0.1 port with fresh data,
// is seeded over HTTP (8 agents, 1 topic, N messages), and is measured with wrk
// (autocannon as fallback). Servers alternate cell by cell over several rounds;
// the table shows medians and the min–max spread across rounds.
//
// Usage: node scripts/bench.mjs [flags]
//   --servers LIST         ours,before,prior,fastify,bare (default: all five;
//                          before and prior are dropped with a warning when
//                          their commit cannot be built, unless named)
//   --ours FILE            entry script for "ours", default dist/server.js
//   --before FILE          entry script for "before", default the server.js of
//                          commit 1496384, exported and built on first use
//   --prior FILE           entry script for "prior", default the server.js of
//                          commit ddc85c4 (issue 39), exported and built on first use
//   --scenarios LIST       status,read,changes,exchange,work,write (default: all;
//                          each server runs only the ones it implements)
//   --connections LIST     default 1,16,64
//   --rounds N             default 3
//   --duration S           measured seconds per cell, default 5
//   --warmup S             discarded warm-up seconds before each cell, default 2
//   --threads N            wrk threads, default 1 (2 cores: one for the server)
//   --loadgen NAME         wrk | autocannon (default: wrk, installed via apt-get
//                          when root, else autocannon)
//   --seed-messages N      messages seeded per server, default 2000
//   --replay / --no-replay ours and before: archive replay time and peak RSS (default on,
//                          off with --smoke); needs scripts/dev/gen-archive.mjs
//   --replay-records N     records in the generated archive, default 1000000
//   --gen-archive FILE     archive generator (takes --dir D --records N),
//                          default scripts/dev/gen-archive.mjs
//   --replay-timeout S     max seconds for ours to start on the archive, default 600
//   --stages / --no-stages the per-stage breakdown of main-thread CPU per write (issue 39):
//                          ours, before and prior each run one more write cell on a fresh
//                          server started under --cpu-prof (default on when the write
//                          scenario runs, off with --smoke)
//   --stages-connections N connections of that cell, default 64
//   --search / --no-search ours and before: q search latency (default on, off with --smoke)
//   --search-messages N    messages seeded for --search, default 100000
//   --replication / --no-replication
//                          ours replicating to an object store (issue 35; scripts/bench/replica-bench.mjs):
//                          write req/s and p50/p99 at 1 and 64 connections with no replication,
//                          async and sync, async shipping lag, object-store requests idle and
//                          under load with their monthly cost, restore --from of an archive.
//                          Default on when an object store can be had (AWS_ENDPOINT_URL_S3 set,
//                          or scripts/dev/rgw.sh can start a Ceph RGW: installed when root), skipped
//                          with the reason otherwise; off with --smoke
//   --replica-records N    records in the archive restored by --replication, default 1000000
//   --push / --no-push     ours with 0, 100 and 1,000 long-polling waiters (issue 37;
//                          scripts/bench/push-bench.mjs): write req/s at 64 connections with and
//                          without waiters, commit-to-delivery latency p50/p99 (default on,
//                          off with --smoke)
//   --push-rate N          the push section's write load at a fixed N writes/s (open loop, the
//                          harness's own writer on 64 connections) instead of wrk's closed loop
//                          at 64 connections: every cell then does the same writes, so the
//                          server's CPU per write with and without waiters compares like for
//                          like; default 0 (wrk)
//   --server-cpus LIST     start every server under `taskset -c LIST` (e.g. 0 or 0-1), so it has
//                          those cores to itself when the harness runs on the others (`taskset
//                          -c 1 node scripts/bench.mjs --server-cpus 0 ...`: wrk and the waiters
//                          inherit the harness's cores); default: no pinning
//   --push-mode MODE       only the push section's cells of MODE: poll (long polls) or sse
//                          (streams), besides the cell without waiters; default both
//   --push-waiters LIST    only the push section's cells with these numbers of waiters (100,
//                          1000 or 100,1000), besides the cell without waiters; default both
//   --push-mentions N      how many of the 50 waiter agents each probe (one every 100 ms) mentions,
//                          1..50: with 1,000 inbox waiters, N × 200 deliveries a second; default 5
//                          (1,000 a second: every waiter answered about once a second)
//   --push-client LIST     who sends the push section's long polls: lean (scripts/bench/lib/lean-http.mjs,
//                          a minimal GET client; default), undici, or lean,undici (each long-poll
//                          cell once per client, in the same rounds)
//   --push-against FILE    a second server entry (an earlier tree's dist/server.js) measured in
//                          the push section's same cells, alternating with ours: before and
//                          after in one run
//   --cli-start / --no-cli-start
//                          the CLI start rows (issue 51; scripts/bench/lib/cli-start.mjs): median wall
//                          ms of `node dist/cli.js` --version, --help, one admin-socket command
//                          against a running server and one archive command (verify), each run
//                          paired with `node -e 0`, and the ratio (default on; on with --smoke)
//   --cli-start-runs N     runs per CLI start row, default 15 (5 with --smoke)
//   --cli-against FILE     a second CLI entry (an earlier tree's dist/cli.js) measured in the same
//                          pairs as ours: before and after in one run
//   --timeline / --no-timeline
//                          the latency-of-one section (issue 56; scripts/bench/timeline.mjs): the
//                          timeline of one write at one connection (head parsed → body parsed →
//                          decided → appended → fdatasync issued → done → answer written, µs
//                          medians), one thread-pool fdatasync of this disk, and GET /api/status
//                          beside bare node:http at 64 and 1 connections (default on, off with --smoke)
//   --timeline-against FILE
//                          a second server entry (an earlier tree's dist/server.js) measured in
//                          the timeline section's same blocks, alternating with ours
//   --mcp / --no-mcp       the /mcp-by-revision section (issue 54; scripts/bench/lib/mcp-bench.mjs): tool
//                          calls/s, p50/p99 and peak RSS of the 2026-07-28 path (SDK 2.x) beside the
//                          2025-11-25 path (SDK 1.x) of one server, rounds alternating; default on
//                          (off with --smoke)
//   --only SECTION         run only that section and print its table: cli-start, timeline or mcp (a few seconds;
//                          no load generator, no reference servers)
//   --out FILE             markdown result file, default scripts/bench/last-result.md
//   --smoke                quick check, overriding the flags above: 1 round,
//                          16 connections, 1 s warm-up + 2 s cells, 200 seed
//                          messages, no replay, search, replication or push
//   --scale N              run the scale benchmark instead (scripts/bench/scale-bench.mjs:
//                          an N-record archive, this tree against commit 1496384;
//                          its flags: node scripts/bench/scale-bench.mjs --help)
//   --help
//
// Exit status: 0 when every server started, every cell (the replication section's
// included) stayed at or below 1% non-2xx responses and the replication section, when
// it ran, did not fail (a skipped one does not count); 1 otherwise. Missed performance
// targets do not fail the run.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { api } from './bench/lib/api.mjs';
import { BEFORE_COMMIT, PRIOR_COMMIT, baselineDist, commitAvailable } from './bench/lib/baseline.mjs';
import { mainThreadCpuUs, monotonicUs, perWrite, readProfile, renderStages, stageSamples } from './bench/lib/stages.mjs';
import { measureReplication, renderReplication, replicationFailures } from './bench/replica-bench.mjs';
import { PUSH_MENTIONS_DEFAULT, measurePush, pushFailures, renderPush } from './bench/push-bench.mjs';
import { median } from './bench/lib/measure.mjs';
import { measureCliStart, renderCliStart } from './bench/lib/cli-start.mjs';
import { runTimeline } from './bench/timeline.mjs';
import { measureMcp, renderMcp } from './bench/lib/mcp-bench.mjs';

/**
 * How the headings name a server entry given on the command line: its file and, when it lies in
 * a git checkout, that checkout's commit ("commit 98d13d7, /tmp/x/dist/server.js").
 */
function entryLabel(entry) {
  const r = spawnSync('git', ['-C', path.dirname(entry), 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  const commit = r.status === 0 ? r.stdout.trim() : '';
  return commit ? `commit ${commit}, ${entry}` : entry;
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// `npm run bench -- --scale N`: the scale benchmark of issue 17 (scripts/bench/scale-bench.mjs).
if (process.argv.includes('--scale')) {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'bench', 'scale-bench.mjs'), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
const benchDir = path.join(root, 'scripts', 'bench');
const AGENTS = 8;
const MAX_NON2XX_RATIO = 0.01;

// ---- options -------------------------------------------------------------

const HELP = readFileSync(fileURLToPath(import.meta.url), 'utf8')
  .split('\n').slice(1).filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n')
  .split('\nExit status')[0];

function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      servers: { type: 'string' },
      ours: { type: 'string', default: path.join(root, 'dist', 'server.js') },
      before: { type: 'string' },
      prior: { type: 'string' },
      scenarios: { type: 'string' },
      connections: { type: 'string', default: '1,16,64' },
      rounds: { type: 'string', default: '3' },
      duration: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '2' },
      threads: { type: 'string', default: '1' },
      loadgen: { type: 'string' },
      'seed-messages': { type: 'string', default: '2000' },
      replay: { type: 'boolean' },
      'no-replay': { type: 'boolean' },
      'replay-records': { type: 'string', default: '1000000' },
      'gen-archive': { type: 'string', default: path.join(root, 'scripts', 'dev', 'gen-archive.mjs') },
      'replay-timeout': { type: 'string', default: '600' },
      stages: { type: 'boolean' },
      'no-stages': { type: 'boolean' },
      'stages-connections': { type: 'string', default: '64' },
      search: { type: 'boolean' },
      'no-search': { type: 'boolean' },
      'search-messages': { type: 'string', default: '100000' },
      replication: { type: 'boolean' },
      'no-replication': { type: 'boolean' },
      'replica-records': { type: 'string', default: '1000000' },
      push: { type: 'boolean' },
      'no-push': { type: 'boolean' },
      'push-rate': { type: 'string', default: '0' },
      'push-mode': { type: 'string' },
      'push-client': { type: 'string', default: 'lean' },
      'push-waiters': { type: 'string' },
      'push-mentions': { type: 'string', default: String(PUSH_MENTIONS_DEFAULT) },
      'server-cpus': { type: 'string' },
      'push-against': { type: 'string' },
      'cli-start': { type: 'boolean' },
      'no-cli-start': { type: 'boolean' },
      'cli-start-runs': { type: 'string' },
      'cli-against': { type: 'string' },
      only: { type: 'string' },
      timeline: { type: 'boolean' },
      'no-timeline': { type: 'boolean' },
      'timeline-against': { type: 'string' },
      mcp: { type: 'boolean' },
      'no-mcp': { type: 'boolean' },
      out: { type: 'string', default: path.join(benchDir, 'last-result.md') },
      smoke: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);
  const int = (name, min = 1) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return n;
  };
  const opts = {
    help: values.help,
    servers: list(values.servers ?? 'ours,before,prior,fastify,bare'),
    // By default `before` is dropped with a warning when it cannot be had (no such commit in a
    // shallow clone, no network for its npm ci); asked for by name, its absence is an error.
    beforeOptional: values.servers === undefined && !values.before,
    priorOptional: values.servers === undefined && !values.prior,
    scenarios: values.scenarios ? list(values.scenarios) : Object.keys(SCENARIOS),
    connections: list(values.connections).map(Number),
    rounds: int('rounds'),
    duration: int('duration'),
    warmup: int('warmup', 0),
    threads: int('threads'),
    loadgen: values.loadgen,
    seedMessages: int('seed-messages', 0),
    replay: values['no-replay'] ? false : values.replay ?? !values.smoke,
    replayRecords: int('replay-records'),
    genArchive: path.resolve(values['gen-archive']),
    replayTimeoutMs: int('replay-timeout') * 1000,
    stages: values['no-stages'] ? false : values.stages ?? !values.smoke,
    stagesConnections: int('stages-connections'),
    search: values['no-search'] ? false : values.search ?? !values.smoke,
    searchMessages: int('search-messages'),
    replication: values['no-replication'] ? false : values.replication ?? !values.smoke,
    replicaRecords: int('replica-records'),
    push: values['no-push'] ? false : values.push ?? !values.smoke,
    pushRate: int('push-rate', 0),
    pushMode: values['push-mode'] ?? null,
    pushClients: values['push-client'].split(',').map((c) => c.trim()).filter(Boolean),
    pushMentions: int('push-mentions'),
    pushWaiters: values['push-waiters'] === undefined ? null : values['push-waiters'].split(',').map((n) => Number(n.trim())),
    serverCpus: values['server-cpus'] ?? null,
    pushAgainst: values['push-against'] ? path.resolve(values['push-against']) : null,
    cliStart: values['no-cli-start'] ? false : values['cli-start'] ?? true,
    cliStartRuns: values['cli-start-runs'] === undefined ? (values.smoke ? 5 : 15) : int('cli-start-runs'),
    cliAgainst: values['cli-against'] ? path.resolve(values['cli-against']) : null,
    only: values.only ?? null,
    timeline: values['no-timeline'] ? false : values.timeline ?? !values.smoke,
    timelineAgainst: values['timeline-against'] ? path.resolve(values['timeline-against']) : null,
    mcp: values['no-mcp'] ? false : values.mcp ?? !values.smoke,
    out: path.resolve(values.out),
    oursEntry: path.resolve(values.ours),
    beforeEntry: values.before ? path.resolve(values.before) : null,
    priorEntry: values.prior ? path.resolve(values.prior) : null,
    smoke: values.smoke,
  };
  if (opts.smoke) {
    Object.assign(opts, { rounds: 1, duration: 2, warmup: 1, connections: [16], seedMessages: 200, replay: false, search: false, replication: false, push: false, stages: values.stages === true });
  }
  if (opts.only !== null && !['cli-start', 'timeline', 'mcp'].includes(opts.only)) throw new Error('--only must be cli-start, timeline or mcp');
  if (opts.serverCpus !== null && !/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(opts.serverCpus)) throw new Error('--server-cpus must be a CPU list such as 0 or 0-1 or 0,2');
  if (opts.pushMode !== null && opts.pushMode !== 'poll' && opts.pushMode !== 'sse') throw new Error('--push-mode must be poll or sse');
  if (opts.pushWaiters !== null && (opts.pushWaiters.length === 0 || opts.pushWaiters.some((n) => n !== 100 && n !== 1000))) throw new Error('--push-waiters must be 100, 1000 or 100,1000');
  if (opts.pushMentions > 50) throw new Error('--push-mentions must be 1..50 (there are 50 waiter agents)');
  if (opts.pushClients.length === 0 || opts.pushClients.some((c) => c !== 'lean' && c !== 'undici')) throw new Error('--push-client must be lean, undici or lean,undici');
  for (const s of opts.servers) if (!SERVERS[s]) throw new Error(`unknown server "${s}" (known: ${Object.keys(SERVERS).join(', ')})`);
  for (const s of opts.scenarios) if (!SCENARIOS[s]) throw new Error(`unknown scenario "${s}" (known: ${Object.keys(SCENARIOS).join(', ')})`);
  if (opts.connections.some((c) => !Number.isInteger(c) || c < 1)) throw new Error('--connections must list positive integers');
  if (opts.loadgen && !['wrk', 'autocannon'].includes(opts.loadgen)) throw new Error('--loadgen must be wrk or autocannon');
  return opts;
}

// ---- servers and scenarios ------------------------------------------------

const SERVERS = {
  ours: {
    entry: (opts) => opts.oursEntry,
    env: (dataDir) => ({ HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off' }),
    missing: 'entry script not found: run `npm run build` first (or pass --ours FILE)',
  },
  before: {
    entry: (opts) => opts.beforeEntry,
    env: (dataDir) => ({ HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off' }),
    missing: 'entry script not found (pass --before FILE or remove it to rebuild)',
  },
  prior: {
    entry: (opts) => opts.priorEntry,
    env: (dataDir) => ({ HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off' }),
    missing: 'entry script not found (pass --prior FILE or remove it to rebuild)',
  },
  fastify: {
    entry: () => path.join(benchDir, 'reference', 'fastify-sqlite.mjs'),
    env: (dataDir) => ({ BENCH_DB: path.join(dataDir, 'bench.sqlite') }),
  },
  bare: {
    entry: () => path.join(benchDir, 'reference', 'bare.mjs'),
    env: () => ({}),
  },
};

// Order matters: write runs last in each round so that reads see the seeded data set.
// `reference` is the server the scenario's ratio and target compare with.
const SCENARIOS = {
  status: { servers: ['ours', 'before', 'prior', 'fastify', 'bare'], reference: 'bare', mode: 'static', auth: false, path: () => '/api/status' },
  read: { servers: ['ours', 'before', 'prior', 'fastify'], reference: 'fastify', mode: 'static', path: (s) => `/api/messages?topicId=${s.seed.topicId}&limit=50` },
  changes: { servers: ['ours', 'before', 'prior', 'fastify'], reference: 'fastify', mode: 'static', path: () => '/api/changes?after=0&limit=100' },
  exchange: { servers: ['ours', 'before', 'prior'], reference: null, mode: 'static', path: (s) => `/api/exchange?topicId=${s.seed.topicId}&limit=100` },
  work: { servers: ['ours', 'before', 'prior'], reference: null, mode: 'work', path: () => '/api/work/action' },
  write: { servers: ['ours', 'before', 'prior', 'fastify'], reference: 'fastify', mode: 'write', path: () => '/api/messages' },
};

// Issue 30's targets per "scenario|connections": `met` gets {vsRef, ours} (ours: the cell's summary).
const TARGETS = {
  'status|64': { text: 'ours/bare ≥ 0.9', met: (r) => r.vsRef >= 0.9 },
  'read|64': { text: 'ours/fastify ≥ 4', met: (r) => r.vsRef >= 4 },
  'changes|64': { text: 'ours/fastify ≥ 8', met: (r) => r.vsRef >= 8 },
  'write|64': { text: 'ours/fastify ≥ 5 and ours p99 ≤ 15 ms', met: (r) => r.vsRef >= 5 && r.ours.p99Ms <= 15 },
  'write|1': { text: 'ours/fastify ≥ 1.2', met: (r) => r.vsRef >= 1.2 },
};
// Servers that speak our API (seeded with work items; measured by the replay and search steps).
const FORUM_SERVERS = new Set(['ours', 'before', 'prior']);

// ---- process bookkeeping: everything started is stopped, whatever happens ---

const children = new Set();
const tempDirs = new Set();
// Things that are not child processes of ours to stop at the end (a Ceph RGW's daemons):
// { stop: async, stopSync } each; stopSync is for the last-resort exit handler.
const stoppers = new Set();

/** Registers a stopper; returns the function that unregisters it (once it has run). */
function onCleanup(stop, stopSync) {
  const entry = { stop, stopSync };
  stoppers.add(entry);
  return () => stoppers.delete(entry);
}

function track(child) {
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

function tempDir(label) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `forum-bench-${label}-`));
  tempDirs.add(dir);
  return dir;
}

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

async function cleanup() {
  await Promise.all([...children].map(stopChild));
  for (const s of stoppers) await s.stop().catch(() => undefined);
  stoppers.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

// Last resort when the process exits without reaching cleanup().
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  for (const s of stoppers) s.stopSync();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    interrupted = true;
    console.error(`\nbench: ${signal}, stopping servers`);
    await cleanup();
    process.exit(130);
  });
}

// ---- helpers --------------------------------------------------------------

const log = (...args) => console.log(...args);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Runs fn(0..count-1) with at most `concurrency` calls in flight.
async function pool(count, concurrency, fn) {
  const out = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      out[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return out;
}

const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const fmtInt = (n) => Math.round(n).toLocaleString('en-US');
const fmtMs = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
const fmtRatio = (n) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : 'n/a');
const fmtMiB = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

function dirBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += dirBytes(full);
    else if (entry.isFile()) total += statSync(full).size;
  }
  return total;
}

function peakRssBytes(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

function runNode(args, { cwd = root } = {}) {
  const child = track(spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'] }));
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`node ${args.join(' ')} exited with ${code}`))));
  });
}

// Two cores are one for the server and one for the load generator: anything
// else running skews the numbers, so say so in the output.
function busyWarning() {
  const load = os.loadavg()[0]; // taken before the run: during it, it includes our own load
  return load > 0.7 ? `warning: 1-min load average ${load.toFixed(2)} before the run — other processes are competing for the ${os.cpus().length} cores; numbers will be noisy` : null;
}

// ---- lifecycle ------------------------------------------------------------

function ensureBenchDeps() {
  if (existsSync(path.join(benchDir, 'node_modules'))) return;
  log('installing scripts/bench dependencies (npm ci; better-sqlite3 builds from source, ~1-2 min)…');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: benchDir, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm ci in scripts/bench failed');
}

// `env`: variables added to the server's environment. The result's listening() is the parsed
// JSON "listening" log line of ours/before (null until it appears: it comes after the start of a
// replication leader, and carries metricsUrl).
// `nodeArgs`: flags for node before the entry script (--cpu-prof for the stage breakdown).
async function startServer(kind, opts, { dataDir, timeoutMs = 60_000, env = {}, nodeArgs = [] } = {}) {
  const def = SERVERS[kind];
  const entry = def.entry(opts);
  if (!existsSync(entry)) throw new Error(`server "${kind}": ${def.missing ?? `${entry} not found`}`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dir = dataDir ?? tempDir(kind);
  const t0 = performance.now();
  // --server-cpus: the server on those cores (taskset execs node, so the pid is the server's).
  const argv = [...nodeArgs, entry];
  const child = track(spawn(opts.serverCpus ? 'taskset' : process.execPath, opts.serverCpus ? ['-c', opts.serverCpus, process.execPath, ...argv] : argv, {
    cwd: root,
    env: { ...process.env, PORT: String(port), ...def.env(dir), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  // Keep only the tail of the server's output, for error messages.
  let tail = '';
  const keep = (d) => { tail = (tail + d).slice(-2000); };
  let listening = null;
  let lines = '';
  child.stdout.on('data', (d) => {
    keep(d);
    if (listening) return;
    lines += d;
    const parts = lines.split('\n');
    lines = parts.pop().slice(-100_000);
    for (const line of parts) {
      if (!line.includes('"event":"listening"')) continue;
      try {
        listening = JSON.parse(line);
      } catch {
        // not our log line
      }
    }
  });
  child.stderr.on('data', keep);

  const deadline = t0 + timeoutMs;
  while (performance.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server "${kind}" exited during start-up (${child.exitCode ?? child.signalCode}):\n${tail.trim()}`);
    }
    try {
      const res = await fetch(`${base}/api/status`);
      await res.arrayBuffer();
      if (res.status === 200) return { kind, base, child, pid: child.pid, readyMs: performance.now() - t0, dataDir: dir, listening: () => listening };
    } catch {
      // Not listening yet.
    }
    await sleep(20);
  }
  await stopChild(child);
  throw new Error(`server "${kind}" did not answer 200 on /api/status within ${timeoutMs / 1000} s:\n${tail.trim()}`);
}

async function registerAgents(base) {
  const agents = [];
  for (let i = 0; i < AGENTS; i++) {
    agents.push(await api(base, 'POST', '/api/register', {
      body: { name: `bench-agent-${i}`, provider: 'bench', acceptsPublicArchive: true, operatorAuthorized: true },
    }));
  }
  return agents.map((a) => a.token);
}

// Seeds agents, one topic and `messages` messages spread over the agents; for
// the work scenario also work items created by agent 0 and claimed by agents 1..7
// (a creator cannot claim its own work).
async function seedForum(server, { messages, contentFor = (i) => `seed message ${i}`, workItems = 0 }) {
  const tokens = await registerAgents(server.base);
  const topic = await api(server.base, 'POST', '/api/topics', { token: tokens[0], body: { title: 'bench topic' } });
  await pool(messages, 64, (i) => api(server.base, 'POST', '/api/messages', {
    token: tokens[i % AGENTS],
    body: { topicId: topic.id, content: contentFor(i), clientId: `seed-${i}` },
  }));
  const created = await pool(workItems, 8, (i) => api(server.base, 'POST', '/api/work', {
    token: tokens[0],
    body: { clientId: `seed-work-${i}`, title: `bench item ${i}`, description: 'benchmark claim/release cycles',
      acceptanceCriteria: 'none', topicId: topic.id },
  }));
  const items = created.map((w, i) => ({ id: w.id, revision: w.revision, state: w.state, tokenIndex: 1 + (i % (AGENTS - 1)) }));
  return { tokens, topicId: topic.id, items };
}

// A cut-off load run leaves items in unknown states: reread them before each run.
async function refreshWorkItems(server) {
  const current = new Map();
  for (let after = 0, hasMore = true; hasMore;) {
    const page = await api(server.base, 'GET', `/api/work?after=${after}&limit=100`, { token: server.seed.tokens[0] });
    for (const w of page.items) current.set(w.id, w);
    ({ nextAfter: after, hasMore } = page);
  }
  for (const item of server.seed.items) {
    const w = current.get(item.id);
    if (w) Object.assign(item, { revision: w.revision, state: w.state });
  }
  return server.seed.items;
}

async function runCell(gen, server, scenarioName, connections, seconds) {
  const sc = SCENARIOS[scenarioName];
  return gen.run({
    url: server.base + sc.path(server),
    connections,
    seconds,
    mode: sc.mode,
    tokens: sc.auth === false ? [] : server.seed.tokens,
    topicId: server.seed?.topicId,
    items: sc.mode === 'work' ? await refreshWorkItems(server) : undefined,
  });
}

// ---- extra measurements (ours and before) ----------------------------------

async function measureReplay(opts, kinds) {
  const generator = opts.genArchive;
  if (!existsSync(generator)) return { skipped: `${path.relative(root, generator)} not found` };
  const dir = tempDir('replay');
  log(`replay: generating ${fmtInt(opts.replayRecords)} records…`);
  await runNode([generator, '--dir', dir, '--records', String(opts.replayRecords)]);
  const archiveBytes = dirBytes(dir);

  // The baseline runs first: the server may write into its data directory.
  log('replay: JSON.parse baseline…');
  let t0 = performance.now();
  const baseline = JSON.parse(await runNode([path.join(benchDir, 'reference', 'replay-baseline.mjs'), dir]));
  const baselineSeconds = (performance.now() - t0) / 1000;

  // The generator leaves a snapshot (its App closes like a server). The target is about
  // replaying the log, so the first start runs without any derived file (data/index: snapshot
  // and search index) and replays every record; it writes a snapshot when it stops, and the
  // second start shows what an ordinary restart costs.
  // Each server starts with no derived files of the other (their formats differ).
  const servers = {};
  for (const kind of kinds) {
    log(`replay: starting ${kind} on the archive with no derived files (whole replay)…`);
    rmSync(path.join(dir, 'index'), { recursive: true, force: true });
    const whole = await startServer(kind, opts, { dataDir: dir, timeoutMs: opts.replayTimeoutMs });
    const peakRss = peakRssBytes(whole.pid);
    await stopChild(whole.child);
    log(`replay: starting ${kind} again (from the snapshot the first start wrote)…`);
    const again = await startServer(kind, opts, { dataDir: dir, timeoutMs: opts.replayTimeoutMs });
    const snapshotPeakRss = peakRssBytes(again.pid);
    await stopChild(again.child);
    servers[kind] = { seconds: whole.readyMs / 1000, peakRss, snapshotSeconds: again.readyMs / 1000, snapshotPeakRss };
  }
  return { archiveBytes, baseline, baselineSeconds, servers };
}

// Deterministic pseudo-words with a skewed frequency, so a query word can hit
// many messages (early exit), few (near-full scan) or none (full scan).
function searchCorpus() {
  const syllables = ['ka', 'lo', 'mi', 're', 'tu', 'sa', 'ne', 'po', 'vi', 'du'];
  const vocab = Array.from({ length: 500 }, (_, i) =>
    syllables[i % 10] + syllables[Math.floor(i / 10) % 10] + syllables[Math.floor(i / 100) % 10] + 'x');
  let state = 42;
  const random = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const contentFor = () => Array.from({ length: 12 }, () => vocab[Math.floor(vocab.length * random() ** 3)]).join(' ');
  return { contentFor, queries: { frequent: vocab[0], rare: vocab[vocab.length - 1], absent: 'qqzzjx' } };
}

async function measureSearch(opts, kind) {
  const server = await startServer(kind, opts);
  const { contentFor, queries } = searchCorpus();
  log(`search: seeding ${fmtInt(opts.searchMessages)} messages into ${kind} over HTTP…`);
  server.seed = await seedForum(server, { messages: opts.searchMessages, contentFor });
  const rows = [];
  for (const [kind, word] of Object.entries(queries)) {
    const url = `/api/search?q=${encodeURIComponent(word)}&limit=50`;
    const times = [];
    for (let i = 0; i < 220; i++) {
      const t0 = performance.now();
      await api(server.base, 'GET', url, { token: server.seed.tokens[i % AGENTS] });
      if (i >= 20) times.push(performance.now() - t0); // first 20 are warm-up
    }
    rows.push({ kind, word, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) });
  }
  await stopChild(server.child);
  return { messages: opts.searchMessages, rows };
}

// Issue 39's target for ours: main-thread CPU per write at 64 connections.
const STAGES_TARGET_US = 40;

// The per-stage breakdown of one server (scripts/bench/lib/stages.mjs): a fresh server under
// --cpu-prof, seeded, one warm-up and one measured write cell; the main thread's CPU time is read
// before and after the measured cell, and only the profile's samples inside it are counted.
async function measureStages(opts, gen, kind) {
  const profDir = tempDir(`prof-${kind}`);
  let server;
  try {
    server = await startServer(kind, opts, { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] });
    server.seed = await seedForum(server, { messages: Math.min(opts.seedMessages, 2000) });
    if (opts.warmup > 0) await runCell(gen, server, 'write', opts.stagesConnections, opts.warmup);
    const cpu0 = mainThreadCpuUs(server.pid);
    const t0 = monotonicUs();
    const r = await runCell(gen, server, 'write', opts.stagesConnections, opts.duration);
    const t1 = monotonicUs();
    const cpu1 = mainThreadCpuUs(server.pid);
    await stopChild(server.child);
    if (cpu0 === null || cpu1 === null) throw new Error('/proc/<pid>/task/<pid>/stat not readable (Linux only)');
    const writes = r.requests - r.non2xx;
    if (writes <= 0) throw new Error('no write succeeded');
    const samples = stageSamples(readProfile(profDir), { fromUs: t0, toUs: t1 });
    if (samples.busy === 0) throw new Error('no profile sample fell inside the cell');
    const result = { kind, ...perWrite(samples, cpu1 - cpu0, writes), writes, rps: r.rps, samples: samples.busy };
    log(`stages: ${kind} ${result.totalUsPerWrite.toFixed(1)} µs of main-thread CPU per write (${writes} writes, ${samples.busy} samples)`);
    return result;
  } catch (err) {
    if (server) await stopChild(server.child);
    log(`stages: ${kind} not measured: ${err.message}`);
    return { kind, failed: err.message };
  }
}

// ---- report ---------------------------------------------------------------

function summarize(rounds) {
  const rps = rounds.map((r) => r.rps);
  const requests = rounds.reduce((a, r) => a + r.requests, 0);
  const bad = rounds.reduce((a, r) => a + r.non2xx, 0);
  return {
    rps: median(rps),
    minRps: Math.min(...rps),
    maxRps: Math.max(...rps),
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    requests,
    non2xxRatio: requests ? bad / requests : 1,
    socketErrors: rounds.reduce((a, r) => a + r.socketErrors, 0),
  };
}

function renderReport({ opts, gen, warning, cells, stages, replay, search, replication, push, cliStart }) {
  const out = [];
  const sha = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout?.trim() || 'unknown';
  out.push(`# Agent Forum benchmark${opts.smoke ? ' (smoke)' : ''}`, '');
  out.push(`${new Date().toISOString()} · commit ${sha} · node ${process.version} · ${os.cpus().length}× ${os.cpus()[0]?.model ?? 'cpu'}`);
  if (warning) out.push(`**${warning}**`, '');
  out.push(`load generator: ${gen.name} · ${opts.rounds} round(s) · ${opts.warmup} s warm-up + ${opts.duration} s measured per cell · seed ${opts.seedMessages} messages${opts.serverCpus ? ` · servers pinned to CPU ${opts.serverCpus} (--server-cpus)` : ''}`, '');

  out.push('## Throughput and latency (medians across rounds)', '');
  out.push('| scenario | conns | server | req/s | req/s min–max | p50 ms | p99 ms | non-2xx | socket errors |');
  out.push('|---|---:|---|---:|---:|---:|---:|---:|---:|');
  for (const c of cells.values()) {
    const s = c.summary;
    out.push(`| ${c.scenario} | ${c.connections} | ${c.kind} | ${fmtInt(s.rps)} | ${fmtInt(s.minRps)}–${fmtInt(s.maxRps)} | ${fmtMs(s.p50Ms)} | ${fmtMs(s.p99Ms)} | ${(s.non2xxRatio * 100).toFixed(2)}% | ${s.socketErrors} |`);
  }

  const ratioRows = [];
  for (const c of cells.values()) {
    if (c.kind !== 'ours') continue;
    const other = (server) => cells.get(`${c.scenario}|${c.connections}|${server}`)?.summary;
    const refKind = SCENARIOS[c.scenario].reference;
    const ref = refKind ? other(refKind) : undefined;
    const before = other('before');
    const prior = other('prior');
    const cell = (s) => (s ? `${fmtInt(s.rps)} (p99 ${fmtMs(s.p99Ms)})` : '—');
    const row = { ours: c.summary, vsRef: ref ? c.summary.rps / ref.rps : NaN };
    const target = TARGETS[`${c.scenario}|${c.connections}`];
    let verdict = '';
    if (target) verdict = `${target.text}: ${!ref ? 'n/a' : target.met(row) ? 'met' : 'MISSED'}`;
    ratioRows.push(`| ${c.scenario} | ${c.connections} | ${cell(c.summary)} | ${cell(before)} | ${cell(prior)} | ${ref ? `${refKind} ${cell(ref)}` : '—'} | ${ref ? fmtRatio(row.vsRef) : '—'} | ${ref && before ? fmtRatio(before.rps / ref.rps) : '—'} | ${ref && prior ? fmtRatio(prior.rps / ref.rps) : '—'} | ${before ? fmtRatio(c.summary.rps / before.rps) : '—'} | ${prior ? fmtRatio(c.summary.rps / prior.rps) : '—'} | ${verdict} |`);
  }
  if (ratioRows.length) {
    const named = (entry, commit) => (opts.givenEntries?.has(entry) ? entryLabel(entry) : `commit ${commit}`);
    out.push('', `## Ours beside before (${named(opts.beforeEntry, BEFORE_COMMIT)}), prior (${named(opts.priorEntry, PRIOR_COMMIT)}) and the reference (req/s, median across rounds; p99 in ms)`, '');
    out.push('| scenario | conns | ours | before | prior | reference | ours/ref | before/ref | prior/ref | ours/before | ours/prior | target (issue 30) |', '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|', ...ratioRows);
  }
  if (stages) out.push(...renderStages(stages, { connections: opts.stagesConnections, seconds: opts.duration, targetUs: STAGES_TARGET_US }));

  if (replication) out.push(...renderReplication(replication, opts));
  if (push) out.push(...renderPush(push, opts));
  if (cliStart) out.push(...renderCliStart(cliStart, { against: opts.cliAgainst }));
  if (replay) {
    out.push('', '## Replay', '');
    if (replay.skipped) out.push(`skipped: ${replay.skipped}`);
    else {
      out.push(`archive: ${fmtInt(replay.baseline.records)} records in ${replay.baseline.files} .jsonl file(s), ${fmtMiB(replay.archiveBytes)} on disk`, '');
      out.push('| measure | server | value | target |', '|---|---|---:|---|');
      out.push(`| bare JSON.parse of every line | — | ${replay.baselineSeconds.toFixed(2)} s (peak RSS ${fmtMiB(replay.baseline.peakRssBytes)}) | |`);
      for (const [kind, r] of Object.entries(replay.servers)) {
        const ratio = r.seconds / replay.baselineSeconds;
        const rssRatio = r.peakRss / replay.archiveBytes;
        out.push(`| whole replay (no derived files): spawn → 200 on /api/status | ${kind} | ${r.seconds.toFixed(2)} s | |`);
        out.push(`| ratio to the JSON.parse floor | ${kind} | ${fmtRatio(ratio)} | ≤ 3×: ${ratio <= 3 ? 'met' : 'MISSED'} |`);
        out.push(`| peak RSS (VmHWM), whole replay | ${kind} | ${r.peakRss === null ? 'n/a' : fmtMiB(r.peakRss)} | ≤ 2× archive: ${r.peakRss !== null && rssRatio <= 2 ? 'met' : 'MISSED'} (${fmtRatio(rssRatio)}) |`);
        out.push(`| restart from the snapshot: spawn → 200 on /api/status | ${kind} | ${r.snapshotSeconds.toFixed(2)} s (peak RSS ${r.snapshotPeakRss === null ? 'n/a' : fmtMiB(r.snapshotPeakRss)}) | |`);
      }
    }
  }
  if (search) {
    const kinds = Object.keys(search);
    const first = search[kinds[0]];
    out.push('', `## q search over ${fmtInt(first.messages)} messages (/api/search, sequential, 200 requests each)`, '');
    out.push(`| query | word | ${kinds.map((k) => `${k} p50 / p99 ms`).join(' | ')} | target: ours p50 ≤ 20 ms |`, `|---|---|${kinds.map(() => '---:|').join('')}---|`);
    first.rows.forEach((r, i) => {
      const cols = kinds.map((k) => `${fmtMs(search[k].rows[i].p50Ms)} / ${fmtMs(search[k].rows[i].p99Ms)}`);
      const ours = search.ours?.rows[i];
      out.push(`| ${r.kind} | ${r.word} | ${cols.join(' | ')} | ${ours ? (ours.p50Ms <= 20 ? 'met' : 'MISSED') : 'n/a'} |`);
    });
  }
  return out.join('\n') + '\n';
}

// ---- main -----------------------------------------------------------------

async function main() {
  const opts = parseOptions(process.argv.slice(2));
  if (opts.help) {
    log(HELP);
    return 0;
  }
  const cliStartOf = () => measureCliStart({ cli: path.join(path.dirname(opts.oursEntry), 'cli.js'), runs: opts.cliStartRuns, against: opts.cliAgainst, log });
  if (opts.only === 'cli-start') {
    const warning = busyWarning();
    if (warning) log(warning);
    const cliStart = await cliStartOf();
    log(renderCliStart(cliStart, { against: opts.cliAgainst }).join('\n'));
    return cliStart.skipped ? 1 : 0;
  }
  const timelineOf = () => runTimeline({ ours: opts.oursEntry, against: opts.timelineAgainst, writes: 200, blocks: 6, statusSeconds: 3, statusRounds: 3 }, log);
  if (opts.only === 'timeline') {
    log((await timelineOf()).markdown);
    return 0;
  }
  const mcpOf = () => measureMcp({ entry: opts.oursEntry, log });
  if (opts.only === 'mcp') {
    const warning = busyWarning();
    if (warning) log(warning);
    const mcp = await mcpOf();
    log(renderMcp(mcp).join('\n'));
    return mcp.failed ? 1 : 0;
  }
  // Only Fastify + SQLite and autocannon need scripts/bench's own packages.
  if (opts.servers.includes('fastify') || opts.loadgen === 'autocannon' || spawnSync('wrk', ['-v']).error) ensureBenchDeps();
  const { pickLoadGenerator } = await import('./bench/lib/loadgen.mjs');
  const gen = pickLoadGenerator({ prefer: opts.loadgen, threads: opts.threads, log, track });
  log(`load generator: ${gen.name}`);
  const warning = busyWarning();
  if (warning) log(warning);

  // Work items: two per connection, so no connection ever waits for a free item.
  const workItems = opts.scenarios.includes('work') ? 2 * Math.max(...opts.connections) : 0;
  // The headings name what ran: a server given with --before/--prior by its file (and the commit
  // of the checkout it is in), a default one by its commit.
  opts.givenEntries = new Set([opts.beforeEntry, opts.priorEntry].filter(Boolean));
  for (const [kind, commit, entryKey, optionalKey] of [['before', BEFORE_COMMIT, 'beforeEntry', 'beforeOptional'], ['prior', PRIOR_COMMIT, 'priorEntry', 'priorOptional']]) {
    if (!opts.servers.includes(kind) || opts[entryKey]) continue;
    try {
      if (!commitAvailable(commit)) throw new Error(`commit ${commit} is not in this clone (shallow?)`);
      opts[entryKey] = path.join(baselineDist(commit, { log }), 'server.js');
    } catch (err) {
      if (!opts[optionalKey]) throw err;
      log(`warning: server "${kind}" skipped: ${err.message}`);
      opts.servers = opts.servers.filter((k) => k !== kind);
    }
  }
  const servers = [];
  for (const kind of opts.servers) {
    const server = await startServer(kind, opts);
    log(`${kind}: ready on ${server.base} after ${server.readyMs.toFixed(0)} ms`);
    if (kind !== 'bare') {
      const t0 = performance.now();
      const items = FORUM_SERVERS.has(kind) ? workItems : 0;
      server.seed = await seedForum(server, { messages: opts.seedMessages, workItems: items });
      log(`${kind}: seeded ${AGENTS} agents, 1 topic, ${opts.seedMessages} messages${items ? `, ${items} work items` : ''} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    servers.push(server);
  }

  // Key order fixes the table order: scenario, then connections, then server.
  const cells = new Map();
  for (const scenario of opts.scenarios) {
    for (const connections of opts.connections) {
      for (const server of servers) {
        if (!SCENARIOS[scenario].servers.includes(server.kind)) continue;
        cells.set(`${scenario}|${connections}|${server.kind}`, { scenario, connections, kind: server.kind, server, rounds: [] });
      }
    }
  }

  for (let round = 0; round < opts.rounds; round++) {
    for (const scenario of opts.scenarios) {
      for (const connections of opts.connections) {
        // Rotate the server order each round so no server always runs first.
        const group = [...cells.values()].filter((c) => c.scenario === scenario && c.connections === connections);
        const rotated = group.map((_, i) => group[(i + round) % group.length]);
        for (const cell of rotated) {
          if (opts.warmup > 0) await runCell(gen, cell.server, scenario, connections, opts.warmup);
          const r = await runCell(gen, cell.server, scenario, connections, opts.duration);
          cell.rounds.push(r);
          log(`[round ${round + 1}/${opts.rounds}] ${cell.kind.padEnd(7)} ${scenario.padEnd(8)} c=${String(connections).padEnd(3)} ${fmtInt(r.rps).padStart(7)} req/s  p50 ${fmtMs(r.p50Ms)} ms  p99 ${fmtMs(r.p99Ms)} ms${r.non2xx ? `  non-2xx ${r.non2xx}` : ''}`);
        }
      }
    }
  }
  for (const cell of cells.values()) cell.summary = summarize(cell.rounds);
  await Promise.all(servers.map((s) => stopChild(s.child)));

  let stages = null;
  if (opts.stages && opts.scenarios.includes('write')) {
    stages = [];
    for (const kind of opts.servers.filter((k) => FORUM_SERVERS.has(k))) stages.push(await measureStages(opts, gen, kind));
  }

  let replication = null;
  if (opts.replication) {
    replication = await measureReplication({ opts, gen, log, track, tempDir, onCleanup, startServer, stopChild, seedForum, runCell, summarize });
    if (replication.skipped) log(`replication skipped: ${replication.skipped}`);
    if (replication.failed) console.error(`replication failed: ${replication.failed}`);
  }

  const cliStart = opts.cliStart ? await cliStartOf() : null;
  if (cliStart?.skipped) log(`CLI start skipped: ${cliStart.skipped}`);

  const push = opts.push ? await measurePush({ opts, gen, log, startServer, stopChild, seedForum, runCell, summarize }) : null;
  if (push?.skipped) log(`push skipped: ${push.skipped}`);

  const forumKinds = opts.servers.filter((k) => FORUM_SERVERS.has(k));
  const replay = opts.replay && forumKinds.length ? await measureReplay(opts, forumKinds) : null;
  if (replay?.skipped) log(`replay skipped: ${replay.skipped}`);
  let search = null;
  if (opts.search && forumKinds.length) {
    search = {};
    for (const kind of forumKinds) search[kind] = await measureSearch(opts, kind);
  }

  const timeline = opts.timeline ? await timelineOf() : null;
  const mcp = opts.mcp ? await mcpOf() : null;
  const report = renderReport({ opts, gen, warning, cells, stages, replay, search, replication, push, cliStart }) +
    (timeline ? `\n\n## Latency of one (issue 56)\n\n${timeline.markdown}\n` : '') +
    (mcp ? `\n\n${renderMcp(mcp).join('\n')}\n` : '');
  log(`\n${report}`);
  writeFileSync(opts.out, report);
  log(`written to ${opts.out}`);

  const failures = [...cells.values()].filter((c) => c.summary.non2xxRatio > MAX_NON2XX_RATIO);
  for (const c of failures) {
    console.error(`FAIL: ${c.kind} ${c.scenario} c=${c.connections}: ${(c.summary.non2xxRatio * 100).toFixed(2)}% non-2xx responses (limit ${MAX_NON2XX_RATIO * 100}%)`);
  }
  const replicationProblems = replicationFailures(replication, MAX_NON2XX_RATIO);
  if (replication?.failed) replicationProblems.push(`replication: ${replication.failed}`);
  replicationProblems.push(...pushFailures(push, MAX_NON2XX_RATIO));
  for (const p of replicationProblems) console.error(`FAIL: ${p}`);
  return failures.length || replicationProblems.length ? 1 : 0;
}

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (error) => {
    // After a signal, failures of the children being stopped are expected noise.
    if (interrupted) return;
    console.error(`bench: ${error.message}`);
    await cleanup();
    process.exit(1);
  });
