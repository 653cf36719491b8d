#!/usr/bin/env node
/**
 * Whole-replay benchmark (issue 30): times App.open on a data folder with no state snapshot (a
 * start that replays and checks every record), single-threaded and with replay workers, in
 * alternating child processes, and prints the medians. The folder's snapshot is removed before
 * each run (each start writes a new one); the log is only read.
 *
 * Usage: node scripts/bench/replay-bench.mjs --dir DATA_DIR [--rounds 3] [--workers 0,1,2]
 * Make a folder with: node scripts/dev/gen-archive.mjs --dir DIR --records 1000000
 * Prints one line per run and a JSON summary: {records, rounds, medians: {"workers=N": {readyMs,
 * mainCpuMs, processCpuMs}}}: the wall time to ready, the main thread's CPU time (what the ready
 * time comes down to on otherwise idle cores) and the whole process's CPU time.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? fallback : args[i + 1];
};

if (args.includes('--child')) {
  // One start: App.open without the search index, timed from before open to ready.
  const { App } = await import(join(ROOT, 'dist', 'app.js'));
  const { loadConfig } = await import(join(ROOT, 'dist', 'config.js'));
  const dir = resolve(opt('dir'));
  const workers = Number(opt('workers'));
  // CPU time of the main thread alone (Linux: /proc/self/task/<pid>/stat utime + stime, in
  // clock ticks of 10 ms): on a machine busy with other work the wall time hides what the
  // workers take off the main thread, which bounds the ready time on idle cores.
  const mainCpuMs = () => {
    try {
      const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      return NaN;
    }
  };
  const cpu0 = process.cpuUsage();
  const main0 = mainCpuMs();
  const started = performance.now();
  const app = await App.open({ ...loadConfig({ FORUM_DATA_DIR: dir }), dataDir: dir }, { searchIndex: false, log: { replayWorkers: workers } });
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpu0);
  console.log(
    JSON.stringify({
      ms: Math.round(ms),
      mainCpuMs: mainCpuMs() - main0,
      processCpuMs: Math.round((cpu.user + cpu.system) / 1000),
      records: app.log.headSeq,
      rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    }),
  );
  await app.close();
  process.exit(0);
}

if (args.includes('--help') || !opt('dir')) {
  console.log('usage: node scripts/bench/replay-bench.mjs --dir DATA_DIR [--rounds 3] [--workers 0,1,2]');
  process.exit(args.includes('--help') ? 0 : 2);
}
const dir = resolve(opt('dir'));
const rounds = Number(opt('rounds', 3));
const variants = String(opt('workers', '0,1,2')).split(',').map(Number);
const times = new Map(variants.map((w) => [w, []]));
let records = 0;
for (let r = 0; r < rounds; r++) {
  for (const w of variants) {
    rmSync(join(dir, 'index', 'state.snapshot'), { force: true });
    const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', '--dir', dir, '--workers', String(w)], { encoding: 'utf8', env: { ...process.env, FORUM_LOG_LEVEL: 'error' } });
    if (out.status !== 0) {
      console.error(out.stderr);
      process.exit(1);
    }
    const run = JSON.parse(out.stdout.trim().split('\n').at(-1));
    records = run.records;
    times.get(w).push(run);
    console.log(`round ${r + 1} workers=${w}: ready in ${run.ms} ms, main thread CPU ${run.mainCpuMs} ms, process CPU ${run.processCpuMs} ms (${run.records} records, rss ${run.rssMiB} MiB)`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const medians = Object.fromEntries(
  variants.map((w) => {
    const runs = times.get(w);
    return [`workers=${w}`, { readyMs: median(runs.map((r) => r.ms)), mainCpuMs: median(runs.map((r) => r.mainCpuMs)), processCpuMs: median(runs.map((r) => r.processCpuMs)) }];
  }),
);
console.log(JSON.stringify({ records, rounds, medians }));
