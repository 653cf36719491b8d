import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { contentFor, createRandom, logUniformIndex, queryWords, shuffled } from '../../scripts/bench/lib/words.mjs';

test('the seeded generator repeats its sequence for a seed and stays in [0, 1)', () => {
  const a = createRandom(7);
  const b = createRandom(7);
  for (let i = 0; i < 1000; i++) {
    const x = a();
    assert.equal(x, b());
    assert.ok(x >= 0 && x < 1);
  }
  assert.notEqual(createRandom(8)(), createRandom(7)());
});

test('a shuffle is a permutation of its input and leaves the input alone', () => {
  fc.assert(
    fc.property(fc.array(fc.string(), { maxLength: 50 }), fc.nat(), (list, seed) => {
      const before = [...list];
      const out = shuffled(list, createRandom(seed));
      assert.deepEqual(list, before);
      assert.deepEqual([...out].sort(), [...list].sort());
    }),
  );
});

test('log-uniform indexes stay in range and fall in frequency as 1/rank', () => {
  const random = createRandom(1);
  const n = 1000;
  const counts = new Array(n).fill(0);
  const draws = 200_000;
  for (let i = 0; i < draws; i++) {
    const k = logUniformIndex(n, random);
    assert.ok(Number.isInteger(k) && k >= 0 && k < n);
    counts[k]++;
  }
  // P(index i) = ln((i + 2) / (i + 1)) / ln(n + 1): rank 1 ≈ 10 %, rank 10 ≈ 1.4 %, the top 10 ≈ 35 %.
  const expected = (i) => Math.log((i + 2) / (i + 1)) / Math.log(n + 1);
  for (const i of [0, 9, 99]) assert.ok(Math.abs(counts[i] / draws - expected(i)) < 0.2 * expected(i) + 0.0005, `index ${i}: ${counts[i]}`);
  const top10 = counts.slice(0, 10).reduce((a, b) => a + b, 0) / draws;
  assert.ok(Math.abs(top10 - Math.log(11) / Math.log(n + 1)) < 0.01, `top 10 share ${top10}`);
});

test('a generated text has between min and max words, all from the list', () => {
  const words = ['alpha', 'beta', 'gamma', 'delta'];
  const random = createRandom(3);
  const lengths = new Set();
  for (let i = 0; i < 2000; i++) {
    const parts = contentFor(words, random, 15, 90).split(' ');
    assert.ok(parts.length >= 15 && parts.length <= 90, `${parts.length} words`);
    for (const w of parts) assert.ok(words.includes(w));
    lengths.add(parts.length);
  }
  assert.ok(lengths.has(15) && lengths.has(90));
});

test('the frequent query word is the highest-ranked plain lower-case word of four letters or more', () => {
  assert.equal(queryWords(["A's", 'Zulu', 'cat', 'sleep', 'awaked']).frequent, 'sleep');
});
