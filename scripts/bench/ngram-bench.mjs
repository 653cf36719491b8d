#!/usr/bin/env node
/**
 * N-gram search index micro-benchmark: `npm run build && node scripts/bench/ngram-bench.mjs [--docs N]`.
 *
 * Builds an index (dist/store/search/index.js) of N (default 200,000) synthetic English-like
 * documents of about 400 characters under a temp folder, sealing a shard every `--shard-docs`
 * (default NGRAM_SHARD_DOCS_MAX) documents, twice in one run: with merging off, then with the
 * tiered merge policy (`--merge-factor`, default NGRAM_MERGE_FACTOR; issue 30), the same
 * documents both times. Prints per mode: build rate (docs/s of add() alone, and overall including
 * seals and merges until none is due), seal ms per shard, the longest event-loop stall during the
 * build (a 1 ms ticker), files at the end, write amplification (bytes written to shard files by
 * seals and merges / bytes of the final files), bytes on disk, live-shard bytes, RSS and heap,
 * reopen time and memory per shard file (seq table, sample, Bloom filter), and query latency
 * p50/p99 (ms) for: a frequent word (first 50 candidates, as a page), a rare word (all
 * candidates), an absent word whose trigrams are rare, an absent word made of two frequent words
 * (all trigrams frequent), a 1-character query and a 2-character query (first 50). `--tokens K`
 * adds K random 8-hex-digit tokens to each document (as ids and hashes in real messages), which
 * multiplies the distinct trigrams. `--modes off,on` picks the modes. The folders are removed at
 * the end.
 */
import { mkdtempSync, rmSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

/** Shard files are authenticated with the data folder's derived-file key; any 32 bytes do here. */
const BENCH_KEY = Buffer.alloc(32, 1);

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { NgramIndex } = await import(join(ROOT, 'dist/store/search/index.js'));
const { NGRAM_SHARD_DOCS_MAX, NGRAM_MERGE_FACTOR } = await import(join(ROOT, 'dist/constants.js'));

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const N = arg('docs', 200_000);
const SHARD_DOCS = arg('shard-docs', NGRAM_SHARD_DOCS_MAX);
const MERGE_FACTOR = arg('merge-factor', NGRAM_MERGE_FACTOR);
const modesAt = process.argv.indexOf('--modes');
const MODES = modesAt > 0 ? process.argv[modesAt + 1].split(',') : ['off', 'on'];
const RUNS = arg('runs', 200);
const RARE_EVERY = 100_000;
const RARE = 'quokkaberry';
/** Random 8-hex-digit tokens per document (ids, hashes: they multiply the distinct trigrams). */
const TOKENS = arg('tokens', 0);

// Seeded PRNG (mulberry32) so runs compare.
let seed = 0x9e3779b9;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const ONSETS = ['', 'b', 'c', 'd', 'f', 'g', 'h', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'br', 'ch', 'cl', 'st', 'th', 'tr', 'sh', 'pl', 'gr'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ea', 'ou', 'ai', 'io', 'é'];
const CODAS = ['', '', 'n', 'r', 's', 't', 'l', 'nd', 'st', 'ng', 'ck'];
const VOCAB = [];
while (VOCAB.length < 20_000) {
  let w = '';
  const syll = 1 + Math.floor(rand() * 3);
  for (let s = 0; s < syll; s++) w += ONSETS[Math.floor(rand() * ONSETS.length)] + VOWELS[Math.floor(rand() * VOWELS.length)] + CODAS[Math.floor(rand() * CODAS.length)];
  if (!w.includes('quok') && !w.includes('zz')) VOCAB.push(w);
}
/** The PRNG state after the vocabulary: each mode starts its documents from it. */
const DOCS_SEED = seed;
/** Zipf-like: index = V · r^3, so the first words are very frequent and most are rare. */
const word = () => VOCAB[Math.floor(VOCAB.length * rand() ** 3)];
function doc(i) {
  let text = i % RARE_EVERY === 7 ? `${RARE} ` : '';
  for (let t = 0; t < TOKENS; t++) text += `${Math.floor(rand() * 2 ** 32).toString(16).padStart(8, '0')} `;
  while (text.length < 400) text += word() + (rand() < 0.08 ? '. ' : ' ');
  return text;
}

const mib = (b) => (b / 1024 / 1024).toFixed(1);
const hash = (seq) => seq.toString(16).padStart(64, '0');
function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

/** Builds, reopens and queries an index with merging `mode` ('off' or 'on'); prints its rows. */
async function run(mode) {
  seed = DOCS_SEED;
  const mergeFactor = mode === 'on' ? MERGE_FACTOR : 0;
  const dir = mkdtempSync(join(tmpdir(), 'ngram-bench-'));
  try {
    let index = NgramIndex.open(dir, { key: BENCH_KEY, shardDocsMax: SHARD_DOCS, mergeFactor, onMergeError: (m) => console.log(`merge failed: ${m}`) });
    let addMs = 0;
    let sealMs = 0;
    let seals = 0;
    let chars = 0;
    const t0 = performance.now();
    let maxStallMs = 0;
    let liveBytesAtSeal = 0;
    // A 1 ms ticker measures the longest the event loop is held (seals in slices, merge swaps).
    let lastTick = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      maxStallMs = Math.max(maxStallMs, now - lastTick);
      lastTick = now;
    }, 1);
    for (let seq = 1; seq <= N; seq++) {
      const text = doc(seq);
      chars += text.length;
      const a = performance.now();
      index.add(seq, [text]);
      const b = performance.now();
      addMs += b - a;
      if (index.liveDocs >= SHARD_DOCS) {
        liveBytesAtSeal = Math.max(liveBytesAtSeal, index.memoryBytes().live);
        lastTick = performance.now();
        await index.durable(seq, hash(seq));
        sealMs += performance.now() - b;
        seals++;
        lastTick = performance.now();
      }
    }
    await index.flush();
    await index.whenMerged();
    clearInterval(ticker);
    const buildMs = performance.now() - t0;
    const files = readdirSync(dir);
    const diskBytes = files.reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
    const mem = index.memoryBytes();
    const w = index.writeStats();
    const shards = index.shards();
    console.log(`\n== merging ${mode}${mode === 'on' ? ` (factor ${MERGE_FACTOR})` : ''}: ${N} docs, avg ${(chars / N).toFixed(0)} chars, ${SHARD_DOCS} docs per seal`);
    const sizes = new Map();
    for (const m of shards) sizes.set(m.docs, (sizes.get(m.docs) ?? 0) + 1);
    console.log(`files ${shards.length} (oldest first, files × docs: ${[...sizes].map(([d, c]) => `${c} × ${d}`).join(', ')}), ${N - shards.reduce((sum, m) => sum + m.docs, 0)} live; ${w.merges} merges`);
    console.log(`add(): ${(N / (addMs / 1000)).toFixed(0)} docs/s (${(chars / (addMs / 1000) / 1e6).toFixed(1)} M chars/s); overall incl. text generation, seals and merges ${(N / (buildMs / 1000)).toFixed(0)} docs/s (${(buildMs / 1000).toFixed(1)} s)`);
    console.log(`seal: ${seals ? (sealMs / seals).toFixed(0) : '-'} ms per shard (encode in slices + write + fsync), longest event-loop stall during the build ${maxStallMs.toFixed(1)} ms; live shard at seal ${mib(liveBytesAtSeal)} MiB`);
    console.log(`written: seals ${mib(w.sealBytes)} MiB + merges ${mib(w.mergeBytes)} MiB; final files ${mib(diskBytes)} MiB: write amplification ${((w.sealBytes + w.mergeBytes) / diskBytes).toFixed(2)}; ${(diskBytes / N).toFixed(0)} bytes per doc`);
    global.gc?.();
    let mu = process.memoryUsage();
    console.log(`after build: rss ${mib(mu.rss)} MiB, heap ${mib(mu.heapUsed)} MiB, arrayBuffers ${mib(mu.arrayBuffers)} MiB; index live ${mib(mem.live)} MiB, persisted ${mib(mem.persisted)} MiB`);
    index.close();
    index = null;
    global.gc?.();

    const o = performance.now();
    index = NgramIndex.open(dir, { key: BENCH_KEY, shardDocsMax: SHARD_DOCS, mergeFactor, onDrop: (f, r) => console.log(`dropped ${f}: ${r}`) });
    const openMs = performance.now() - o;
    const m2 = index.memoryBytes();
    global.gc?.();
    mu = process.memoryUsage();
    const n = Math.max(1, index.shards().length);
    console.log(`reopen: ${openMs.toFixed(0)} ms for ${index.shards().length} files; ${(m2.persisted / n / 1024).toFixed(0)} KiB per file (${(m2.persisted / Math.max(1, N) ).toFixed(2)} bytes a document); rss ${mib(mu.rss)} MiB, heap ${mib(mu.heapUsed)} MiB`);

    const hard = VOCAB[0] + VOCAB[1];
    const queries = [
      ['frequent word', VOCAB[0], 50],
      ['rare word', RARE, Infinity],
      ['absent word', 'zzyzx', Infinity],
      [`absent word of 2 frequent words (${hard})`, hard, Infinity],
      ['1 char', 'e', 50],
      ['2 chars', 'th', 50],
      ['2 chars, absent', 'zz', Infinity],
    ];
    for (const [label, lq, take] of queries) {
      const times = [];
      let got = 0;
      for (let r = 0; r < RUNS + 10; r++) {
        const s = performance.now();
        let k = 0;
        for (const _seq of index.candidates(lq)) if (++k >= take) break;
        const e = performance.now() - s;
        if (r >= 10) times.push(e);
        got = k;
      }
      times.sort((a, b) => a - b);
      console.log(`q ${label.padEnd(44)} p50 ${pct(times, 50).toFixed(2)} ms  p99 ${pct(times, 99).toFixed(2)} ms  (${got} candidates${take === Infinity ? ', all' : ''})`);
    }
    index.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const mode of MODES) await run(mode);
