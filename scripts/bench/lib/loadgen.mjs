// Load generators for scripts/bench.mjs: Debian's wrk (preferred) and
// autocannon (fallback, runs inside the harness process). Both take the same
// job description and return the same result shape, so the harness does not
// care which one ran.
//
// Job: { url, connections, seconds, mode: 'static'|'write'|'work', tokens,
//        topicId?, items?: [{id, revision, state, tokenIndex}] (tokenIndex 0-based) }
// Result: { requests, rps, p50Ms, p99Ms, non2xx, socketErrors }
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// Resolves from scripts/bench/node_modules, never from the project's root install.
const requireBench = createRequire(path.join(here, '..', 'package.json'));

// A per-run prefix keeps clientIds unique across warm-up, rounds and servers.
const runId = () => randomBytes(4).toString('hex');

function wrkVersion() {
  const probe = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  if (probe.error) return null;
  return /wrk\s+(\S+)/.exec(`${probe.stdout}${probe.stderr}`)?.[1] ?? 'unknown';
}

// wrk is a Debian package, not an npm one: install it only where that is
// possible without a prompt (root, apt-get present).
function tryInstallWrk(log) {
  if (process.getuid?.() !== 0 || spawnSync('apt-get', ['--version']).error) return false;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => spawnSync('apt-get', ['install', '-y', '-q', 'wrk'], { env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 }).status === 0;
  log('wrk not found; trying apt-get install -y wrk');
  if (install()) return true;
  // A fresh machine may have empty package lists.
  spawnSync('apt-get', ['update', '-q'], { env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 });
  return install();
}

/**
 * Chooses the load generator. `prefer` is 'wrk', 'autocannon' or undefined (wrk if it can be had).
 * `track` registers spawned processes with the harness so they are killed on exit.
 */
export function pickLoadGenerator({ prefer, threads, log, track }) {
  if (prefer !== 'autocannon') {
    let version = wrkVersion();
    if (!version && tryInstallWrk(log)) version = wrkVersion();
    if (version) return wrkGenerator({ version, threads, track });
    if (prefer === 'wrk') throw new Error('wrk was requested but is not installed and could not be installed');
    log('wrk unavailable; falling back to autocannon');
  }
  return autocannonGenerator();
}

function wrkGenerator({ version, threads, track }) {
  return {
    name: `wrk ${version} (up to ${threads} thread(s))`,
    async run(job) {
      const t = Math.max(1, Math.min(threads, job.connections));
      const env = {
        ...process.env,
        BENCH_MODE: job.mode,
        BENCH_TOKENS: job.tokens.join(','),
        BENCH_RUN: runId(),
        BENCH_TOPIC: job.topicId ?? '',
        BENCH_THREADS: String(t),
        BENCH_ITEMS: (job.items ?? []).map((i) => `${i.id}:${i.revision}:${i.state}:${i.tokenIndex + 1}`).join(';'),
      };
      const args = ['-t', String(t), '-c', String(job.connections), '-d', `${job.seconds}s`, '--timeout', '10s',
        '-s', path.join(here, 'wrk.lua'), job.url];
      const child = track(spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] }));
      let out = '';
      child.stdout.on('data', (d) => { out += d; });
      child.stderr.on('data', (d) => { out += d; });
      const code = await new Promise((resolve) => child.on('close', resolve));
      const line = out.split('\n').find((l) => l.startsWith('BENCH_JSON '));
      if (!line) throw new Error(`wrk failed (exit ${code}): ${out.trim().slice(-500)}`);
      const r = JSON.parse(line.slice('BENCH_JSON '.length));
      return {
        requests: r.requests,
        rps: r.requests / (r.durationUs / 1e6),
        p50Ms: r.p50Us / 1000,
        p99Ms: r.p99Us / 1000,
        // wrk counts every status >= 400 in errStatus.
        non2xx: r.errStatus,
        socketErrors: r.errConnect + r.errRead + r.errWrite + r.errTimeout,
      };
    },
  };
}

function autocannonGenerator() {
  const autocannon = requireBench('autocannon');
  return {
    name: `autocannon ${requireBench('autocannon/package.json').version} (in-process; its own ceiling is far below wrk's)`,
    async run(job) {
      const result = await autocannon({
        url: job.url,
        connections: job.connections,
        duration: job.seconds,
        timeout: 10,
        headers: job.tokens.length ? { authorization: `Bearer ${job.tokens[0]}` } : {},
        requests: job.mode === 'static' ? undefined : [autocannonRequest(job)],
      });
      return {
        requests: result.requests.total,
        rps: result.requests.total / result.duration,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        non2xx: result.non2xx,
        socketErrors: result.errors + result.timeouts,
      };
    },
  };
}

// Same request streams as wrk.lua. autocannon resets its per-connection
// context on every request when there is a single request template, so work
// state is kept per item, exactly as wrk.lua does it.
function autocannonRequest(job) {
  const run = runId();
  let counter = 0;
  const headersFor = (i) => ({ 'content-type': 'application/json', authorization: `Bearer ${job.tokens[i]}` });
  if (job.mode === 'write') {
    return {
      method: 'POST',
      path: '/api/messages',
      setupRequest(req) {
        const clientId = `${run}-${++counter}`;
        const body = JSON.stringify({ topicId: job.topicId, content: `bench message ${clientId}`, clientId });
        return { ...req, headers: headersFor(counter % job.tokens.length), body };
      },
    };
  }
  const items = job.items.map((item) => ({ ...item, busy: false, retired: false, since: 0 }));
  const byId = new Map(items.map((item) => [item.id, item]));
  let cursor = 0;
  return {
    method: 'POST',
    path: '/api/work/action',
    setupRequest(req) {
      let item;
      for (let n = 0; n < items.length && !item; n++) {
        cursor = (cursor + 1) % items.length;
        if (!items[cursor].busy && !items[cursor].retired) item = items[cursor];
      }
      item ??= items[(cursor + 1) % items.length]; // only after errors retired items
      item.busy = true;
      item.since = ++counter;
      const body = JSON.stringify({
        action: item.state === 'open' ? 'claim' : 'release',
        workItemId: item.id,
        expectedRevision: item.revision,
        clientId: `${run}-${counter}`,
      });
      return { ...req, headers: headersFor(item.tokenIndex), body };
    },
    onResponse(status, body) {
      const snapshot = status < 300 ? JSON.parse(body) : null;
      const item = snapshot && byId.get(snapshot.id);
      if (item) {
        Object.assign(item, { revision: snapshot.revision, state: snapshot.state, busy: false });
        return;
      }
      // An error body does not say which item failed: retire the longest-busy one.
      const oldest = items.filter((i) => i.busy).sort((a, b) => a.since - b.since)[0];
      if (oldest) Object.assign(oldest, { busy: false, retired: true });
    },
  };
}
