/**
 * The tiers of the test suite (issue 52), and their runner: `node test/tiers.mjs <tier>` runs one
 * tier's files with `node --test --test-concurrency=2` (run `npm run build` first; the npm
 * scripts `test:quick`, `test:http` and `test:slow` do). `--list` prints the files instead.
 *
 * - quick: test/unit — the check to run after a change (no servers on ports, no kill -9, no
 *   object store, no browser, no lint).
 * - http: test/http — a real server per test, spoken to over HTTP — except the files `slow` takes.
 * - slow: test/property (the property tests at their full budget), test/crash (kill -9 of real
 *   processes), test/replication, test/fault (the fault suite) and the HTTP replication tests (an S3 store), the browser tests
 *   (Chromium) and test/bench (the benchmark's smoke run).
 *
 * The tiers split the files of `npm test` (test/<folder>/<name>.test.mjs) exactly:
 * test/unit/tiers.test.mjs fails on a file in no tier or in two, so `npm test` stays the union.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TEST = join(ROOT, 'test');

/** Files of test/http that belong to the slow tier: replication (an S3 store) and the browser (Chromium). */
const SLOW_HTTP = new Set([
  'replication.test.mjs',
  'checkpoints.test.mjs',
  'signed-writes.test.mjs',
  'replication-settings.test.mjs',
  'replica-auth.test.mjs',
  'followers.test.mjs',
  'follower-lag.test.mjs',
  'follower-catchup.test.mjs',
  'follower-segments.test.mjs',
  'failover-positions.test.mjs',
  'takeover.test.mjs',
  'sync-recovery.test.mjs',
  'bucket-check.test.mjs',
  'docs-browser.test.mjs',
  'web-composer.test.mjs',
  'web-console.test.mjs',
  'web-reader-a11y.test.mjs',
  'web-reader-hostile.test.mjs',
  'web-reader-people.test.mjs',
  'web-reader-recovery.test.mjs',
  'web-reader-positions.test.mjs',
  'web-reader-tokens.test.mjs',
  'mcp-modern.test.mjs',
  'web-reader.test.mjs',
  // Issue 53: several servers each (restarts from the snapshot and the log), 30-60 s on 2 cores.
  'tokens.test.mjs',
  'keys.test.mjs',
  // Issue 55: restarts from the snapshot and the log, and the browser's join and device walk.
  'device-codes.test.mjs',
  'web-reader-join.test.mjs',
]);

/** Folders whose every test file is in the slow tier. */
const SLOW_FOLDERS = ['property', 'crash', 'replication', 'fault', 'bench'];

/** The test files of test/<folder>, as paths relative to the repository root, sorted. */
function filesIn(folder) {
  let names;
  try {
    names = readdirSync(join(TEST, folder));
  } catch {
    return [];
  }
  return names.filter((n) => n.endsWith('.test.mjs')).sort().map((n) => relative(ROOT, join(TEST, folder, n)));
}

/** Every test file `npm test` runs (its glob test/*\/*.test.mjs), sorted. */
export function allTestFiles() {
  const folders = readdirSync(TEST, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  return folders.flatMap(filesIn);
}

/** The test files of each tier, as paths relative to the repository root. */
export function tiers() {
  const http = filesIn('http');
  const isSlowHttp = (f) => SLOW_HTTP.has(f.slice('test/http/'.length));
  return {
    quick: filesIn('unit'),
    http: http.filter((f) => !isSlowHttp(f)),
    slow: [...SLOW_FOLDERS.flatMap(filesIn), ...http.filter(isSlowHttp)],
  };
}

/** The names in SLOW_HTTP with no file in test/http (a renamed or deleted file the list still names). */
export function missingSlowHttp() {
  const present = new Set(filesIn('http').map((f) => f.slice('test/http/'.length)));
  return [...SLOW_HTTP].filter((n) => !present.has(n));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [tier, flag] = process.argv.slice(2);
  const all = tiers();
  if (!Object.hasOwn(all, tier)) {
    process.stderr.write(`usage: node test/tiers.mjs <${Object.keys(all).join('|')}> [--list]\n`);
    process.exit(2);
  }
  if (flag === '--list') process.stdout.write(all[tier].join('\n') + '\n');
  else {
    const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...all[tier]], { cwd: ROOT, stdio: 'inherit' });
    process.exit(r.status ?? 1);
  }
}
