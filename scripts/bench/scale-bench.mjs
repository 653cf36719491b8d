#!/usr/bin/env node
// Scale benchmark (issues 17 and 30): `npm run bench -- --scale N` or `node scripts/bench/scale-bench.mjs --records N`.
//
// Builds an N-record archive with scripts/dev/gen-archive.mjs (or reuses --dir), then, for commit
// 1496384 (issue 30's starting point; --baselines adds 8a2aac2, the design before issue 17; each
// exported and built once under scripts/bench/.baseline-<commit>) and for today's tree (dist/),
// one after the other on the same archive and machine (scripts/bench/lib/measure.mjs does the work):
//   - removes the derived files (data/index: state snapshot, search index) and starts the server
//     with no node flags, the page cache warm (the segments are read once first): a whole replay;
//     times spawn → "listening" and spawn → the log line saying the search index covers the log;
//     stops it (it writes its snapshot). 8a2aac2 has no derived files and skips this step;
//   - starts it again (a plain restart): time to ready, RSS after start and once the index is
//     complete; a server that exits or does not listen within --start-timeout is reported as
//     "cannot start" with its last stderr line;
//   - measures `q` latency (p50/p99 over --requests sequential requests on one connection,
//     limit=20) on GET /api/search, /api/messages and /api/knowledge for a frequent word
//     (`benchmark`), a rare one (`zephyrine`, planted by gen-archive every 500,000th message and
//     every 20,000th knowledge item), an absent one (`quixotry`), one character (`e`), two (`ar`)
//     and two that occur nowhere (`qz`);
//   - while one client loops absent-word searches, 4 connections loop GET /api/status for
//     --load-seconds: status p50/p99 and requests per second; then RSS and peak (VmHWM);
//   - for today's tree, stops it, evicts every file of the data folder from the page cache (GNU
//     dd iflag=nocache, i.e. posix_fadvise DONTNEED; fincore confirms) and measures one more
//     start: the cold start (--no-cold skips it).
// Prints a markdown table next to issue 30's targets and writes it to --out (default
// scripts/bench/last-scale-result.md) and the raw results beside it as JSON (same name, .json).
// `--compare FILE` (an earlier run's .json, e.g. the 10M run) adds a table of each q p50 at both
// sizes with their ratio (target ≤ 1.5× at 30M vs 10M) and RSS after start; with `--against
// FILE2` it compares two saved results without running anything.
//
// Flags: --records N | --dir DIR (an archive made by gen-archive; kept) · --keep (keep a generated
// archive) · --baselines LIST (default 1496384; e.g. 1496384,8a2aac2) · --no-baseline ·
// --baseline-dir DIR (build folder of a single baseline) · --requests 100 · --load-seconds 10 ·
// --start-timeout 900 · --index-timeout 1800 · --no-cold · --out FILE · --compare FILE ·
// --against FILE · --help
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BEFORE_COMMIT, baselineDist } from './lib/baseline.mjs';
import { killAll, measureTree, renderCompare, renderTable, segmentBytes } from './lib/measure.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The q rows: label → word (gen-archive's vocabulary and planted words). */
const WORDS = { frequent: 'benchmark', rare: 'zephyrine', absent: 'quixotry', '1 char': 'e', '2 chars': 'ar', '2 chars absent': 'qz' };
/** Commits without the derived files (state snapshot, search index) of later trees. */
const NO_DERIVED_FILES = new Set(['8a2aac2']);

const { values: opts } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--scale'),
  options: {
    records: { type: 'string' },
    dir: { type: 'string' },
    keep: { type: 'boolean', default: false },
    baselines: { type: 'string', default: BEFORE_COMMIT },
    'no-baseline': { type: 'boolean', default: false },
    'baseline-dir': { type: 'string' },
    requests: { type: 'string', default: '100' },
    'load-seconds': { type: 'string', default: '10' },
    'start-timeout': { type: 'string', default: '900' },
    'index-timeout': { type: 'string', default: '1800' },
    'no-cold': { type: 'boolean', default: false },
    out: { type: 'string', default: path.join(root, 'scripts', 'bench', 'last-scale-result.md') },
    compare: { type: 'string' },
    against: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  allowPositionals: true,
  strict: true,
});
// `npm run bench -- --scale N` passes N as a positional after --scale.
const positional = process.argv.slice(2).find((a, i, all) => all[i - 1] === '--scale');
const onlyCompare = Boolean(opts.compare && opts.against);
if (opts.help || (!opts.records && !opts.dir && !positional && !onlyCompare)) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1).filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n'));
  process.exit(opts.help ? 0 : 2);
}
const records = Number(opts.records ?? positional ?? 0);
const baselines = opts['no-baseline'] ? [] : opts.baselines.split(',').map((s) => s.trim()).filter(Boolean);
const log = (line) => console.error(line);

const cleanups = [];
function cleanup() {
  killAll();
  for (const f of cleanups.splice(0)) f();
}
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});

const readResult = (file) => JSON.parse(readFileSync(path.resolve(file), 'utf8'));

async function main() {
  if (onlyCompare) {
    console.log(renderCompare(readResult(opts.compare), readResult(opts.against)).join('\n'));
    return;
  }
  let dataDir = opts.dir ? path.resolve(opts.dir) : null;
  if (dataDir === null || !existsSync(path.join(dataDir, 'meta.json'))) {
    dataDir ??= mkdtempSync(path.join(os.tmpdir(), 'forum-scale-'));
    if (!opts.keep && !opts.dir) cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    log(`generating ${records} records into ${dataDir} ...`);
    const gen = spawnSync(process.execPath, [path.join(root, 'scripts', 'dev', 'gen-archive.mjs'), '--dir', dataDir, '--records', String(records)], { stdio: 'inherit' });
    if (gen.status !== 0) throw new Error('gen-archive failed');
  }
  const archiveBytes = segmentBytes(dataDir);
  const common = {
    words: WORDS,
    requests: Number(opts.requests),
    loadSeconds: Number(opts['load-seconds']),
    startTimeoutMs: Number(opts['start-timeout']) * 1000,
    indexTimeoutMs: Number(opts['index-timeout']) * 1000,
    log,
  };
  const results = [];
  // 8a2aac2 runs first: it ignores data/index, which the others remove before their whole replay.
  const order = [...baselines].sort((a, b) => Number(NO_DERIVED_FILES.has(b)) - Number(NO_DERIVED_FILES.has(a)));
  for (const commit of order) {
    const dist = baselineDist(commit, { dir: order.length === 1 ? opts['baseline-dir'] : undefined, log });
    const derived = !NO_DERIVED_FILES.has(commit);
    results.push(await measureTree(`before ${commit}`, dist, dataDir, { ...common, wholeReplay: derived, hasIndex: derived, cold: false }));
  }
  const sha = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim();
  results.push(await measureTree(`this tree ${sha}`, path.join(root, 'dist'), dataDir, { ...common, wholeReplay: true, hasIndex: true, cold: !opts['no-cold'] }));
  const ours = results[results.length - 1];
  const n = Number(records || ours.records || 0);

  const lines = [
    `Scale benchmark: ${n.toLocaleString('en-US')} generated records, ${(archiveBytes / 2 ** 20).toFixed(1)} MiB of segments; ` +
      `${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, Node ${process.version}, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} at the end; ` +
      'page cache warm except in the cold row; no node flags; q with limit=20 once the search index is complete.',
    '',
    ...renderTable(results, WORDS, { records: n }),
  ];
  const saved = { kind: 'scale', records: n, archiveBytes, date: new Date().toISOString(), results };
  if (opts.compare) lines.push('', `Compared with ${opts.compare}:`, '', ...renderCompare(readResult(opts.compare), saved));
  const table = lines.join('\n');
  console.log(table);
  writeFileSync(opts.out, `${table}\n`);
  const jsonOut = opts.out.replace(/\.md$/, '') + '.json';
  writeFileSync(jsonOut, `${JSON.stringify(saved, null, 1)}\n`);
  log(`written to ${opts.out} and ${jsonOut}`);
  if (ours.failed) process.exitCode = 1;
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(cleanup);
