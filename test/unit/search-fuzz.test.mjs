import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import stableStringify from 'fast-json-stable-stringify';
import { contentIncludes } from '../../dist/domain/forum/search.js';

/** Canonical message JSON around `content`, as the log stores it. */
const messageJson = (content) =>
  stableStringify({ id: 'msg_0000000009', topicId: 'tp_0000000002', authorId: 'ag_0000000001', content, replyTo: null, clientId: 'c', created: '2026-01-01T00:00:00.000Z' });

/** Median ms of `runs` calls of `fn`. */
function medianMs(fn, runs = 15) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)];
}

// Units that stress a search inside stored JSON: escapes (newline, quote, backslash, control,
// \u escapes), surrogate halves and pairs, repeated letters in both cases, and JSON key text.
const unit = fc.constantFrom('\n', '"', '\\', '\u0001', 'n', 'u', 'a', 'aA', 'A', '😀', '\ud83d', '\ude00', 'é', 'É', '","created":"', '\\n', 'x<i>');
const query = fc.array(fc.constantFrom('n', 'a', 'A', '\n', '"', '\\', 'u0001', '😀', 'é', 'b', '<i>'), { minLength: 1, maxLength: 200 }).map((a) => a.join(''));

test('a message search costs time linear in the message, whatever its content', () => {
  fc.assert(
    fc.property(fc.array(unit, { minLength: 1, maxLength: 4 }), query, (units, q) => {
      const pattern = units.join('');
      const lq = q.toLowerCase();
      const short = messageJson(`x${pattern.repeat(Math.ceil(1000 / pattern.length))}x`);
      const long = messageJson(`x${pattern.repeat(Math.ceil(8000 / pattern.length))}x`);
      // Correct first: the rule is content.toLowerCase().includes(q.toLowerCase()).
      assert.equal(contentIncludes(long, lq), JSON.parse(long).content.toLowerCase().includes(lq));
      const tShort = medianMs(() => contentIncludes(short, lq));
      const tLong = medianMs(() => contentIncludes(long, lq));
      // 8x the text may cost about 8x the time; a cost quadratic in the length would be 64x (tens
      // of ms at 8000 characters). The additive 0.5 ms absorbs a preempted run on a busy machine.
      assert.ok(tLong <= 24 * tShort + 0.5, `8x longer content took ${(tLong / tShort).toFixed(1)}x the time (${tLong.toFixed(3)} ms) for ${JSON.stringify(pattern)} / ${JSON.stringify(q.slice(0, 20))}`);
    }),
    { numRuns: 150 },
  );
});
