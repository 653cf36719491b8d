/**
 * The Bloom filter over a shard file's gram keys (format 3; issue 30 "skip files for absent and
 * rare terms without a dictionary read"; docs/internals/search-index.md). Pure: no I/O.
 *
 * NGRAM_BLOOM_BITS_PER_KEY bits per gram (rounded up to whole 32-bit words, at least one) and
 * NGRAM_BLOOM_HASHES probes by double hashing of the key's two 32-bit halves: about 1 % false
 * positives, never a false negative. Kept in memory per open file (1.25 bytes a gram).
 */
import { NGRAM_BLOOM_BITS_PER_KEY, NGRAM_BLOOM_HASHES } from '../../constants.js';
import { hashKey } from './ngram.js';

const P32 = 4294967296;

/** 32-bit words of the filter for a file of `grams` grams. */
export function bloomWords(grams: number): number {
  return Math.max(1, Math.ceil((grams * NGRAM_BLOOM_BITS_PER_KEY) / 32));
}

/** A second, odd hash of `key` for the probe step (independent of hashKey). */
function stepOf(key: number): number {
  const hi = Math.floor(key / P32);
  const lo = (key - hi * P32) | 0;
  let h = Math.imul(hi ^ Math.imul(lo, 0xcc9e2d51), 0x1b873593);
  h ^= h >>> 16;
  return (h | 1) >>> 0;
}

/** Sets `key`'s bits in `words`. */
export function bloomAdd(words: Uint32Array, key: number): void {
  const bits = words.length * 32;
  const h1 = hashKey(key);
  const h2 = stepOf(key);
  for (let i = 0; i < NGRAM_BLOOM_HASHES; i++) {
    const bit = (h1 + i * h2) % bits;
    words[bit >>> 5]! |= 1 << (bit & 31);
  }
}

/** False when `key` was certainly never added to `words`; true when it may have been. */
export function bloomMayHave(words: Uint32Array, key: number): boolean {
  const bits = words.length * 32;
  const h1 = hashKey(key);
  const h2 = stepOf(key);
  for (let i = 0; i < NGRAM_BLOOM_HASHES; i++) {
    const bit = (h1 + i * h2) % bits;
    if ((words[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
  }
  return true;
}
