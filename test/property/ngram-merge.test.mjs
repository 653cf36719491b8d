/**
 * The n-gram index's merges at the full property budget (slow tier, issue 52): for random
 * documents, shard sizes and merge factors, a merged index answers every query exactly like the
 * unmerged one, before and after a reopen. The merge policy and the merge's crash cases are unit
 * tests (test/unit/ngram-merge.test.mjs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NgramIndex } from '../../dist/store/search/index.js';
import { tempDir } from '../helpers/server.mjs';
import { KEY, QUERIES, feed, naive, prng, randomDocs, shardFiles } from '../helpers/ngram-docs.mjs';

test('a merged index answers every query exactly like the unmerged one (random documents), also after a reopen', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.integer(), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 2, max: 4 }), async (seed, shardDocsMax, mergeFactor) => {
      const docs = randomDocs(prng(seed), 60);
      const plainDir = tempDir(t);
      const mergedDir = tempDir(t);
      const plain = NgramIndex.open(plainDir, { key: KEY, shardDocsMax, mergeFactor: 0 });
      const merged = NgramIndex.open(mergedDir, { key: KEY, shardDocsMax, mergeFactor });
      await feed(plain, docs);
      await feed(merged, docs);
      await merged.whenMerged();
      assert.ok(merged.writeStats().merges > 0, 'merges happened');
      assert.ok(merged.shards().length < plain.shards().length);
      assert.equal(shardFiles(mergedDir).length, merged.shards().length);
      const check = (index) => {
        for (const lq of QUERIES) {
          const want = naive(docs, lq);
          const got = [...index.candidates(lq)];
          if (lq.length <= 2) assert.deepEqual(got, want, lq);
          else assert.ok(want.every((s) => got.includes(s)), lq);
          // Queries of at most NGRAM_QUERY_TRIGRAMS_MAX trigrams look up the same grams everywhere: the same candidates.
          if (lq.length <= 6) assert.deepEqual(got, [...plain.candidates(lq)], `${lq}: merged and unmerged differ`);
          const before = docs[30].seq;
          assert.deepEqual([...index.candidates(lq, { beforeSeq: before })], got.filter((s) => s < before), `${lq} before ${before}`);
        }
      };
      check(merged);
      const shards = merged.shards();
      merged.close();
      const reopened = NgramIndex.open(mergedDir, { key: KEY, shardDocsMax, mergeFactor, onDrop: (f, r) => assert.fail(`dropped ${f}: ${r}`) });
      assert.deepEqual(reopened.shards(), shards);
      check(reopened);
      reopened.close();
      plain.close();
    }),
    { numRuns: 12 },
  );
});
