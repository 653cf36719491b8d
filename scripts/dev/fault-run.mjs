#!/usr/bin/env node
/**
 * The fault suite's long form (issue 50; docs/operate/fault-suite.md): the harness of
 * test/fault/faults.test.mjs over a longer seeded schedule. Needs the built server (`npm run
 * build`) and an object store (`eval "$(scripts/dev/rgw.sh start DIR PORT)"`, or moto_server on PATH).
 *
 *     node scripts/dev/fault-run.mjs [--minutes 30] [--seed S] [--mode sync|async|both] [--keep-logs]
 *
 * Prints the seed, the schedule's steps as they run, the counts (writes sent/acknowledged/failed
 * per kind, faults injected per kind, promotions, kills) and every violation; exits 1 on any
 * violation, 2 on a usage error or when no object store is available. With `--mode both` the
 * minutes are split between the two modes (seed, then seed + 1).
 */
import { parseArgs } from 'node:util';
import { formatReport, runFaults } from '../../test/fault/harness.mjs';

const USAGE = 'usage: node scripts/dev/fault-run.mjs [--minutes N (default 30)] [--seed S] [--mode sync|async|both (default both)] [--keep-logs]';
let args;
try {
  ({ values: args } = parseArgs({ options: { minutes: { type: 'string', default: '30' }, seed: { type: 'string' }, mode: { type: 'string', default: 'both' }, 'keep-logs': { type: 'boolean', default: false } } }));
} catch (err) {
  console.error(`${err.message}\n${USAGE}`);
  process.exit(2);
}
const minutes = Number(args.minutes);
const seed = args.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(args.seed);
if (!(minutes > 0) || !Number.isSafeInteger(seed) || !['sync', 'async', 'both'].includes(args.mode)) {
  console.error(USAGE);
  process.exit(2);
}
const modes = args.mode === 'both' ? ['sync', 'async'] : [args.mode];
console.log(`fault-run: seed ${seed}, ${minutes} min, modes ${modes.join(', ')}`);
let violations = 0;
for (const [i, mode] of modes.entries()) {
  const r = await runFaults({ mode, seed: seed + i, durationMs: Math.round((minutes * 60_000) / modes.length), keepLogs: args['keep-logs'], log: (line) => console.log(line) });
  if (r === null) {
    console.error('fault-run: no object store: set AWS_ENDPOINT_URL_S3 (scripts/dev/rgw.sh start prints it) or put moto_server on PATH');
    process.exit(2);
  }
  console.log(formatReport(r));
  if (args['keep-logs']) console.log(`  client and harness logs kept in ${r.logDir}`);
  violations += r.violations.length;
}
console.log(`fault-run: seed ${seed}: ${violations} violation(s)`);
process.exit(violations > 0 ? 1 : 0);
