#!/usr/bin/env node
// The cost of proven reads (issue 28): reads/s of records read back from their segment files
// with the record cache off (every read goes to the file), on this machine, three ways:
//   proven    SegmentRecords.read as the server does it: one positional read of the line and the
//             hash before it, SHA-256 over prevHash + record text compared with the stored hash.
//   unproven  the read before issue 28: the same positional read of the record text, framing and
//             seq checked, no hash (replicated here with record-format.ts splitRecordText).
//   sha256    the hash alone, over the same bytes (what proving adds).
// A cache hit (the common case for hot topics) costs the same as before: the cache holds only
// proven records.
//
// Usage: node scripts/bench/proof-bench.mjs [--records N] [--content BYTES] [--rounds R]
//   defaults: 20000 records of 300-byte content, 5 rounds (median and spread printed).
import { mkdtempSync, readSync, rmSync } from 'node:fs';
import { hash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Log } from '../../dist/store/log.js';
import { SegmentRecords } from '../../dist/store/records.js';
import { splitRecordText } from '../../dist/store/record-format.js';

const { values } = parseArgs({ options: { records: { type: 'string', default: '20000' }, content: { type: 'string', default: '300' }, rounds: { type: 'string', default: '5' } } });
const N = Number(values.records);
const CONTENT = Number(values.content);
const ROUNDS = Number(values.rounds);

const dir = mkdtempSync(join(tmpdir(), 'proof-bench-'));
try {
  const log = await Log.open(dir, () => undefined);
  for (let i = 1; i <= N; i++) {
    log.append('message.create', { authorId: 'ag_0000000001', content: `m${i} ${'x'.repeat(CONTENT)}`, topicId: 'tp_0000000002' }, Date.UTC(2026, 0, 1) + i);
    if (i % 1000 === 0) await log.sync();
  }
  await log.sync();
  await log.close();
  const records = new SegmentRecords(join(dir, 'log'), 0);
  const reopened = await Log.open(dir, () => undefined, { records });
  const order = Array.from({ length: N }, (_, i) => i + 1).sort(() => Math.random() - 0.5);

  const proven = () => {
    for (const seq of order) records.read(seq, false);
  };
  const scratch = Buffer.allocUnsafe(1 << 16);
  const unproven = () => {
    for (const seq of order) {
      const loc = records.locations.locate(seq);
      // The descriptor cache the server's read goes through (a TypeScript-private method).
      readSync(records.fd(loc.segmentFirstSeq), scratch, 0, loc.length, loc.offset);
      splitRecordText(scratch.toString('utf8', 0, loc.length), seq);
    }
  };
  const shaOnly = () => {
    for (const seq of order) {
      const loc = records.locations.locate(seq);
      hash('sha256', scratch.subarray(0, 64 + loc.length + 1));
    }
  };
  const measure = (fn) => {
    fn(); // warm-up
    const rates = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      fn();
      rates.push(N / ((performance.now() - t0) / 1000));
    }
    rates.sort((a, b) => a - b);
    return { median: rates[Math.floor(rates.length / 2)], min: rates[0], max: rates.at(-1) };
  };
  const fmt = (r) => `${Math.round(r.median).toLocaleString('en')} reads/s (${Math.round(r.min).toLocaleString('en')}–${Math.round(r.max).toLocaleString('en')})`;
  const p = measure(proven);
  const u = measure(unproven);
  const s = measure(shaOnly);
  console.log(`records: ${N}, content ${CONTENT} bytes, record cache off, ${ROUNDS} rounds, Node ${process.versions.node}`);
  console.log(`unproven (before issue 28): ${fmt(u)}`);
  console.log(`proven (this tree):         ${fmt(p)}`);
  console.log(`sha256 alone:               ${fmt(s)}`);
  console.log(`proven / unproven: ${(p.median / u.median).toFixed(2)}; per read: ${(1e6 / p.median).toFixed(2)} µs vs ${(1e6 / u.median).toFixed(2)} µs`);
  await reopened.close();
  records.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
