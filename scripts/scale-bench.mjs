#!/usr/bin/env node
// Scale benchmark (issue 17): `npm run bench -- --scale N` or `node scripts/scale-bench.mjs --records N`.
//
// Builds an N-record archive with scripts/gen-archive.mjs (or reuses --dir), then, for today's
// tree (dist/) and for the design before issue 17 (commit 8a2aac2, checked out and built once
// under scripts/bench/.baseline-8a2aac2), one after the other on the same archive and machine:
//   - starts `node dist/server.js` with no node flags, the page cache warm (the segments are
//     read once first), and measures the time to ready and RSS; a server that exits or does not
//     listen within --start-timeout is reported as "cannot start" with its last stderr line;
//   - for today's tree, removes the derived files (data/index: state snapshot, search index), so
//     its first start is a whole replay; waits until its search index covers the log (built in
//     the background), stops it (writing the snapshot) and starts it again: that second start is
//     the one measured against the targets;
//   - measures `q` latency (p50/p99 over --requests sequential requests on one connection) for a
//     frequent word (`benchmark`), a rare one (`zephyrine`, planted by gen-archive every 500,000th
//     message) and an absent one (`quixotry`), on GET /api/search and GET /api/messages;
//   - while one client loops absent-word searches, 4 connections loop GET /api/status for
//     --load-seconds: status p50/p99 and requests per second;
//   - RSS (VmRSS) and peak (VmHWM) after that load;
//   - for today's tree, stops it, evicts every file of the data folder from the page cache (GNU
//     dd iflag=nocache, i.e. posix_fadvise DONTNEED; fincore confirms) and measures one more
//     start: the cold start.
// Prints a markdown table next to the targets and writes it to scripts/bench/last-scale-result.md.
//
// Flags: --records N | --dir DIR (an archive made by gen-archive; kept) · --keep (keep a generated
// archive) · --no-baseline · --baseline-dir DIR · --requests 100 · --load-seconds 10 ·
// --start-timeout 900 · --out FILE · --help
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Pool } from 'undici';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BASELINE_COMMIT = '8a2aac2';
const WORDS = { frequent: 'benchmark', rare: 'zephyrine', absent: 'quixotry' };
const TARGETS = { readyS: 20, coldReadyS: 60, rssMiB: 1536, searchP50: 10, searchP99: 50, statusP99: 10 };

const { values: opts } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--scale'),
  options: {
    records: { type: 'string' },
    dir: { type: 'string' },
    keep: { type: 'boolean', default: false },
    baseline: { type: 'boolean', default: true },
    'no-baseline': { type: 'boolean', default: false },
    'baseline-dir': { type: 'string' },
    requests: { type: 'string', default: '100' },
    'load-seconds': { type: 'string', default: '10' },
    'start-timeout': { type: 'string', default: '900' },
    out: { type: 'string', default: path.join(root, 'scripts', 'bench', 'last-scale-result.md') },
    help: { type: 'boolean', default: false },
  },
  allowPositionals: true,
  strict: true,
});
// `npm run bench -- --scale N` passes N as a positional after --scale.
const positional = process.argv.slice(2).find((a, i, all) => all[i - 1] === '--scale');
if (opts.help || (!opts.records && !opts.dir && !positional)) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1).filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n'));
  process.exit(opts.help ? 0 : 2);
}
const records = Number(opts.records ?? positional ?? 0);
const requests = Number(opts.requests);
const loadSeconds = Number(opts['load-seconds']);
const startTimeoutMs = Number(opts['start-timeout']) * 1000;
const withBaseline = opts.baseline && !opts['no-baseline'];

const children = new Set();
const cleanups = [];
function cleanup() {
  for (const c of children) c.kill('SIGKILL');
  for (const f of cleanups.splice(0)) f();
}
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});

const percentile = (xs, p) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]);
const mib = (kb) => kb / 1024;

/** VmRSS and VmHWM of a process, in KiB. */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** Reads every segment once so the page cache is warm. */
async function warmPageCache(dataDir) {
  const logDir = path.join(dataDir, 'log');
  for (const f of readdirSync(logDir)) {
    await new Promise((resolve, reject) => createReadStream(path.join(logDir, f), { highWaterMark: 4 << 20 }).on('data', () => {}).on('end', resolve).on('error', reject));
  }
}

/** Starts `node <dist>/server.js` on dataDir; resolves to {proc, url, readyS, stdout()} or {failed}. */
function startServer(dist, dataDir) {
  const started = performance.now();
  const proc = spawn(process.execPath, [path.join(dist, 'server.js')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      resolve({ failed: `did not listen within ${startTimeoutMs / 1000} s` });
    }, startTimeoutMs);
    proc.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) {
        clearTimeout(timer);
        const listening = JSON.parse(line);
        resolve({ proc, url: listening.url, records: listening.records, readyS: (performance.now() - started) / 1000, stdout: () => out });
      }
    });
    proc.once('exit', (code, signal) => {
      children.delete(proc);
      clearTimeout(timer);
      const last = stderr.trim().split('\n').filter(Boolean).slice(-1)[0] ?? '';
      resolve({ failed: `exited (${code ?? signal}) before listening: ${last.slice(0, 160)}` });
    });
  });
}

/** Every file under `dir`, recursively. */
function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : e.isFile() ? [path.join(dir, e.name)] : []));
}

/**
 * Evicts every file of the data folder (segments, state snapshot, search shards) from the page
 * cache, so the next start reads them from the disk: GNU dd's `iflag=nocache count=0` asks the
 * kernel to drop the file's clean pages (posix_fadvise DONTNEED); no root needed. Returns the
 * bytes still cached afterwards as `fincore` counts them (null when fincore is missing).
 */
function evictPageCache(dataDir) {
  const files = filesUnder(dataDir);
  for (const f of files) {
    const r = spawnSync('dd', [`if=${f}`, 'iflag=nocache', 'count=0', 'status=none']);
    if (r.status !== 0) throw new Error(`dd could not evict ${f}: ${r.stderr}`);
  }
  const fc = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', ...files], { encoding: 'utf8' });
  if (fc.status !== 0) return null;
  return fc.stdout.split('\n').filter(Boolean).reduce((n, l) => n + Number(l.trim()), 0);
}

function stopServer(server) {
  return new Promise((resolve) => {
    if (server.proc.exitCode !== null) return resolve();
    server.proc.once('exit', () => {
      children.delete(server.proc);
      resolve();
    });
    server.proc.kill('SIGTERM');
  });
}

async function register(url) {
  const client = new Client(url);
  const res = await client.request({
    path: '/api/register',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'scale-bench', provider: 'bench', acceptsPublicArchive: true, operatorAuthorized: true }),
  });
  const body = await res.body.json();
  await client.close();
  if (res.statusCode !== 201) throw new Error(`register: ${res.statusCode} ${JSON.stringify(body)}`);
  return body.token;
}

/** p50/p99 ms of `n` sequential GETs of `urlPath` (after a warm-up of 5). */
async function latency(url, urlPath, token, n) {
  const client = new Client(url, { pipelining: 1 });
  const times = [];
  let hits = null;
  for (let i = 0; i < n + 5; i++) {
    const t = performance.now();
    const res = await client.request({ path: urlPath, method: 'GET', headers: { authorization: `Bearer ${token}` } });
    const body = await res.body.json();
    if (res.statusCode !== 200) throw new Error(`${urlPath}: ${res.statusCode}`);
    if (i >= 5) times.push(performance.now() - t);
    hits = body.messages.length;
  }
  await client.close();
  return { p50: percentile(times, 50), p99: percentile(times, 99), hits };
}

/** GET /api/status at 4 connections while one client loops absent-word searches. */
async function statusUnderSearch(url, token, seconds) {
  const until = performance.now() + seconds * 1000;
  const search = new Client(url);
  const pool = new Pool(url, { connections: 4 });
  const times = [];
  let searches = 0;
  const searchLoop = async () => {
    while (performance.now() < until) {
      const res = await search.request({ path: `/api/search?q=${WORDS.absent}`, method: 'GET', headers: { authorization: `Bearer ${token}` } });
      await res.body.dump();
      searches++;
    }
  };
  const statusLoop = async () => {
    while (performance.now() < until) {
      const t = performance.now();
      const res = await pool.request({ path: '/api/status', method: 'GET' });
      await res.body.dump();
      times.push(performance.now() - t);
    }
  };
  await Promise.all([searchLoop(), statusLoop(), statusLoop(), statusLoop(), statusLoop()]);
  await search.close();
  await pool.close();
  return { p50: percentile(times, 50), p99: percentile(times, 99), rps: times.length / seconds, searches };
}

/** Waits until the server's log (stdout) says its search index covers the log. */
async function indexCaughtUp(server, timeoutMs) {
  const started = performance.now();
  while (!/search index: .*covers the log/.test(server.stdout())) {
    if (performance.now() - started > timeoutMs) return false;
    if (server.proc.exitCode !== null) return false;
    await new Promise((r) => setTimeout(r, 500));
  }
  return (performance.now() - started) / 1000;
}

async function measure(name, dist, dataDir, { waitForIndex }) {
  console.error(`[${name}] warming the page cache and starting ...`);
  await warmPageCache(dataDir);
  let server = await startServer(dist, dataDir);
  if (server.failed) return { name, failed: server.failed };
  const result = { name, firstReadyS: server.readyS, records: server.records };
  if (waitForIndex) {
    console.error(`[${name}] ready in ${server.readyS.toFixed(1)} s; waiting for the search index ...`);
    result.indexBuildS = await indexCaughtUp(server, 3600_000);
    await stopServer(server);
    await warmPageCache(dataDir);
    server = await startServer(dist, dataDir);
    if (server.failed) return { name, failed: `restart: ${server.failed}` };
    await indexCaughtUp(server, 600_000);
  }
  result.readyS = server.readyS;
  result.afterStart = memoryOf(server.proc.pid);
  const token = await register(server.url);
  result.search = {};
  for (const [kind, word] of Object.entries(WORDS)) {
    for (const endpoint of ['/api/search', '/api/messages']) {
      console.error(`[${name}] q=${word} on ${endpoint} ...`);
      result.search[`${kind} ${endpoint}`] = await latency(server.url, `${endpoint}?q=${word}`, token, requests);
    }
  }
  console.error(`[${name}] status under an absent-word search loop ...`);
  result.status = await statusUnderSearch(server.url, token, loadSeconds);
  result.afterLoad = memoryOf(server.proc.pid);
  await stopServer(server);
  if (waitForIndex) {
    // The same start with the archive's files out of the page cache (issue 17: ≤ 60 s cold).
    result.cachedBeforeCold = evictPageCache(dataDir);
    console.error(`[${name}] page cache evicted (${result.cachedBeforeCold ?? '?'} bytes of the data folder still cached); starting cold ...`);
    server = await startServer(dist, dataDir);
    if (server.failed) return { name, failed: `cold start: ${server.failed}` };
    result.coldReadyS = server.readyS;
    // RSS at the same moment as after the warm start: once the search index reports it covers the log.
    await indexCaughtUp(server, 600_000);
    result.afterColdStart = memoryOf(server.proc.pid);
    await stopServer(server);
  }
  return result;
}

/** Checks out and builds the baseline commit once; returns its dist folder. */
function baselineDist() {
  const dir = opts['baseline-dir'] ?? path.join(root, 'scripts', 'bench', `.baseline-${BASELINE_COMMIT}`);
  if (!existsSync(path.join(dir, 'dist', 'server.js'))) {
    console.error(`[baseline] checking out ${BASELINE_COMMIT} into ${dir} and building it ...`);
    rmSync(dir, { recursive: true, force: true });
    const run = (cmd, args, cwd) => {
      const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
      if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed`);
    };
    run('git', ['worktree', 'add', '--detach', '--force', dir, BASELINE_COMMIT], root);
    run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'], dir);
    run('npx', ['tsc', '-p', 'tsconfig.json'], dir);
  }
  return path.join(dir, 'dist');
}

function row(label, base, ours, target, met) {
  return `| ${label} | ${base} | ${ours} | ${target} | ${met === undefined ? '' : met ? 'met' : '**missed**'} |`;
}

async function main() {
  let dataDir = opts.dir ? path.resolve(opts.dir) : null;
  if (dataDir === null || !existsSync(path.join(dataDir, 'meta.json'))) {
    dataDir ??= mkdtempSync(path.join(os.tmpdir(), 'forum-scale-'));
    if (!opts.keep && !opts.dir) cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    console.error(`generating ${records} records into ${dataDir} ...`);
    const gen = spawnSync(process.execPath, [path.join(root, 'scripts', 'gen-archive.mjs'), '--dir', dataDir, '--records', String(records)], { stdio: 'inherit' });
    if (gen.status !== 0) throw new Error('gen-archive failed');
  }
  const archiveBytes = readdirSync(path.join(dataDir, 'log')).reduce((n, f) => n + statSync(path.join(dataDir, 'log', f)).size, 0);
  // The baseline knows nothing of the derived index files: it runs on the log alone.
  const results = [];
  if (withBaseline) results.push(await measure(`baseline ${BASELINE_COMMIT}`, baselineDist(), dataDir, { waitForIndex: false }));
  else results.push({ name: 'baseline (skipped)', failed: 'not run (--no-baseline)' });
  const sha = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim();
  // Derived files from earlier runs would make the first start a snapshot load and the index a
  // catch-up: remove them, so the first start is a whole replay and the index is built whole.
  rmSync(path.join(dataDir, 'index'), { recursive: true, force: true });
  results.push(await measure(`current ${sha}`, path.join(root, 'dist'), dataDir, { waitForIndex: true }));

  const [base, ours] = results;
  const val = (r, f, digits = 1) => (r.failed ? (r === base && results.indexOf(r) === 0 ? `cannot start: ${r.failed}` : 'n/a') : f(r).toFixed(digits));
  const lines = [
    `Scale benchmark: ${Number(records || ours.records || 0).toLocaleString('en-US')} records, archive ${(archiveBytes / 2 ** 20).toFixed(1)} MiB; ` +
      `${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, Node ${process.version}; page cache warm except in the cold-start row; no node flags.`,
    '',
    `| measure | ${base.name} | ${ours.name} | target | |`,
    '|---|---:|---:|---|---|',
    row('ready after start (s)', val(base, (r) => r.readyS), val(ours, (r) => r.readyS), `≤ ${TARGETS.readyS}`, ours.failed ? false : ours.readyS <= TARGETS.readyS),
    row(
      'ready after start, data folder evicted from the page cache (s)',
      '—',
      ours.failed || ours.coldReadyS === undefined ? 'n/a' : `${ours.coldReadyS.toFixed(1)} (RSS ${mib(ours.afterColdStart.rss).toFixed(0)} MiB)`,
      `≤ ${TARGETS.coldReadyS}`,
      ours.failed || ours.coldReadyS === undefined ? false : ours.coldReadyS <= TARGETS.coldReadyS,
    ),
    row('first start: whole replay, no derived files (s)', val(base, (r) => r.firstReadyS), val(ours, (r) => r.firstReadyS), '', undefined),
    row('search index built whole in the background (s)', '—', ours.indexBuildS ? ours.indexBuildS.toFixed(0) : 'n/a', '', undefined),
    row('RSS after start (MiB)', val(base, (r) => mib(r.afterStart.rss), 0), val(ours, (r) => mib(r.afterStart.rss), 0), `≤ ${TARGETS.rssMiB}`, ours.failed ? false : mib(ours.afterStart.rss) <= TARGETS.rssMiB),
  ];
  for (const kind of Object.keys(WORDS)) {
    for (const endpoint of ['/api/search', '/api/messages']) {
      const key = `${kind} ${endpoint}`;
      const f = (r, p) => r.search[key][p];
      const met = ours.failed ? false : f(ours, 'p50') <= TARGETS.searchP50 && f(ours, 'p99') <= TARGETS.searchP99;
      lines.push(
        row(
          `q ${kind} (\`${WORDS[kind]}\`) ${endpoint} p50 / p99 ms (hits)`,
          base.failed ? val(base, () => 0) : `${f(base, 'p50').toFixed(2)} / ${f(base, 'p99').toFixed(2)} (${base.search[key].hits})`,
          ours.failed ? 'n/a' : `${f(ours, 'p50').toFixed(2)} / ${f(ours, 'p99').toFixed(2)} (${ours.search[key].hits})`,
          `≤ ${TARGETS.searchP50} / ≤ ${TARGETS.searchP99}`,
          met,
        ),
      );
    }
  }
  lines.push(
    row(
      'status p50 / p99 ms at 4 conns, one client looping absent-word searches (status req/s)',
      base.failed ? val(base, () => 0) : `${base.status.p50.toFixed(2)} / ${base.status.p99.toFixed(2)} (${base.status.rps.toFixed(0)})`,
      ours.failed ? 'n/a' : `${ours.status.p50.toFixed(2)} / ${ours.status.p99.toFixed(2)} (${ours.status.rps.toFixed(0)})`,
      `p99 ≤ ${TARGETS.statusP99}`,
      ours.failed ? false : ours.status.p99 <= TARGETS.statusP99,
    ),
    // The target is the RSS at that moment; the peak (VmHWM, since the process started, so
    // including the start) is shown beside it.
    row('RSS after the load (MiB; peak since start)', base.failed ? val(base, () => 0) : `${mib(base.afterLoad.rss).toFixed(0)} (${mib(base.afterLoad.hwm).toFixed(0)})`, ours.failed ? 'n/a' : `${mib(ours.afterLoad.rss).toFixed(0)} (${mib(ours.afterLoad.hwm).toFixed(0)})`, `≤ ${TARGETS.rssMiB}`, ours.failed ? false : mib(ours.afterLoad.rss) <= TARGETS.rssMiB),
  );
  const table = lines.join('\n');
  console.log(table);
  writeFileSync(opts.out, `${table}\n`);
  if (ours.failed) process.exitCode = 1;
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(cleanup);
