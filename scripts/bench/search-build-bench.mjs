#!/usr/bin/env node
/**
 * Search index build, step by step (issue 39 "the index catches up fast"):
 * `npm run build && node scripts/bench/search-build-bench.mjs --archive DIR [--docs N] [--builders live,sorted] [--merge-factor F]`.
 *
 * Does on this thread what one build worker (dist/store/search/build-worker.js) does for the
 * message documents of a gen-archive folder (scripts/dev/gen-archive.mjs; only read), with a timer
 * around each step, and prints the wall µs per document of each (one core's time on an otherwise
 * idle machine; a loaded one inflates them all) and the process's CPU time per document:
 *   read   — the segment file read and the line framing (readFileSync, indexOf of the newline);
 *   check  — record-format parseLine: the line's fields, seq and SHA-256 hash chain;
 *   texts  — the document's lower-cased texts from the payload (documents.ts documentTextsOf);
 *   add    — gram extraction and posting into the shard being filled (the builder's add);
 *   encode — the shard file's bytes (the builder's encoder, MAC included);
 *   write  — temp file → fsync → rename (fsutil writeFileAtomic);
 *   merge  — the tiered merges of the written files (merge-policy planMerge, merge.ts
 *            mergeShardFiles), as the index would run them on its merge worker.
 * Builders: `live` (the LiveShard hash table, as before issue 39) and `sorted` (build.ts
 * SortedShardBuilder); with both, each document is read once and added to both, every file is
 * encoded by both, and the two files are compared byte for byte (a difference is an error).
 * Shard files go to a temp folder, removed at the end. Numbers depend on the machine's other load.
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = (p) => import(join(ROOT, 'dist', p));
const { parseLine } = await dist('store/record-format.js');
const { listSegments } = await dist('store/segment.js');
const { writeFileAtomic } = await dist('store/fsutil.js');
const { LiveShard } = await dist('store/search/live.js');
const { encodeShardSliced, shardFileName } = await dist('store/search/shard.js');
const { documentTextsOf } = await dist('store/search/documents.js');
const { mergeShardFiles } = await dist('store/search/merge.js');
const { planMerge } = await dist('store/search/merge-policy.js');
const { NGRAM_SHARD_DOCS_MAX, NGRAM_MERGE_FACTOR, NGRAM_MERGE_DOCS_MAX } = await dist('constants.js');
let SortedShardBuilder = null;
try {
  ({ SortedShardBuilder } = await dist('store/search/build.js'));
} catch {
  // A tree before issue 39's builder: only `live`.
}

const KEY = Buffer.alloc(32, 7);
const GENESIS = '0'.repeat(64);
function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
const ARCHIVE = arg('archive', null);
if (ARCHIVE === null) {
  console.error('usage: node scripts/bench/search-build-bench.mjs --archive DIR [--docs N] [--builders live,sorted] [--merge-factor F]');
  process.exit(2);
}
const DOCS = Number(arg('docs', Infinity));
const BUILDERS = arg('builders', SortedShardBuilder ? 'live,sorted' : 'live').split(',');
const FACTOR = Number(arg('merge-factor', NGRAM_MERGE_FACTOR));
const SHARD = NGRAM_SHARD_DOCS_MAX;
const FIELDS = ['content'];

const out = mkdtempSync(join(tmpdir(), 'search-build-bench-'));
const t = { read: 0, check: 0, texts: 0, encodeBytes: 0 };
const per = Object.fromEntries(BUILDERS.map((b) => [b, { add: 0, encode: 0, write: 0, merge: 0, files: [], bytes: 0 }]));

/** A fresh shard of builder `b` starting at firstSeq. */
function fresh(b, firstSeq, planned = SHARD) {
  return b === 'live' ? new LiveShard(firstSeq, planned) : new SortedShardBuilder(firstSeq, planned);
}
async function encode(b, shard, lastSeq, lastHash) {
  if (b === 'live') {
    shard.lastSeq = lastSeq;
    shard.lastHash = lastHash;
    return encodeShardSliced(shard, Infinity, KEY);
  }
  return shard.encode(lastSeq, lastHash, KEY);
}

let docs = 0;
let records = 0;
let shards = Object.fromEntries(BUILDERS.map((b) => [b, null]));
let partial = [];
let nextFirstSeq = 1;
const seal = async (seq, hash) => {
  const encoded = {};
  for (const b of BUILDERS) {
    let s = shards[b];
    if (s.docs < SHARD) {
      // As the build worker does: a partial shard is re-added into one sized for its documents.
      const t0 = performance.now();
      s = fresh(b, s.firstSeq, partial.length);
      for (const d of partial) s.add(d.seq, d.texts);
      per[b].add += performance.now() - t0;
    }
    let t0 = performance.now();
    const file = await encode(b, s, seq, hash);
    per[b].encode += performance.now() - t0;
    encoded[b] = file;
    t0 = performance.now();
    const dir = join(out, b);
    const path = join(dir, shardFileName(s.firstSeq, seq));
    await writeFileAtomic(path, file);
    per[b].write += performance.now() - t0;
    per[b].files.push({ path, firstSeq: s.firstSeq, lastSeq: seq, docs: s.docs });
    per[b].bytes += file.length;
    t0 = performance.now();
    mergeDue(b, dir);
    per[b].merge += performance.now() - t0;
    shards[b] = null;
  }
  if (encoded.live && encoded.sorted && Buffer.compare(encoded.live, encoded.sorted) !== 0) {
    throw new Error(`shard ${seq}: the sorted builder's file differs from the live shard's`);
  }
  partial = [];
  nextFirstSeq = seq + 1;
};
function mergeDue(b, dir) {
  if (FACTOR < 2) return;
  const files = per[b].files;
  for (;;) {
    const run = planMerge(
      files.map((f) => f.docs),
      { baseDocs: SHARD, factor: FACTOR, maxDocs: NGRAM_MERGE_DOCS_MAX },
    );
    if (run === null) return;
    const inputs = files.slice(run.start, run.end);
    const path = join(dir, shardFileName(inputs[0].firstSeq, inputs[inputs.length - 1].lastSeq));
    const r = mergeShardFiles(inputs, `${path}.merge`, KEY);
    for (const f of inputs) rmSync(f.path);
    renameSync(`${path}.merge`, path);
    per[b].bytes += r.bytes;
    files.splice(run.start, run.end - run.start, { path, firstSeq: inputs[0].firstSeq, lastSeq: inputs[inputs.length - 1].lastSeq, docs: r.docs });
  }
}
for (const b of BUILDERS) mkdirSync(join(out, b), { recursive: true });

const started = performance.now();
const cpuStart = process.cpuUsage();
let prevHash = GENESIS;
let lastHash = '';
let seq = 1;
try {
  segments: for (const seg of listSegments(join(ARCHIVE, 'log'))) {
    let t0 = performance.now();
    const path = join(ARCHIVE, 'log', seg.name);
    const buf = readFileSync(path);
    t.read += performance.now() - t0;
    let pos = 0;
    while (pos < buf.length) {
      if (docs >= DOCS) break segments;
      t0 = performance.now();
      const nl = buf.indexOf(0x0a, pos);
      const t1 = performance.now();
      const parsed = parseLine(buf, pos, nl, prevHash, seq, path, false, String);
      const t2 = performance.now();
      t.read += t1 - t0;
      t.check += t2 - t1;
      prevHash = lastHash = parsed.hash;
      pos = nl + 1;
      records++;
      if (parsed.record.type === 'message.create' && !parsed.erased) {
        const t3 = performance.now();
        const texts = documentTextsOf(FIELDS, parsed.payloadJson);
        t.texts += performance.now() - t3;
        for (const b of BUILDERS) {
          const t4 = performance.now();
          shards[b] ??= fresh(b, nextFirstSeq);
          shards[b].add(seq, texts);
          per[b].add += performance.now() - t4;
        }
        partial.push({ seq, texts });
        docs++;
        if (shards[BUILDERS[0]].docs >= SHARD) await seal(seq, parsed.hash);
      }
      seq++;
    }
  }
  if (shards[BUILDERS[0]] !== null) await seal(seq - 1, lastHash);
  const us = (ms) => ((ms * 1000) / docs).toFixed(2).padStart(7);
  const [l1, l5] = loadavg();
  console.log(`${ARCHIVE}: ${records} records, ${docs} message documents, shards of ${SHARD}, merge factor ${FACTOR}; load ${l1.toFixed(1)} / ${l5.toFixed(1)} (1 / 5 min); ${((performance.now() - started) / 1000).toFixed(1)} s in all`);
  const cpu = process.cpuUsage(cpuStart);
  console.log(`CPU time of this process (all threads, every builder, timers included): ${((cpu.user + cpu.system) / docs).toFixed(2)} µs per document`);
  console.log('µs per document (wall time of each step: one core\'s time when the machine is otherwise idle):');
  console.log(['builder'.padEnd(8), 'read', 'check', 'texts', 'add', 'encode', 'write', 'merge', 'total'].map((s, i) => (i === 0 ? s : s.padStart(7))).join(' '));
  for (const b of BUILDERS) {
    const p = per[b];
    const total = t.read + t.check + t.texts + p.add + p.encode + p.write + p.merge;
    console.log([b.padEnd(8), us(t.read), us(t.check), us(t.texts), us(p.add), us(p.encode), us(p.write), us(p.merge), us(total)].join(' '));
    const final = p.files.reduce((s, f) => s + statSync(f.path).size, 0);
    console.log(`         files at the end: ${p.files.length}, ${(final / 2 ** 20).toFixed(1)} MiB; written ${(p.bytes / 2 ** 20).toFixed(1)} MiB`);
  }
  if (BUILDERS.includes('live') && BUILDERS.includes('sorted')) console.log('every shard file: byte-identical from both builders');
} finally {
  rmSync(out, { recursive: true, force: true });
}
