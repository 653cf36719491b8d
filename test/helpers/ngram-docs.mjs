/**
 * Random documents for the n-gram index's merge tests (test/unit/ngram-merge.test.mjs and the
 * property test test/property/ngram-merge.test.mjs): a seeded generator, documents of words from
 * a small vocabulary (accents, Greek, an emoji, two-letter words), feeding them into an index and
 * the plain scan the index must agree with.
 */
import { readdirSync } from 'node:fs';

/** The index key of every test index (32 bytes). */
export const KEY = Buffer.alloc(32, 7);
/** A stand-in chained hash for record `seq` (64 hex). */
export const hashOf = (seq) => seq.toString(16).padStart(64, '0');
/** The shard files in index folder `dir`, sorted. */
export const shardFiles = (dir) => readdirSync(dir).filter((f) => f.endsWith('.ngram')).sort();

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'élan', 'σίσυφος', 'straße', '😀', 'x', 'ab', 'quick', 'brown', 'fox', 'zebra'];

/** `n` documents with ascending seqs from `startSeq` (gaps of 1 to 3), each one or two texts of random words from `rand`. */
export function randomDocs(rand, n, startSeq = 1) {
  const docs = [];
  let seq = startSeq;
  for (let i = 0; i < n; i++) {
    seq += 1 + Math.floor(rand() * 3);
    const words = [];
    const len = 1 + Math.floor(rand() * 6);
    for (let w = 0; w < len; w++) words.push(WORDS[Math.floor(rand() * WORDS.length)]);
    if (rand() < 0.1) words.push(`n${i}`);
    docs.push({ seq, texts: rand() < 0.2 ? [words.slice(0, 1).join(' '), words.slice(1).join(' ')] : [words.join(' ')] });
  }
  return docs;
}

/** A seeded pseudo-random generator (mulberry32): returns numbers in [0, 1). */
export function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Adds `docs` to `index`, each made durable, then flushes it. */
export async function feed(index, docs) {
  for (const d of docs) {
    index.add(d.seq, d.texts);
    await index.durable(d.seq, hashOf(d.seq));
  }
  await index.flush();
}

/** Queries of 1 to 9 code units, some matching nothing. */
export const QUERIES = ['a', 'e', 'ß', '😀', 'al', 'ph', ' b', 'alp', 'alpha', 'ta g', 'fox', 'zebra', 'n1', 'n12', 'σίσ', 'nope', 'qqq', 'x a', 'brown fox'];

/** The seqs of `docs` with a text containing `lq`, newest first: what a search must answer. */
export function naive(docs, lq) {
  return docs.filter((d) => d.texts.some((t) => t.includes(lq))).map((d) => d.seq).reverse();
}
