/**
 * Issue 39, the index catches up fast: the build workers fill shards with SortedShardBuilder
 * (store/search/build.ts: postings appended per document, counting-sorted per gram at the seal)
 * instead of the live shard's hash table of posting chains. The file it makes must be the file
 * the live shard's encoder makes for the same documents, byte for byte, and answer the same.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { SortedShardBuilder } from '../../dist/store/search/build.js';
import { LiveShard } from '../../dist/store/search/live.js';
import { encodeShardSliced, ShardReader, shardFileName } from '../../dist/store/search/shard.js';
import { mergeShardFiles } from '../../dist/store/search/merge.js';
import { queryKeys } from '../../dist/store/search/ngram.js';
import { tempDir } from '../helpers/server.mjs';

const KEY = Buffer.alloc(32, 7);
const HASH = 'ab'.repeat(32);

/** The file the live shard's encoder makes for `docs` ({seq, texts}), firstSeq..lastSeq, bitmaps sized for `planned` documents. */
async function liveFile(firstSeq, lastSeq, docs, planned = docs.length) {
  const live = new LiveShard(firstSeq, planned);
  for (const d of docs) live.add(d.seq, d.texts);
  live.lastSeq = lastSeq;
  live.lastHash = HASH;
  return encodeShardSliced(live, Infinity, KEY);
}

function sortedFile(firstSeq, lastSeq, docs) {
  const b = new SortedShardBuilder(firstSeq, docs.length);
  for (const d of docs) b.add(d.seq, d.texts);
  return b.encode(lastSeq, HASH, KEY);
}

const WORDS = ['the', 'needle', 'hay', 'éclair', 'straw', 'e', 'q', 'zzz', '日本語', '😀', 'a b', 'tea'];

/** Documents of seq gaps and texts chosen to hit every list form: rare grams (varints), frequent ones (bitmaps), long gaps (multi-byte varints). */
function fixture(n) {
  const docs = [];
  let seq = 5;
  for (let i = 0; i < n; i++) {
    seq += 1 + ((i * 7919) % 13 === 0 ? 300 : i % 3);
    const words = [];
    for (let w = 0; w < 3 + (i % 17); w++) words.push(WORDS[(i * 31 + w * 17 + (i >> 4)) % WORDS.length]);
    if (i % 500 === 0) words.push(`rare${i}`);
    const texts = i % 9 === 0 ? [words.slice(0, 2).join(' '), words.join(' ')] : [words.join(' ')];
    docs.push({ seq, texts });
  }
  return docs;
}

test('a shard built by sorting postings is byte for byte the file the live shard encodes for the same documents', async () => {
  for (const n of [1, 2, 130, 2000, 9000]) {
    const docs = fixture(n);
    const last = docs[docs.length - 1].seq + 3;
    const expected = await liveFile(docs[0].seq - 2, last, docs);
    const actual = sortedFile(docs[0].seq - 2, last, docs);
    assert.equal(actual.length, expected.length, `${n} documents: file length`);
    assert.ok(actual.equals(expected), `${n} documents: the files differ`);
  }
});

test('a shard of more than 65536 documents (ordinals past 16 bits) is the same file both ways', async () => {
  const docs = [];
  for (let i = 0; i < 70000; i++) docs.push({ seq: i + 1, texts: [i % 1000 === 0 ? `x${i}y` : i % 2 ? 'ab' : 'bc'] });
  const expected = await liveFile(1, 70000, docs);
  assert.ok(sortedFile(1, 70000, docs).equals(expected));
});

test('a list in no more documents than a bitmap has bytes but longer as varints (long gaps) is a bitmap both ways', async () => {
  // 800 documents: a bitmap is 100 bytes; "x" is in 99 documents (97 one-byte deltas, two of two bytes: 101 bytes).
  const docs = [];
  for (let i = 0; i < 800; i++) docs.push({ seq: i + 1, texts: [i < 97 || i === 300 || i === 600 ? 'x' : 'y'] });
  assert.ok(sortedFile(1, 800, docs).equals(await liveFile(1, 800, docs)));
});

test('hundreds of grams frequent enough to be bitmaps (bitmap rows grown while adding) give the same file both ways', async () => {
  const docs = [];
  for (let i = 0; i < 4000; i++) {
    let text = '';
    for (let k = 0; k < 300; k++) if ((i * 7 + k * 13) % 5 !== 0) text += String.fromCharCode(0x100 + k) + String.fromCharCode(0x41 + (k % 20));
    docs.push({ seq: 2 * i + 1, texts: [text] });
  }
  const last = docs[docs.length - 1].seq;
  assert.ok(sortedFile(1, last, docs).equals(await liveFile(1, last, docs)));
});

test('any documents (random UTF-16 texts, empty texts, two texts each) give the same file both ways', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'é', '\ud83d', '\ude00', ' ', 'z', '\u0000', '\uffff'), maxLength: 40 }), { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 200 }),
      async (texts) => {
        const docs = texts.map((t, i) => ({ seq: 10 + i * 2, texts: t }));
        const last = docs[docs.length - 1].seq;
        const expected = await liveFile(10, last, docs);
        assert.ok(sortedFile(10, last, docs).equals(expected));
      },
    ),
    { numRuns: 150 },
  );
});

test('a sorted-built shard file opens and answers each query with the documents whose texts contain it', (t) => {
  const dir = tempDir(t, 'sorted-shard-');
  const docs = fixture(3000);
  const first = docs[0].seq;
  const last = docs[docs.length - 1].seq;
  const path = join(dir, shardFileName(first, last));
  writeFileSync(path, sortedFile(first, last, docs));
  const reader = ShardReader.open(path, { firstSeq: first, lastSeq: last }, KEY);
  try {
    const into = new Uint32Array(docs.length);
    for (const q of ['e', 'ha', 'éc', 'needle', '日本', '😀', 'rare1500', 'a b', 'absent']) {
      const expected = docs.filter((d) => d.texts.some((t) => t.includes(q))).map((d) => d.seq);
      // One- and two-unit queries are exact; a longer one is the intersection of its trigram lists.
      let ords = null;
      for (const key of queryKeys(q)) {
        const entry = reader.lookup(key);
        const got = entry === null ? [] : [...into.subarray(0, reader.decode(entry, into))];
        ords = ords === null ? got : ords.filter((o) => got.includes(o));
      }
      const seqs = ords.map((o) => reader.seqAt(o));
      if (q.length <= 2) assert.deepEqual(seqs, expected, q);
      else assert.deepEqual(seqs.filter((s) => expected.includes(s)), expected, q);
    }
  } finally {
    reader.close();
  }
});

test('merging shard files (bitmaps ORed in, on and off byte boundaries) gives byte for byte the file built from all their documents at once', (t) => {
  const dir = tempDir(t, 'sorted-merge-');
  const docs = fixture(6000);
  // Inputs of 2000, 1003 (its successor's ordinals start off a byte boundary) and 2997 documents.
  const cuts = [0, 2000, 3003, 6000];
  const inputs = [];
  for (let i = 0; i + 1 < cuts.length; i++) {
    const part = docs.slice(cuts[i], cuts[i + 1]);
    const firstSeq = i === 0 ? 1 : inputs[i - 1].lastSeq + 1;
    const lastSeq = part[part.length - 1].seq;
    const path = join(dir, shardFileName(firstSeq, lastSeq));
    writeFileSync(path, sortedFile(firstSeq, lastSeq, part));
    inputs.push({ path, firstSeq, lastSeq });
  }
  const out = join(dir, 'merged');
  mergeShardFiles(inputs, out, KEY);
  assert.ok(readFileSync(out).equals(sortedFile(1, inputs[inputs.length - 1].lastSeq, docs)));
});
