import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NgramIndex } from '../../dist/store/search/index.js';
import { planMerge, tierOf } from '../../dist/store/search/merge-policy.js';
import { bloomAdd, bloomMayHave, bloomWords } from '../../dist/store/search/bloom.js';
import { trigramKey } from '../../dist/store/search/ngram.js';
import { tempDir } from '../helpers/server.mjs';
import { KEY, QUERIES, feed, naive, prng, randomDocs, shardFiles } from '../helpers/ngram-docs.mjs';

// ---- The policy ----

test('the policy merges the oldest run of `factor` neighbours of one tier, and nothing else', () => {
  const policy = { baseDocs: 10, factor: 4, maxDocs: 1000 };
  assert.equal(planMerge([10, 10, 10], policy), null);
  assert.deepEqual(planMerge([10, 10, 10, 10], policy), { start: 0, end: 4 });
  assert.deepEqual(planMerge([40, 10, 10, 10, 10], policy), { start: 1, end: 5 });
  // Tiers: 10..39 → 0, 40..159 → 1; a run must be of one tier.
  assert.equal(tierOf(39, policy), 0);
  assert.equal(tierOf(40, policy), 1);
  assert.equal(planMerge([40, 40, 40, 10, 10, 10], policy), null);
  assert.deepEqual(planMerge([40, 40, 40, 40, 10], policy), { start: 0, end: 4 });
  // A truncated shard (fewer documents) is still tier 0.
  assert.deepEqual(planMerge([3, 10, 10, 10], policy), { start: 0, end: 4 });
});

test('the policy never merges a file of maxDocs or more, nor makes one above maxDocs', () => {
  const policy = { baseDocs: 10, factor: 2, maxDocs: 35 };
  assert.equal(planMerge([40, 40], policy), null);
  assert.equal(planMerge([20, 20], policy), null);
  assert.deepEqual(planMerge([20, 10, 10], policy), { start: 1, end: 3 });
  assert.throws(() => planMerge([1], { baseDocs: 1, factor: 1, maxDocs: 10 }), RangeError);
});

/** Files after `seals` seals of `base` documents, merging whenever the policy asks. */
function simulate(seals, policy) {
  const files = [];
  let written = 0;
  for (let i = 0; i < seals; i++) {
    files.push(policy.baseDocs);
    written += policy.baseDocs;
    for (let run = planMerge(files, policy); run !== null; run = planMerge(files, policy)) {
      const docs = files.slice(run.start, run.end).reduce((a, b) => a + b, 0);
      files.splice(run.start, run.end - run.start, docs);
      written += docs;
    }
  }
  return { files, written };
}

test('after N seals the number of files is logarithmic in N (at most factor − 1 per tier)', () => {
  for (const factor of [2, 4, 8]) {
    const policy = { baseDocs: 100, factor, maxDocs: Infinity };
    for (const seals of [1, 7, 64, 1000, 4321]) {
      const { files, written } = simulate(seals, policy);
      const tiers = Math.floor(Math.log(seals) / Math.log(factor)) + 1;
      assert.ok(files.length <= (factor - 1) * tiers, `factor ${factor}, ${seals} seals: ${files.length} files`);
      assert.equal(files.reduce((a, b) => a + b, 0), seals * 100);
      // Each document is written once per tier it climbs, plus its seal.
      assert.ok(written <= seals * 100 * (tiers + 1), `write amplification ${written / (seals * 100)}`);
    }
  }
  // With a cap: files of maxDocs stop merging, the rest stays logarithmic.
  const capped = simulate(1000, { baseDocs: 100, factor: 4, maxDocs: 6400 }).files;
  assert.ok(capped.filter((d) => d < 6400).length <= 3 * 3, `${capped}`);
  assert.ok(capped.every((d) => d <= 6400));
});

test('the Bloom filter never forgets a key, and rules out most others', () => {
  const keys = [];
  for (let i = 0; i < 5000; i++) keys.push(trigramKey(97 + (i % 26), 97 + ((i / 26) | 0) % 26, 97 + ((i / 676) | 0)));
  const words = new Uint32Array(bloomWords(keys.length));
  for (const k of keys) bloomAdd(words, k);
  for (const k of keys) assert.ok(bloomMayHave(words, k));
  let falsePositives = 0;
  for (let i = 0; i < 10000; i++) if (bloomMayHave(words, trigramKey(0x400 + (i % 100), 0x500 + ((i / 100) | 0), 0x20))) falsePositives++;
  assert.ok(falsePositives < 300, `${falsePositives} false positives of 10000`);
});

// ---- Merging an index ----

test('a query paused while a merge is adopted still yields every candidate once (it reads the merged file within the old file\'s seqs)', async (t) => {
  const dir = tempDir(t);
  const docs = randomDocs(prng(42), 40);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 4 });
  // Three full shards: no merge yet.
  await feed(index, docs.slice(0, 12));
  assert.equal(index.writeStats().merges, 0);
  const want = naive(docs.slice(0, 12), 'a');
  const it = index.candidates('a');
  const first = it.next().value;
  // The fourth shard starts a merge of all four.
  await feed(index, docs.slice(12, 16));
  await index.whenMerged();
  assert.equal(index.writeStats().merges, 1);
  assert.equal(index.shards().length, 1);
  assert.deepEqual([first, ...it], want);
  index.close();
});

/** An index of `shards` shards of 4 documents written without merging; returns its docs and files. */
async function unmergedShards(dir, docs) {
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 0 });
  await feed(index, docs);
  index.close();
  return shardFiles(dir);
}

test('at open, input files beside the merged file that covers them are deleted as covered', async (t) => {
  const dir = tempDir(t);
  const aside = tempDir(t);
  const docs = randomDocs(prng(7), 16);
  const inputs = await unmergedShards(dir, docs);
  assert.equal(inputs.length, 4);
  for (const f of inputs) copyFileSync(join(dir, f), join(aside, f));
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 4 });
  await index.whenMerged();
  index.close();
  const merged = shardFiles(dir);
  assert.equal(merged.length, 1);
  // A crash between the rename and the unlinks: both the merged file and its inputs.
  for (const f of inputs) copyFileSync(join(aside, f), join(dir, f));
  const drops = [];
  const reopened = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 4, onDrop: (file, reason) => drops.push(reason) });
  assert.equal(drops.length, 4);
  for (const r of drops) assert.match(r, /covered by a merged shard file/);
  assert.deepEqual(shardFiles(dir), merged);
  assert.equal(reopened.throughSeq, docs[15].seq);
  assert.deepEqual([...reopened.candidates('e')], naive(docs, 'e'));
  reopened.close();
});

test('at open, a damaged merged file is deleted and its inputs are kept; a leftover merge temp file is deleted', async (t) => {
  const dir = tempDir(t);
  const aside = tempDir(t);
  const docs = randomDocs(prng(8), 16);
  const inputs = await unmergedShards(dir, docs);
  for (const f of inputs) copyFileSync(join(dir, f), join(aside, f));
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 4 });
  await index.whenMerged();
  index.close();
  const [merged] = shardFiles(dir);
  for (const f of inputs) copyFileSync(join(aside, f), join(dir, f));
  const bytes = readFileSync(join(dir, merged));
  bytes[bytes.length - 40] ^= 0x5a;
  writeFileSync(join(dir, merged), bytes);
  writeFileSync(join(dir, `${merged}.merge.tmp-424242`), 'partial');
  const drops = [];
  const reopened = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 0, onDrop: (file, reason) => drops.push({ file, reason }) });
  assert.deepEqual(drops.map((d) => d.file).sort(), [join(dir, merged), join(dir, `${merged}.merge.tmp-424242`)].sort());
  assert.deepEqual(shardFiles(dir), inputs);
  assert.equal(reopened.throughSeq, docs[15].seq);
  assert.deepEqual([...reopened.candidates('e')], naive(docs, 'e'));
  reopened.close();
});

test('truncateFrom during a merge discards the merge when it truncates an input: no merged file, no temp file, and the re-added documents (one erased) answer', async (t) => {
  const dir = tempDir(t);
  const docs = randomDocs(prng(9), 24);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 4 });
  await feed(index, docs.slice(0, 16)); // the fourth seal has just started a merge of all four
  const erased = docs[5];
  index.truncateFrom(erased.seq);
  await index.whenMerged();
  assert.equal(index.writeStats().merges, 0);
  assert.ok(index.throughSeq < erased.seq);
  assert.deepEqual(readdirSync(dir).filter((f) => !f.endsWith('.ngram')), []);
  // The caller re-adds the documents from the log, without the erased one.
  const kept = docs.filter((d) => d !== erased);
  await feed(index, kept.filter((d) => d.seq > index.throughSeq));
  await index.whenMerged();
  for (const lq of QUERIES) {
    const got = [...index.candidates(lq)];
    assert.ok(!got.includes(erased.seq), `${lq}: the erased document is a candidate`);
    if (lq.length <= 2) assert.deepEqual(got, naive(kept, lq), lq);
  }
  index.close();
  const reopened = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 4, onDrop: (f, r) => assert.fail(`dropped ${f}: ${r}`) });
  assert.ok(![...reopened.candidates('e')].includes(erased.seq));
  // The live shard's documents are not in files: the caller adds them again from the log.
  assert.deepEqual([...reopened.candidates('a')], naive(kept.filter((d) => d.seq <= reopened.throughSeq), 'a'));
  reopened.close();
});

test('truncateFrom after a merge\'s inputs leaves the merge to finish, and the merged file answers', async (t) => {
  const dir = tempDir(t);
  const docs = randomDocs(prng(10), 24);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, mergeFactor: 4 });
  await feed(index, docs.slice(0, 16));
  await feed(index, docs.slice(16, 20)); // a fifth shard, sealed while the merge runs
  index.truncateFrom(docs[17].seq);
  await index.whenMerged();
  assert.equal(index.writeStats().merges, 1);
  assert.deepEqual(index.shards().map((s) => [s.firstSeq, s.lastSeq]), [[1, docs[15].seq]]);
  assert.deepEqual([...index.candidates('e')], naive(docs.slice(0, 16), 'e'));
  index.close();
});
