// Measuring a built server on a large data folder, shared by scripts/bench/scale-bench.mjs (generated
// archives) and scripts/dev/post-archive.mjs (archives posted over HTTP): one implementation of the
// start/ready clock, the wait for the search index, the `q` latency rows, status under a search
// loop, memory, and the markdown tables (issue 17, issue 30).
//
// Every server this module starts is a child process in `children`; killAll() stops them (the
// scripts call it on exit and on Ctrl-C).
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, Pool } from 'undici';

/** The routes every `q` row is measured on. */
export const ENDPOINTS = ['/api/search', '/api/messages', '/api/knowledge'];

/**
 * Issue 30's targets. q: every p50/p99 of the 10M posted archive; ratio: p50 at 30M ÷ p50 at 10M;
 * rss: after start at 10M and at 30M generated records; whole replay at 10M generated records.
 */
export const TARGETS = {
  qP50: 3,
  qP99: 15,
  statusP99: 10,
  ratio30: 1.5,
  rss10MiB: 900,
  rss30MiB: 2.7 * 1024,
  wholeReplayS: 45,
  indexCompleteS: 90,
  readyS: 20,
  coldReadyS: 60,
};

/** The server's log line that says its search index covers the whole log (src/domain/search-indexer.ts). */
const INDEX_DONE = /search index: .*covers the log/;

const children = new Set();

/** SIGKILLs every server still running (exit and interrupt paths). */
export function killAll() {
  for (const c of children) c.kill('SIGKILL');
}

/** The median of `xs` (numbers; the mean of the middle two when their count is even; NaN when empty). */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
export const percentile = (xs, p) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]);
const mib = (kb) => kb / 1024;

/** VmRSS and VmHWM of a process, in KiB. */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** Bytes of every segment under dataDir/log. */
export function segmentBytes(dataDir) {
  return filesUnder(path.join(dataDir, 'log')).reduce((n, f) => n + statSync(f).size, 0);
}

/** Reads every segment once so the page cache is warm. */
export async function warmPageCache(dataDir) {
  const logDir = path.join(dataDir, 'log');
  for (const f of readdirSync(logDir)) {
    await new Promise((resolve, reject) => createReadStream(path.join(logDir, f), { highWaterMark: 4 << 20 }).on('data', () => {}).on('end', resolve).on('error', reject));
  }
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
export function evictPageCache(dataDir) {
  const files = filesUnder(dataDir);
  for (const f of files) {
    const r = spawnSync('dd', [`if=${f}`, 'iflag=nocache', 'count=0', 'status=none']);
    if (r.status !== 0) throw new Error(`dd could not evict ${f}: ${r.stderr}`);
  }
  const fc = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', ...files], { encoding: 'utf8' });
  if (fc.status !== 0) return null;
  return fc.stdout.split('\n').filter(Boolean).reduce((n, l) => n + Number(l.trim()), 0);
}

/**
 * Starts `node <dist>/server.js` (or `entry`, a script path) on dataDir (rate limits off, port 0). Resolves to
 * {proc, url, records, readyS, stdout(), indexDoneS()} once its "listening" log line appears,
 * or {failed: reason} when it exits first or does not listen within timeoutMs. readyS and
 * indexDoneS() (null until the search index reports it covers the log) count from the spawn.
 */
export function startServer(dist, dataDir, { timeoutMs, env = {}, entry = path.join(dist, 'server.js') }) {
  const started = performance.now();
  const proc = spawn(process.execPath, [entry], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let stderr = '';
  let out = '';
  let indexDoneS = null;
  proc.stderr.on('data', (d) => (stderr = (stderr + d).slice(-20_000)));
  return new Promise((resolve) => {
    let listening = false;
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      resolve({ failed: `did not listen within ${timeoutMs / 1000} s` });
    }, timeoutMs);
    proc.stdout.on('data', (d) => {
      // Only the lines that matter are kept: the output of a long run is large.
      out = (out + d).slice(-100_000);
      if (indexDoneS === null && INDEX_DONE.test(out)) indexDoneS = (performance.now() - started) / 1000;
      if (listening) return;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) {
        listening = true;
        clearTimeout(timer);
        const info = JSON.parse(line);
        resolve({ proc, url: info.url, records: info.records, readyS: (performance.now() - started) / 1000, stdout: () => out, indexDoneS: () => indexDoneS });
      }
    });
    proc.once('exit', (code, signal) => {
      children.delete(proc);
      clearTimeout(timer);
      const last = stderr.trim().split('\n').filter(Boolean).slice(-1)[0] ?? '';
      if (!listening) resolve({ failed: `exited (${code ?? signal}) before listening: ${last.slice(0, 160)}` });
    });
  });
}

/** SIGTERM, then waits for the exit (the server writes its snapshot first). */
export function stopServer(server) {
  return new Promise((resolve) => {
    if (server.proc.exitCode !== null || server.proc.signalCode !== null) return resolve();
    server.proc.once('exit', () => {
      children.delete(server.proc);
      resolve();
    });
    server.proc.kill('SIGTERM');
  });
}

/** Waits until the search index covers the log; its time from the spawn in seconds, or null on timeout or exit. */
export async function waitForIndex(server, timeoutMs) {
  const until = performance.now() + timeoutMs;
  while (server.indexDoneS() === null) {
    if (performance.now() > until || server.proc.exitCode !== null) return null;
    await new Promise((r) => setTimeout(r, 250));
  }
  return server.indexDoneS();
}

/** POST /api/register; returns the token. Throws on any status but 201. */
export async function register(url, name = 'bench-reader') {
  const client = new Client(url);
  const res = await client.request({
    path: '/api/register',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, provider: 'bench', acceptsPublicArchive: true, operatorAuthorized: true }),
  });
  const body = await res.body.json();
  await client.close();
  if (res.statusCode !== 201) throw new Error(`register: ${res.statusCode} ${JSON.stringify(body)}`);
  return body.token;
}

/**
 * p50/p99 ms of `n` sequential GETs of `urlPath` on one connection (after a warm-up of 5), and
 * the hits of the last answer (messages + knowledge items). Throws on a status other than 200.
 */
export async function latency(url, urlPath, token, n) {
  const client = new Client(url, { pipelining: 1 });
  const times = [];
  let hits = null;
  for (let i = 0; i < n + 5; i++) {
    const t = performance.now();
    const res = await client.request({ path: urlPath, method: 'GET', headers: { authorization: `Bearer ${token}` } });
    const body = await res.body.json();
    if (res.statusCode !== 200) throw new Error(`${urlPath}: ${res.statusCode} ${JSON.stringify(body).slice(0, 200)}`);
    if (i >= 5) times.push(performance.now() - t);
    hits = (body.messages?.length ?? 0) + (body.knowledge?.length ?? 0);
  }
  await client.close();
  return { p50: percentile(times, 50), p99: percentile(times, 99), hits };
}

/** GET /api/status at 4 connections while one client loops `q=<word>` searches, for `seconds`. */
export async function statusUnderSearch(url, token, seconds, word) {
  const until = performance.now() + seconds * 1000;
  const search = new Client(url);
  const pool = new Pool(url, { connections: 4 });
  const times = [];
  let searches = 0;
  const searchLoop = async () => {
    while (performance.now() < until) {
      const res = await search.request({ path: `/api/search?q=${encodeURIComponent(word)}`, method: 'GET', headers: { authorization: `Bearer ${token}` } });
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

/**
 * Runs one tree's measurements on dataDir and returns a plain result object (JSON-safe).
 *   words: {label: word} for the `q` rows (each on every ENDPOINT); absentLabel: the key whose
 *   word the status-under-search loop queries.
 *   wholeReplay: remove dataDir/index first, start (a whole replay), wait for the search index,
 *     stop (the server writes its snapshot), then measure the restart; otherwise the first start
 *     is the measured one (a plain restart on whatever derived files are there).
 *   hasIndex: the tree logs "search index: … covers the log" (false for 8a2aac2).
 *   cold: after the load, evict the data folder from the page cache and time one more start.
 * A server that cannot start gives {name, failed}.
 */
export async function measureTree(name, dist, dataDir, o) {
  const { words, absentLabel = 'absent', requests, loadSeconds, startTimeoutMs, indexTimeoutMs, wholeReplay, hasIndex, cold, log } = o;
  const result = { name };
  if (wholeReplay) {
    rmSync(path.join(dataDir, 'index'), { recursive: true, force: true });
    log(`[${name}] warming the page cache; whole replay (no derived files) ...`);
    await warmPageCache(dataDir);
    const first = await startServer(dist, dataDir, { timeoutMs: startTimeoutMs });
    if (first.failed) return { name, failed: first.failed };
    Object.assign(result, { firstReadyS: first.readyS, records: first.records, firstRss: memoryOf(first.proc.pid) });
    if (hasIndex) {
      log(`[${name}] ready in ${first.readyS.toFixed(1)} s; waiting for the search index ...`);
      result.indexCompleteS = await waitForIndex(first, indexTimeoutMs);
    }
    await stopServer(first);
  }
  log(`[${name}] warming the page cache; plain restart ...`);
  await warmPageCache(dataDir);
  let server = await startServer(dist, dataDir, { timeoutMs: startTimeoutMs });
  if (server.failed) return { name, ...result, failed: `${wholeReplay ? 'restart: ' : ''}${server.failed}` };
  result.readyS = server.readyS;
  result.records ??= server.records;
  result.afterStart = memoryOf(server.proc.pid);
  if (hasIndex) {
    result.restartIndexCompleteS = await waitForIndex(server, indexTimeoutMs);
    // q is measured on a complete index; RSS after start is also taken at that moment.
    result.afterIndex = memoryOf(server.proc.pid);
  }
  const token = await register(server.url);
  result.q = {};
  for (const [label, word] of Object.entries(words)) {
    for (const endpoint of ENDPOINTS) {
      log(`[${name}] q=${word} on ${endpoint} ...`);
      result.q[`${label} ${endpoint}`] = await latency(server.url, `${endpoint}?q=${encodeURIComponent(word)}&limit=20`, token, requests);
    }
  }
  log(`[${name}] status under a q=${words[absentLabel]} search loop ...`);
  result.status = await statusUnderSearch(server.url, token, loadSeconds, words[absentLabel]);
  result.afterLoad = memoryOf(server.proc.pid);
  await stopServer(server);
  if (cold) {
    result.cachedBeforeCold = evictPageCache(dataDir);
    log(`[${name}] page cache evicted (${result.cachedBeforeCold ?? '?'} bytes of the data folder still cached); starting cold ...`);
    server = await startServer(dist, dataDir, { timeoutMs: startTimeoutMs });
    if (server.failed) return { ...result, coldFailed: server.failed };
    result.coldReadyS = server.readyS;
    if (hasIndex) await waitForIndex(server, indexTimeoutMs);
    result.afterColdStart = memoryOf(server.proc.pid);
    await stopServer(server);
  }
  return result;
}

/**
 * Runs `fn` with dataDir/index moved aside (to dataDir/index.bench-stash), so another tree starts
 * without this tree's derived files; afterwards that tree's index is removed and this one's is
 * put back.
 */
export async function withIndexAside(dataDir, fn) {
  const index = path.join(dataDir, 'index');
  const stash = path.join(dataDir, 'index.bench-stash');
  rmSync(stash, { recursive: true, force: true });
  const had = existsSync(index);
  if (had) renameSync(index, stash);
  try {
    return await fn();
  } finally {
    rmSync(index, { recursive: true, force: true });
    if (had) renameSync(stash, index);
  }
}

// ---- tables -----------------------------------------------------------------

const f1 = (x) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(1));
const f2 = (x) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(2));
const verdict = (ok) => (ok === undefined ? '' : ok ? 'met' : '**missed**');

/** RSS target for an archive of `records` (900 MiB at 10M, 2.7 GiB at 30M). */
export function rssTargetMiB(records) {
  return records > 15_000_000 ? TARGETS.rss30MiB : TARGETS.rss10MiB;
}

/**
 * Markdown rows of a measurement table: one column per result (the last is "ours", whose
 * figures the verdicts judge). `words` as given to measureTree. Returns an array of lines.
 */
export function renderTable(results, words, { records }) {
  const ours = results[results.length - 1];
  const ok = !ours.failed;
  const failureShown = new Set();
  const cell = (r, fn) => {
    let v;
    try {
      v = fn(r);
    } catch {
      v = undefined;
    }
    if (v !== undefined && !/^n\/a/.test(v)) return v;
    // A tree that stopped early says why once, in its first row without a figure.
    if (r.failed && !failureShown.has(r)) {
      failureShown.add(r);
      return `cannot start: ${r.failed}`;
    }
    return 'n/a';
  };
  const lines = [`| measure | ${results.map((r) => r.name).join(' | ')} | target | |`, `|---|${results.map(() => '---:|').join('')}---|---|`];
  const row = (label, fn, target, met) => lines.push(`| ${label} | ${results.map((r) => cell(r, fn)).join(' | ')} | ${target} | ${ok ? verdict(met) : ''} |`);
  const rssTarget = rssTargetMiB(records ?? ours.records ?? 0);
  // The whole-replay targets are set for 10M records: smaller archives get no verdict.
  const atTenMillion = (records ?? ours.records ?? 0) >= 9_000_000;
  const m = (kb) => (kb === undefined ? undefined : mib(kb).toFixed(0));
  if (results.some((r) => r.firstReadyS !== undefined)) {
    row('whole replay, no derived files: spawn → listening (s)', (r) => (r.firstReadyS === undefined ? '—' : f1(r.firstReadyS)), `≤ ${TARGETS.wholeReplayS} at 10M`, ours.firstReadyS === undefined || !atTenMillion ? undefined : ours.firstReadyS <= TARGETS.wholeReplayS);
    row('whole replay: search index complete, from spawn (s)', (r) => (r.firstReadyS === undefined ? '—' : f1(r.indexCompleteS)), `≤ ${TARGETS.indexCompleteS} at 10M`, ours.firstReadyS === undefined || !atTenMillion ? undefined : ours.indexCompleteS !== null && ours.indexCompleteS <= TARGETS.indexCompleteS);
    row('whole replay: RSS when listening (MiB)', (r) => (r.firstRss === undefined ? '—' : m(r.firstRss.rss)), '', undefined);
  }
  row('plain restart: spawn → listening (s)', (r) => f1(r.readyS), `≤ ${TARGETS.readyS}`, ours.readyS <= TARGETS.readyS);
  row('plain restart: search index complete, from spawn (s)', (r) => (r.readyS === undefined ? undefined : r.restartIndexCompleteS === undefined ? '—' : f1(r.restartIndexCompleteS)), '', undefined);
  row('RSS after start (MiB; once the index is complete)', (r) => (r.afterStart ? `${m(r.afterStart.rss)}${r.afterIndex ? ` (${m(r.afterIndex.rss)})` : ''}` : undefined), `≤ ${rssTarget.toFixed(0)}`, mib(ours.afterIndex?.rss ?? ours.afterStart?.rss) <= rssTarget);
  if (results.some((r) => r.coldReadyS !== undefined || r.coldFailed)) {
    row('restart with the data folder out of the page cache (s; RSS MiB)', (r) => (r.coldFailed ? `cannot start: ${r.coldFailed}` : r.coldReadyS === undefined ? '—' : `${f1(r.coldReadyS)} (${m(r.afterColdStart.rss)})`), `≤ ${TARGETS.coldReadyS}`, ours.coldReadyS === undefined ? undefined : ours.coldReadyS <= TARGETS.coldReadyS);
  }
  for (const [label, word] of Object.entries(words)) {
    for (const endpoint of ENDPOINTS) {
      const key = `${label} ${endpoint}`;
      const q = (r) => r.q?.[key];
      row(
        `q ${label} (\`${word}\`) ${endpoint} p50 / p99 ms (hits)`,
        (r) => (q(r) ? `${f2(q(r).p50)} / ${f2(q(r).p99)} (${q(r).hits})` : undefined),
        `≤ ${TARGETS.qP50} / ≤ ${TARGETS.qP99}`,
        q(ours) ? q(ours).p50 <= TARGETS.qP50 && q(ours).p99 <= TARGETS.qP99 : false,
      );
    }
  }
  row('status p50 / p99 ms at 4 conns under a search loop (req/s)', (r) => (r.status ? `${f2(r.status.p50)} / ${f2(r.status.p99)} (${r.status.rps.toFixed(0)})` : undefined), `p99 ≤ ${TARGETS.statusP99}`, ours.status ? ours.status.p99 <= TARGETS.statusP99 : false);
  row('RSS after the load (MiB; peak since start)', (r) => (r.afterLoad ? `${m(r.afterLoad.rss)} (${m(r.afterLoad.hwm)})` : undefined), `≤ ${rssTarget.toFixed(0)}`, ours.afterLoad ? mib(ours.afterLoad.rss) <= rssTarget : false);
  return lines;
}

/**
 * Markdown rows comparing two runs' "ours" results (e.g. 10M and 30M generated records): each
 * q p50 side by side with large ÷ small (target ≤ 1.5×), and RSS after start at the large size.
 */
export function renderCompare(small, large) {
  const a = small.results[small.results.length - 1];
  const b = large.results[large.results.length - 1];
  const n = (x) => Number(x ?? 0).toLocaleString('en-US');
  const lines = [
    `| measure | ${n(small.records)} records (${a.name}) | ${n(large.records)} records (${b.name}) | ratio | target | |`,
    '|---|---:|---:|---:|---|---|',
  ];
  for (const key of Object.keys(b.q ?? {})) {
    const x = a.q?.[key]?.p50;
    const y = b.q[key].p50;
    const ratio = x ? y / x : NaN;
    lines.push(`| q ${key} p50 ms | ${f2(x)} | ${f2(y)} | ${f2(ratio)}× | ≤ ${TARGETS.ratio30}× | ${verdict(Number.isFinite(ratio) ? ratio <= TARGETS.ratio30 : false)} |`);
  }
  const rss = (r) => mib(r.afterIndex?.rss ?? r.afterStart?.rss);
  const target = rssTargetMiB(large.records);
  lines.push(`| RSS after start (MiB) | ${f1(rss(a))} | ${f1(rss(b))} | ${f2(rss(b) / rss(a))}× | ≤ ${target.toFixed(0)} MiB at the larger size | ${verdict(rss(b) <= target)} |`);
  return lines;
}
