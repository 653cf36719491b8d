// CLI start time (issue 51): how long `node dist/cli.js` takes to answer, beside `node -e 0` on the
// same machine at the same moment. Rows: `--version`, `--help`, one command a running server answers
// over its admin socket (`agents list`) and one archive command on the stopped folder (`verify`,
// which loads the store). Each row runs N times; every run of ours follows a run of `node -e 0`
// (and, with `against`, a run of another build's CLI), so a change in the machine's load hits all
// of them alike. The table shows the median wall ms of each and the ratio of the medians; the issue's
// target is ours ≤ 1.5 × `node -e 0` for the rows that never touch the archive.
//
// Used by scripts/bench.mjs (its "CLI start" section, and alone: node scripts/bench.mjs --only cli-start).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { median, startServer, stopServer } from './measure.mjs';

/** The issue's target for the rows marked `target` (issue 51): ours ÷ `node -e 0` at most this. */
export const CLI_START_RATIO_MAX = 1.5;

/** The server's start timeout for the admin-socket row, in ms (a loaded 2-core box replays slowly). */
const SERVER_START_TIMEOUT_MS = 120_000;

/**
 * Wall ms of one `node ...args` run to its exit. Throws when it exits non-zero, so a CLI that fails
 * fast never passes for a quick one.
 */
function timedRun(args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).trim().slice(-300)}`);
  return ms;
}

/**
 * Measures the CLI start rows. Input: `cli` (the entry script, e.g. <root>/dist/cli.js), `runs` (N
 * per row), `against` (another CLI entry measured in the same pairs, e.g. an earlier tree's
 * dist/cli.js; optional), `log` (progress lines). The admin-socket row runs against a server started
 * from the `server.js` beside `cli` on a fresh folder; `verify` runs on that folder once stopped.
 * Output: {runs, rows: [{label, target, baseMs, oursMs, againstMs?}]} (medians in ms), or
 * {skipped: reason} when the server does not start.
 */
export async function measureCliStart({ cli, runs, against = null, log = () => {} }) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-cli-start-'));
  const dist = path.dirname(cli);
  const rows = [];
  const measureRow = (label, args, target) => {
    const base = [];
    const ours = [];
    const other = [];
    for (let i = 0; i < runs; i++) {
      base.push(timedRun(['-e', '0']));
      ours.push(timedRun([cli, ...args]));
      if (against) other.push(timedRun([against, ...args]));
    }
    const row = { label, target, baseMs: median(base), oursMs: median(ours), ...(against ? { againstMs: median(other) } : {}) };
    log(`cli start: ${label}: node -e 0 ${row.baseMs.toFixed(0)} ms, ours ${row.oursMs.toFixed(0)} ms${against ? `, against ${row.againstMs.toFixed(0)} ms` : ''}`);
    rows.push(row);
  };
  try {
    measureRow('--version', ['--version'], true);
    measureRow('--help', ['--help'], true);
    const server = await startServer(dist, dataDir, { timeoutMs: SERVER_START_TIMEOUT_MS, entry: path.join(dist, 'server.js') });
    if (server.failed) return { skipped: `the server for the admin-socket row ${server.failed}` };
    try {
      measureRow('agents list (admin socket, server running)', ['--data-dir', dataDir, 'agents', 'list'], true);
    } finally {
      await stopServer(server);
    }
    measureRow('verify (archive command, server stopped)', ['--data-dir', dataDir, 'verify'], false);
    return { runs, rows };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The markdown lines of the CLI start section (a header and one table row per measured command). */
export function renderCliStart(result, { against = null } = {}) {
  const out = ['', '## CLI start (issue 51: median wall ms of node dist/cli.js beside node -e 0, paired runs)', ''];
  if (result.skipped) return [...out, `skipped: ${result.skipped}`];
  const fmt = (ms) => ms.toFixed(0);
  const ratio = (ms, base) => `${(ms / base).toFixed(2)}×`;
  out.push(`${result.runs} runs per row${against ? `; against: ${against}` : ''}`, '');
  out.push(`| CLI start | node -e 0 ms | ours ms | ours ÷ node -e 0 |${against ? ' against ms | against ÷ node -e 0 |' : ''} target ≤ ${CLI_START_RATIO_MAX}× |`);
  out.push(`|---|---:|---:|---:|${against ? '---:|---:|' : ''}---|`);
  for (const r of result.rows) {
    const verdict = r.target ? (r.oursMs / r.baseMs <= CLI_START_RATIO_MAX ? 'met' : 'MISSED') : '— (loads the store)';
    const againstCols = against ? ` ${fmt(r.againstMs)} | ${ratio(r.againstMs, r.baseMs)} |` : '';
    out.push(`| ${r.label} | ${fmt(r.baseMs)} | ${fmt(r.oursMs)} | ${ratio(r.oursMs, r.baseMs)} |${againstCols} ${verdict} |`);
  }
  return out;
}
