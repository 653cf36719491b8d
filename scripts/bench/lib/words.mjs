// Dictionary text for scripts/dev/post-archive.mjs (issue 30): a seeded generator, a shuffle, word
// ranks drawn log-uniformly (so a word's frequency falls as 1/rank, like natural text), and the
// words its measurement queries. Pure: no I/O.

/** The marker planted in one message of --marker-every (in no dictionary). */
export const MARKER_WORD = 'zephyrine';
/** A word in no message (not in wamerican's list). */
export const ABSENT_WORD = 'quixotry';

/** A seeded generator of uniform numbers in [0, 1) (mulberry32, scripts/lib/prng.mjs), deterministic for a seed. */
export { prng as createRandom } from '../../lib/prng.mjs';

/** A shuffled copy of `list` (Fisher–Yates with `random`). */
export function shuffled(list, random) {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * An index in [0, n) whose rank r = index + 1 is drawn log-uniformly from [1, n + 1): r =
 * floor(e^(U·ln(n + 1))), so P(index = i) = ln((i + 2) / (i + 1)) / ln(n + 1), about 1/((i + 1)·ln n).
 */
export function logUniformIndex(n, random) {
  return Math.min(n - 1, Math.floor(Math.exp(random() * Math.log(n + 1))) - 1);
}

/** A text of min..max words (count uniform, inclusive), each drawn with logUniformIndex from `words`. */
export function contentFor(words, random, min, max) {
  const count = min + Math.floor(random() * (max - min + 1));
  const out = new Array(count);
  for (let i = 0; i < count; i++) out[i] = words[logUniformIndex(words.length, random)];
  return out.join(' ');
}

/**
 * The q rows' words for a shuffled list: the highest-ranked plain lower-case word of at least 4
 * letters (frequent), the marker (rare), an absent word, one character, two, and two that no
 * wamerican word contains.
 */
export function queryWords(words) {
  const frequent = words.find((w) => /^[a-z]{4,}$/.test(w)) ?? words[0];
  return { frequent, rare: MARKER_WORD, absent: ABSENT_WORD, '1 char': 'e', '2 chars': 'th', '2 chars absent': 'qz' };
}
