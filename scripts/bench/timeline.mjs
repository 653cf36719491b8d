// Latency of one (issue 56): the timeline of one write at one connection, the status answer
// beside bare node:http, and one fdatasync of this disk, in one run.
//
// Usage: node scripts/bench/timeline.mjs [--ours FILE] [--against FILE] [--writes N]
//          [--blocks N] [--status-seconds S] [--status-rounds N]
//   --ours FILE          entry script of the server measured (default dist/server.js)
//   --against FILE       a second entry (an earlier tree's dist/server.js), measured in the same
//                        blocks, alternating with ours: before and after in one run
//   --writes N           sequential writes per block and server (default 200)
//   --blocks N           blocks; servers alternate block by block, order rotating (default 6)
//   --status-seconds S   wrk seconds per status cell (default 3; 0 skips the status cells)
//   --status-rounds N    status rounds (default 3)
//
// Each server runs with FORUM_TIMELINE_FILE (src/timeline.ts): it records, per request, when the
// head was parsed, the body parsed, the decision reached the log, the line was appended, the
// fdatasync issued and done, the answer begun and written; the medians of each stage's step over every
// write are printed, beside the client's round trip. The fdatasync row is one 200-byte write +
// fdatasync on the thread pool in the same folder (os.tmpdir()), median of 200.
// Exports `runTimeline(opts, log)` for scripts/bench.mjs; prints markdown when run alone.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { api } from './lib/api.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const STAGES = ['arrived', 'parsed', 'decided', 'appended', 'syncIssued', 'syncDone', 'sending', 'answered'];
const STAGE_TEXT = {
  parsed: 'head parsed → body parsed and validated',
  decided: 'body parsed → decided (append begins)',
  appended: 'decided → appended (encoded, chained, queued)',
  syncIssued: 'appended → fdatasync issued',
  syncDone: 'fdatasync issued → done (on the main thread)',
  sending: 'fdatasync done → answer begins (waiter released, reply returned)',
  answered: 'answer begins → written (sendReply, res.end: the socket write)',
};

const median = (xs) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function start(label, entry, env) {
  const port = await freePort();
  const child = spawn(process.execPath, [entry], { cwd: path.dirname(path.dirname(entry)), env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr.on('data', (d) => (tail = (tail + d).slice(-2000)));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 3000; i++) {
    if (child.exitCode !== null) throw new Error(`${label} exited at start: ${tail}`);
    try {
      const res = await fetch(`${base}/api/status`);
      await res.arrayBuffer();
      if (res.status === 200) return { label, base, port, child };
    } catch {
      // not yet listening
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  child.kill('SIGKILL');
  throw new Error(`${label} did not start: ${tail}`);
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** One POST on a kept-alive single-socket agent; resolves to the round trip in µs. */
function post(agent, port, pathName, token, body) {
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request({ agent, host: '127.0.0.1', port, method: 'POST', path: pathName, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': data.length } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 201 || res.statusCode === 200 ? resolve((performance.now() - t0) * 1000) : reject(new Error(`write answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** Median µs of one 200-byte write + fdatasync on the thread pool, in `dir`. */
async function fsyncMedian(dir, count = 200) {
  const file = path.join(dir, 'fsync-probe');
  const h = await fsp.open(file, 'w');
  const buf = Buffer.alloc(200, 120);
  const times = [];
  try {
    for (let i = 0; i < count; i++) {
      await h.write(buf);
      const t0 = performance.now();
      await h.datasync();
      times.push((performance.now() - t0) * 1000);
    }
  } finally {
    await h.close();
    rmSync(file, { force: true });
  }
  return median(times);
}

/** CPU seconds (user + system) the process `pid` has used so far (Linux /proc). */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * One wrk cell on `url`. Output: req/s and the server's CPU µs per request (from /proc: less
 * sensitive to other load on the machine than req/s, which a busy neighbour halves).
 */
function wrkStatus(url, pid, connections, seconds) {
  const cpu0 = cpuSeconds(pid);
  const r = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', url], { encoding: 'utf8' });
  if (r.error) throw r.error;
  const cpu = cpuSeconds(pid) - cpu0;
  const requests = Number(/(\d+) requests in/.exec(r.stdout)?.[1]);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]), cpuUs: (cpu * 1e6) / requests };
}

/**
 * Runs the timeline section. Input: { ours, against?, writes, blocks, statusSeconds, statusRounds },
 * `log` for progress lines. Output: { markdown, results }.
 */
export async function runTimeline(opts, log = () => {}) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'forum-timeline-'));
  const entries = [['ours', opts.ours], ...(opts.against ? [['against', opts.against]] : [])];
  const servers = [];
  try {
    const fsyncUs = await fsyncMedian(tmp);
    for (const [label, entry] of entries) {
      if (!existsSync(entry)) throw new Error(`${label}: ${entry} not found`);
      const timelineFile = path.join(tmp, `${label}.timeline.json`);
      const s = await start(label, entry, { FORUM_DATA_DIR: path.join(tmp, label), FORUM_RATE_LIMITS: 'off', FORUM_TIMELINE_FILE: timelineFile });
      const agent = await api(s.base, 'POST', '/api/register', { body: { name: `timeline-${label}`, provider: 'bench', acceptsPublicArchive: true, operatorAuthorized: true } });
      const topic = await api(s.base, 'POST', '/api/topics', { token: agent.token, body: { title: 'timeline topic' } });
      servers.push({ ...s, timelineFile, token: agent.token, topicId: topic.id, rtts: [], agent: new http.Agent({ keepAlive: true, maxSockets: 1 }) });
    }
    let n = 0;
    for (let b = 0; b < opts.blocks; b++) {
      const order = b % 2 === 0 ? servers : [...servers].reverse();
      for (const s of order) {
        for (let i = 0; i < opts.writes; i++) {
          s.rtts.push(await post(s.agent, s.port, '/api/messages', s.token, { topicId: s.topicId, content: `timeline write ${n}`, clientId: `tl-${n}` }));
          n++;
        }
      }
    }
    log(`timeline: ${n} writes done`);
    const status = new Map();
    if (opts.statusSeconds > 0) {
      const bare = await start('bare', path.join(here, 'reference', 'bare.mjs'), {});
      const targets = [...servers.map((s) => [s.label, `${s.base}/api/status`, s.child.pid]), ['bare', `${bare.base}/api/status`, bare.child.pid]];
      for (const [label] of targets) status.set(label, { 1: [], 64: [] });
      try {
        for (let r = 0; r < opts.statusRounds; r++) {
          for (const c of [64, 1]) {
            const order = r % 2 === 0 ? targets : [...targets].reverse();
            for (const [label, url, pid] of order) status.get(label)[c].push(wrkStatus(url, pid, c, opts.statusSeconds));
          }
        }
      } finally {
        await stop(bare.child);
      }
    }
    for (const s of servers) {
      s.agent.destroy();
      await stop(s.child);
    }
    const results = servers.map((s) => {
      const { timelines } = JSON.parse(readFileSync(s.timelineFile, 'utf8'));
      const writes = timelines.filter((t) => t[STAGES.indexOf('syncDone')] >= 0);
      const steps = {};
      for (let i = 1; i < STAGES.length; i++) steps[STAGES[i]] = median(writes.map((t) => t[i] - t[i - 1]));
      const at = {};
      for (let i = 1; i < STAGES.length; i++) at[STAGES[i]] = median(writes.map((t) => t[i]));
      return { label: s.label, writes: writes.length, steps, at, rttUs: median(s.rtts), status: status.get(s.label) };
    });
    const fmt = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');
    const lines = [];
    lines.push(`### Lone write timeline (one connection, µs, medians of ${results[0].writes} writes; ${opts.blocks} alternating blocks)`);
    lines.push('');
    lines.push(`| step | ${results.map((r) => `${r.label} step`).join(' | ')} | ${results.map((r) => `${r.label} at`).join(' | ')} |`);
    lines.push(`|---|${results.map(() => '---:').join('|')}|${results.map(() => '---:').join('|')}|`);
    for (let i = 1; i < STAGES.length; i++) {
      const st = STAGES[i];
      lines.push(`| ${STAGE_TEXT[st]} | ${results.map((r) => fmt(r.steps[st])).join(' | ')} | ${results.map((r) => fmt(r.at[st])).join(' | ')} |`);
    }
    lines.push(`| client round trip (p50) | ${results.map((r) => fmt(r.rttUs)).join(' | ')} | ${results.map(() => '').join(' | ')} |`);
    lines.push('');
    lines.push(`One fdatasync on the thread pool here: p50 ${fmt(fsyncUs)} µs; ours' round trip is ${(results[0].rttUs / fsyncUs).toFixed(2)}× it.`);
    if (results.length > 1) lines.push(`Round trip ours/against: ${(results[0].rttUs / results[1].rttUs).toFixed(3)} (paired blocks, same run).`);
    if (status.size > 0) {
      lines.push('');
      lines.push(`### Status (GET /api/status, wrk, ${opts.statusSeconds} s cells, ${opts.statusRounds} alternating rounds, medians, req/s)`);
      lines.push('');
      lines.push('| server | req/s at 64 | req/s at 1 | vs bare at 64 | server CPU µs/request at 64 | at 1 | CPU above bare at 64 |');
      lines.push('|---|---:|---:|---:|---:|---:|---:|');
      const med = (cells, c, key) => median(cells[c].map((x) => x[key]));
      const bare = status.get('bare');
      for (const [label, cells] of status) {
        lines.push(`| ${label} | ${fmt(med(cells, 64, 'rps'))} | ${fmt(med(cells, 1, 'rps'))} | ${(med(cells, 64, 'rps') / med(bare, 64, 'rps')).toFixed(2)}× | ${med(cells, 64, 'cpuUs').toFixed(1)} | ${med(cells, 1, 'cpuUs').toFixed(1)} | ${(med(cells, 64, 'cpuUs') - med(bare, 64, 'cpuUs')).toFixed(1)} |`);
      }
    }
    return { markdown: lines.join('\n'), results, fsyncUs, status: Object.fromEntries(status) };
  } finally {
    for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const val = (name, dflt) => {
    const i = args.indexOf(name);
    return i === -1 ? dflt : args[i + 1];
  };
  const opts = {
    ours: path.resolve(val('--ours', path.join(root, 'dist', 'server.js'))),
    against: val('--against', null) && path.resolve(val('--against', null)),
    writes: Number(val('--writes', 200)),
    blocks: Number(val('--blocks', 6)),
    statusSeconds: Number(val('--status-seconds', 3)),
    statusRounds: Number(val('--status-rounds', 3)),
  };
  const out = await runTimeline(opts, (l) => console.error(l));
  console.log(out.markdown);
}
