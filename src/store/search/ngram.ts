/**
 * Grams of a text, packed into number keys, and the grams a query needs (issue 17 "Search that
 * does not scan"; docs/internals/search-index.md). Pure: no I/O.
 *
 * A gram is a run of 1, 2 or 3 UTF-16 code units of an already lower-cased text. Its key is
 * `length · 2^48 + c0 · 2^32 + c1 · 2^16 + c2` (unused positions are 0), an integer below 2^50,
 * exact in a double, and ordered: all unigrams, then all bigrams, then all trigrams. Grams never
 * span two texts of one document (a knowledge revision's title and content are separate texts).
 */

const P16 = 65536;
const P32 = 4294967296;
const P48 = 281474976710656;

/** Key of the unigram `a` (a UTF-16 code unit, 0..65535). */
export function unigramKey(a: number): number {
  return P48 + a * P32;
}

/** Key of the bigram `a b` (UTF-16 code units). */
export function bigramKey(a: number, b: number): number {
  return 2 * P48 + a * P32 + b * P16;
}

/** Key of the trigram `a b c` (UTF-16 code units). */
export function trigramKey(a: number, b: number, c: number): number {
  return 3 * P48 + a * P32 + b * P16 + c;
}

/** The gram a key stands for, as a string (for tests and debugging; allocates). */
export function gramOfKey(key: number): string {
  const len = Math.floor(key / P48);
  const rest = key - len * P48;
  const a = Math.floor(rest / P32);
  const b = Math.floor((rest - a * P32) / P16);
  const c = rest - a * P32 - b * P16;
  return String.fromCharCode(...[a, b, c].slice(0, len));
}

/**
 * Calls `emit(key)` for every gram (lengths 1, 2 and 3) at every position of `lc`, duplicates
 * included, without allocating a string per gram. `lc` must already be lower-cased.
 */
export function forEachGram(lc: string, emit: (key: number) => void): void {
  let p2 = 0;
  let p1 = 0;
  for (let i = 0; i < lc.length; i++) {
    const c = lc.charCodeAt(i);
    emit(P48 + c * P32);
    if (i >= 1) emit(2 * P48 + p1 * P32 + c * P16);
    if (i >= 2) emit(3 * P48 + p2 * P32 + p1 * P16 + c);
    p2 = p1;
    p1 = c;
  }
}

/**
 * The gram keys a query must look up, for a non-empty lower-cased query `lq`:
 * length 1 → its unigram, length 2 → its bigram (both exact: a document holds the gram iff one of
 * its texts contains `lq`); length ≥ 3 → its distinct trigrams (every document containing `lq`
 * holds them all, so intersecting their postings gives a superset of the answer).
 * Throws a TypeError for an empty query (a programmer error: the API refuses it with 400 first).
 */
export function queryKeys(lq: string): number[] {
  if (lq.length === 0) throw new TypeError('queryKeys: empty query');
  if (lq.length === 1) return [unigramKey(lq.charCodeAt(0))];
  if (lq.length === 2) return [bigramKey(lq.charCodeAt(0), lq.charCodeAt(1))];
  const keys = new Set<number>();
  for (let i = 2; i < lq.length; i++) {
    keys.add(trigramKey(lq.charCodeAt(i - 2), lq.charCodeAt(i - 1), lq.charCodeAt(i)));
  }
  return [...keys];
}

/** Key → 32-bit hash for open addressing (the key's two 32-bit halves mixed). */
export function hashKey(key: number): number {
  const hi = Math.floor(key / P32);
  const lo = (key - hi * P32) | 0;
  let h = Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return (h ^ (h >>> 13)) >>> 0;
}
