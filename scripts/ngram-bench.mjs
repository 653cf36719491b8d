#!/usr/bin/env node
/**
 * N-gram search index micro-benchmark: `npm run build && node scripts/ngram-bench.mjs [--docs N]`.
 *
 * Builds an index (dist/store/search/index.js) of N (default 200,000) synthetic English-like
 * documents of about 400 characters under a temp folder, sealing a shard every
 * NGRAM_SHARD_DOCS_MAX documents, then prints: build rate (docs/s of add() alone and overall),
 * seal ms per shard and the longest event-loop stall during a seal, bytes on disk, live-shard bytes, RSS and heap, reopen time and
 * memory per persisted shard, and query latency p50/p99 (ms) for: a frequent word (first 50
 * candidates, as a page), a rare word (all candidates), an absent word whose trigrams are rare,
 * an absent word made of two frequent words (all trigrams frequent), a 1-character query and a
 * 2-character query (first 50). `--tokens K` adds K random 8-hex-digit tokens to each document
 * (as ids and hashes in real messages), which multiplies the distinct trigrams. The folder is
 * removed at the end.
 */
import { mkdtempSync, rmSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

/** Shard files are authenticated with the data folder's derived-file key; any 32 bytes do here. */
const BENCH_KEY = Buffer.alloc(32, 1);

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { NgramIndex } = await import(join(ROOT, 'dist/store/search/index.js'));
const { NGRAM_SHARD_DOCS_MAX } = await import(join(ROOT, 'dist/constants.js'));

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const N = arg('docs', 200_000);
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

const dir = mkdtempSync(join(tmpdir(), 'ngram-bench-'));
try {
  let index = NgramIndex.open(dir, { key: BENCH_KEY });
  let addMs = 0;
  let sealMs = 0;
  let seals = 0;
  let chars = 0;
  const t0 = performance.now();
  let maxStallMs = 0;
  let liveBytesAtSeal = 0;
  for (let seq = 1; seq <= N; seq++) {
    const text = doc(seq);
    chars += text.length;
    const a = performance.now();
    index.add(seq, [text]);
    const b = performance.now();
    addMs += b - a;
    if (index.liveDocs >= NGRAM_SHARD_DOCS_MAX) {
      liveBytesAtSeal = Math.max(liveBytesAtSeal, index.memoryBytes().live);
      // A 1 ms ticker measures the longest the event loop is held while the seal runs.
      let lastTick = performance.now();
      const ticker = setInterval(() => {
        const now = performance.now();
        maxStallMs = Math.max(maxStallMs, now - lastTick);
        lastTick = now;
      }, 1);
      const sealing = index.durable(seq, hash(seq));
      maxStallMs = Math.max(maxStallMs, performance.now() - lastTick);
      await sealing;
      clearInterval(ticker);
      sealMs += performance.now() - b;
      seals++;
    }
  }
  await index.flush();
  const buildMs = performance.now() - t0;
  const files = readdirSync(dir);
  const diskBytes = files.reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
  const mem = index.memoryBytes();
  console.log(`docs ${N}, avg ${(chars / N).toFixed(0)} chars, shards ${index.shards().length} of ${NGRAM_SHARD_DOCS_MAX} docs, ${N - index.shards().reduce((s, m) => s + m.docs, 0)} live`);
  console.log(`add(): ${(N / (addMs / 1000)).toFixed(0)} docs/s (${(chars / (addMs / 1000) / 1e6).toFixed(1)} M chars/s); build incl. text generation ${(buildMs / 1000).toFixed(1)} s`);
  console.log(`seal: ${seals ? (sealMs / seals).toFixed(0) : '-'} ms per shard (encode in slices + write + fsync), longest event-loop stall ${maxStallMs.toFixed(1)} ms; live shard at seal ${mib(liveBytesAtSeal)} MiB`);
  console.log(`disk: ${mib(diskBytes)} MiB, ${(diskBytes / Math.max(1, index.shards().length) / 1024 / 1024).toFixed(1)} MiB per shard, ${(diskBytes / N).toFixed(0)} bytes per doc`);
  global.gc?.();
  let mu = process.memoryUsage();
  console.log(`after build: rss ${mib(mu.rss)} MiB, heap ${mib(mu.heapUsed)} MiB, arrayBuffers ${mib(mu.arrayBuffers)} MiB; index live ${mib(mem.live)} MiB, persisted ${mib(mem.persisted)} MiB`);
  index.close();
  index = null;
  global.gc?.();

  const o = performance.now();
  index = NgramIndex.open(dir, { key: BENCH_KEY, onDrop: (f, r) => console.log(`dropped ${f}: ${r}`) });
  const openMs = performance.now() - o;
  const m2 = index.memoryBytes();
  global.gc?.();
  mu = process.memoryUsage();
  console.log(`reopen: ${openMs.toFixed(0)} ms for ${index.shards().length} shards; ${(m2.persisted / Math.max(1, index.shards().length) / 1024).toFixed(0)} KiB per persisted shard; rss ${mib(mu.rss)} MiB, heap ${mib(mu.heapUsed)} MiB`);

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
      let n = 0;
      for (const _seq of index.candidates(lq)) if (++n >= take) break;
      const e = performance.now() - s;
      if (r >= 10) times.push(e);
      got = n;
    }
    times.sort((a, b) => a - b);
    console.log(`q ${label.padEnd(44)} p50 ${pct(times, 50).toFixed(2)} ms  p99 ${pct(times, 99).toFixed(2)} ms  (${got} candidates${take === Infinity ? ', all' : ''})`);
  }
  index.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
