import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync, truncateSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { NgramIndex, NgramIndexDamagedError } from '../../dist/store/search/index.js';
import { forEachGram, gramOfKey, queryKeys } from '../../dist/store/search/ngram.js';
import { tempDir } from '../helpers/server.mjs';
import { withPostingsRemoved } from '../helpers/tamper.mjs';

const hashOf = (seq) => seq.toString(16).padStart(64, '0');
/** The derived-file key the shards of these tests are authenticated with. */
const KEY = Buffer.alloc(32, 7);

/** The rule the index must serve: documents with a text containing lq, newest first. */
function naive(docs, lq, beforeSeq = Infinity) {
  return docs.filter((d) => d.seq < beforeSeq && d.texts.some((t) => t.includes(lq))).map((d) => d.seq).reverse();
}

/**
 * Adds docs, calling durable() after every `durableEvery`-th (so shards seal every shardDocsMax
 * docs, or later and larger when durable() comes rarely), and waits for the seals.
 */
async function feed(index, docs, durableEvery = 1) {
  for (const [i, d] of docs.entries()) {
    index.add(d.seq, d.texts);
    if ((i + 1) % durableEvery === 0) await index.durable(d.seq, hashOf(d.seq));
  }
  await index.flush();
}

function shardFiles(dir) {
  return readdirSync(dir).filter((f) => f.endsWith('.ngram')).sort();
}

/** True when every expected seq is among the candidates (order is checked by assertDescendingUnique). */
function includesAll(candidates, expected) {
  const set = new Set(candidates);
  return expected.every((s) => set.has(s));
}

function assertDescendingUnique(list) {
  for (let i = 1; i < list.length; i++) assert.ok(list[i - 1] > list[i], `not strictly descending at ${i}: ${list}`);
}

const corpusWords = ['alpha', 'beta', 'gamma', 'Élan', 'ΣΊΣΥΦΟΣ', 'straße', 'İstanbul', '😀 emoji', 'line\nbreak', '"quoted"', 'back\\slash', 'x', 'ab'];

function makeDocs(n, startSeq = 1, step = 1) {
  const docs = [];
  for (let i = 0; i < n; i++) {
    const words = [corpusWords[i % corpusWords.length], corpusWords[(i * 7 + 3) % corpusWords.length], `n${i}`];
    docs.push({ seq: startSeq + i * step, texts: [words.join(' ').toLowerCase()] });
  }
  return docs;
}

test('grams of a text are every run of 1, 2 and 3 code units, and keys round-trip', () => {
  const grams = [];
  forEachGram('abcd', (k) => grams.push(gramOfKey(k)));
  assert.deepEqual(grams.sort(), ['a', 'ab', 'abc', 'b', 'bc', 'bcd', 'c', 'cd', 'd'].sort());
  assert.deepEqual(queryKeys('abab').map(gramOfKey).sort(), ['aba', 'bab']);
  assert.deepEqual(queryKeys('\u{1F600}').map(gramOfKey), ['\u{1F600}']);
  assert.throws(() => queryKeys(''), TypeError);
});

test('candidates come from live and sealed shards, newest first, and respect beforeSeq', async (t) => {
  const dir = tempDir(t);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 10 });
  const docs = makeDocs(45, 3, 2);
  await feed(index, docs);
  assert.equal(index.shards().length, 4);
  assert.equal(shardFiles(dir).length, 4);
  for (const lq of ['alpha', 'a', 'ab', 'σύ', 'n1', 'n12', '😀', 'absent word']) {
    const got = [...index.candidates(lq)];
    assertDescendingUnique(got);
    assert.ok(includesAll(got, naive(docs, lq)), lq);
    if (lq.length <= 2) assert.deepEqual(got, naive(docs, lq), lq);
    const before = [...index.candidates(lq, { beforeSeq: 40 })];
    assert.ok(before.every((s) => s < 40));
    assert.ok(includesAll(before, naive(docs, lq, 40)), lq);
  }
  assert.deepEqual([...index.candidates('absent word')], []);
  index.close();
});

test('shards are contiguous, record lastSeq and lastHash, and reopen the same', async (t) => {
  const dir = tempDir(t);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 8 });
  const docs = makeDocs(30, 1, 3);
  await feed(index, docs);
  const shards = index.shards();
  assert.equal(shards.length, 3);
  assert.equal(shards[0].firstSeq, 1);
  for (let i = 1; i < shards.length; i++) assert.equal(shards[i].firstSeq, shards[i - 1].lastSeq + 1);
  for (const s of shards) {
    assert.equal(s.docs, 8);
    assert.equal(s.lastHash, hashOf(s.lastSeq));
    assert.equal(s.bytes, statSync(join(dir, `${String(s.firstSeq).padStart(16, '0')}-${String(s.lastSeq).padStart(16, '0')}.ngram`)).size);
  }
  index.close();
  const drops = [];
  const reopened = NgramIndex.open(dir, { key: KEY, shardDocsMax: 8, onDrop: (f, r) => drops.push(r) });
  assert.deepEqual(drops, []);
  assert.deepEqual(reopened.shards(), shards);
  assert.equal(reopened.throughSeq, shards[2].lastSeq);
  assert.throws(() => reopened.add(shards[2].lastSeq, ['x']), RangeError);
  const persistedDocs = docs.filter((d) => d.seq <= shards[2].lastSeq);
  assert.deepEqual([...reopened.candidates('a')], naive(persistedDocs, 'a'));
  reopened.close();
});

test('a shard is sealed only when its documents are durable', async (t) => {
  const dir = tempDir(t);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 2 });
  index.add(5, ['one']);
  index.add(6, ['two']);
  await index.durable(5, hashOf(5));
  assert.equal(index.shards().length, 0);
  await index.durable(9, hashOf(9));
  assert.deepEqual(index.shards().map((s) => [s.firstSeq, s.lastSeq, s.docs]), [[1, 9, 2]]);
  assert.equal(index.throughSeq, 9);
  assert.throws(() => index.add(9, ['x']), RangeError);
  index.add(10, ['three']);
  assert.deepEqual([...index.candidates('t')], [10, 6]);
  index.close();
});

test('truncateFrom drops the shards at and after seq and the live shard', async (t) => {
  const dir = tempDir(t);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 5 });
  const docs = makeDocs(23);
  await feed(index, docs);
  assert.equal(index.shards().length, 4);
  index.truncateFrom(12);
  assert.deepEqual(index.shards().map((s) => s.lastSeq), [5, 10]);
  assert.equal(index.throughSeq, 10);
  assert.equal(shardFiles(dir).length, 2);
  assert.deepEqual([...index.candidates('a')], naive(docs.slice(0, 10), 'a'));
  await feed(index, docs.slice(10));
  assert.equal(index.shards().length, 4);
  assert.deepEqual([...index.candidates('e')], naive(docs, 'e'));
  index.truncateFrom(1);
  assert.equal(index.throughSeq, 0);
  assert.deepEqual(index.shards(), []);
  assert.deepEqual(shardFiles(dir), []);
  index.close();
});

test('truncateFrom during a seal abandons the shard being written', async (t) => {
  const dir = tempDir(t);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 3 });
  for (const d of makeDocs(3)) index.add(d.seq, d.texts);
  const sealing = index.durable(3, hashOf(3));
  index.truncateFrom(2);
  await sealing;
  assert.deepEqual(index.shards(), []);
  assert.deepEqual(readdirSync(dir), []);
  assert.equal(index.throughSeq, 0);
  index.close();
});

/** Builds an index of 3 sealed shards in `dir` and returns its shard file names. */
async function threeShards(dir) {
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4 });
  await feed(index, makeDocs(12));
  index.close();
  return shardFiles(dir);
}

function reopenWithDrops(dir) {
  const drops = [];
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 4, onDrop: (file, reason) => drops.push({ file, reason }) });
  return { index, drops };
}

for (const [name, damage, reasonPattern] of [
  ['a flipped header byte', (p) => flip(p, 20), /header checksum/],
  ['a flipped seq-table byte', (p) => flip(p, 130), /seq table or sample checksum/],
  ['a truncated file', (p) => truncateSync(p, statSync(p).size - 1), /bytes, header says/],
  ['a wrong magic', (p) => flip(p, 0), /magic/],
  ['an empty file', (p) => truncateSync(p, 0), /shorter than a shard header/],
]) {
  test(`a shard file with ${name} is dropped and reported, with every shard after it`, async (t) => {
    const dir = tempDir(t);
    const files = await threeShards(dir);
    damage(join(dir, files[1]));
    const { index, drops } = reopenWithDrops(dir);
    assert.deepEqual(drops.map((d) => d.file), [join(dir, files[1]), join(dir, files[2])]);
    assert.match(drops[0].reason, reasonPattern);
    assert.match(drops[1].reason, /not contiguous/);
    assert.deepEqual(shardFiles(dir), [files[0]]);
    assert.equal(index.throughSeq, 4);
    index.close();
  });
}

function flip(path, offset) {
  const bytes = readFileSync(path);
  bytes[offset] ^= 0x5a;
  writeFileSync(path, bytes);
}

/** Flips every byte of `path` from the offset stored at header byte `offsetField` to the one stored at `endField` (format 3 section order: postings, dictionary, sample). */
function flipFrom(path, offsetField, endField) {
  const bytes = readFileSync(path);
  for (let i = bytes.readUInt32LE(offsetField); i < bytes.readUInt32LE(endField); i++) bytes[i] ^= 0x5a;
  writeFileSync(path, bytes);
}

for (const [section, offsetField, endField, reasonPattern] of [
  ['dictionary', 80, 76, /dictionary block \d+ checksum/],
  ['postings', 84, 80, /posting list checksum/],
]) {
  test(`${section} bytes damaged after opening are found on read: the shard is dropped and the query fails loudly`, async (t) => {
    const dir = tempDir(t);
    const files = await threeShards(dir);
    const { index, drops } = reopenWithDrops(dir);
    flipFrom(join(dir, files[2]), offsetField, endField);
    assert.throws(() => [...index.candidates('e')], (err) => err instanceof NgramIndexDamagedError && err.firstSeq === 9);
    assert.equal(drops.length, 1);
    assert.match(drops[0].reason, reasonPattern);
    assert.deepEqual(shardFiles(dir), files.slice(0, 2));
    index.truncateFrom(9);
    assert.equal(index.throughSeq, 8);
    assert.deepEqual(index.shards().map((s) => s.lastSeq), [4, 8]);
    index.close();
  });
}

test('leftover temp files and shards not starting at seq 1 are dropped', async (t) => {
  const dir = tempDir(t);
  const files = await threeShards(dir);
  writeFileSync(join(dir, `${files[0]}.tmp-424242`), 'partial');
  const { unlinkSync } = await import('node:fs');
  unlinkSync(join(dir, files[0]));
  const { index, drops } = reopenWithDrops(dir);
  assert.equal(drops.length, 3);
  assert.deepEqual(readdirSync(dir), []);
  assert.equal(index.throughSeq, 0);
  index.close();
});

// Property: candidates ⊇ naive answer, descending, unique; exact for 1–2 code units; across
// sealing and a reopen of the directory.
const alphabet = ['a', 'b', 'A', 'B', 'é', 'É', 'Σ', 'σ', 'ς', 'ß', 'İ', 'i', '\u{1F600}', '\u{1F601}', '\n', '"', '\\', ' ', 'ab', 'ba'];
const textArb = fc.array(fc.constantFrom(...alphabet), { maxLength: 12 }).map((parts) => parts.join(''));
const docArb = fc.array(textArb, { minLength: 1, maxLength: 2 });
const corpusArb = fc.record({
  docs: fc.array(docArb, { minLength: 0, maxLength: 40 }),
  gaps: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 40, maxLength: 40 }),
  shardDocsMax: fc.integer({ min: 1, max: 9 }),
  durableEvery: fc.integer({ min: 1, max: 4 }),
  reopenAt: fc.nat(),
  queries: fc.array(
    fc.oneof(
      fc.record({ doc: fc.nat(), start: fc.nat(), len: fc.integer({ min: 1, max: 8 }) }),
      fc.array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 6 }).map((p) => p.join('')),
    ),
    { minLength: 1, maxLength: 12 },
  ),
  beforeSeq: fc.option(fc.integer({ min: 1, max: 130 })),
});

test('property: candidates hold every matching document, newest first, exactly for 1–2 code units, across seals and reopen', async (t) => {
  const root = tempDir(t);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(corpusArb, async ({ docs: raw, gaps, shardDocsMax, durableEvery, reopenAt, queries, beforeSeq }) => {
      const dir = join(root, String(run++));
      let seq = 0;
      const docs = raw.map((texts, i) => ({ seq: (seq += gaps[i]), texts: texts.map((s) => s.toLowerCase()) }));
      const cut = raw.length === 0 ? 0 : reopenAt % (raw.length + 1);
      let index = NgramIndex.open(dir, { key: KEY, shardDocsMax });
      await feed(index, docs.slice(0, cut), durableEvery);
      index.close();
      index = NgramIndex.open(dir, { key: KEY, shardDocsMax, onDrop: (f, r) => assert.fail(`dropped ${f}: ${r}`) });
      // Documents after the last persisted shard were in memory only; feed them again, as the log would.
      await feed(index, docs.filter((d) => d.seq > index.throughSeq), durableEvery);
      for (const q of queries) {
        let lq;
        if (typeof q === 'string') lq = q.toLowerCase();
        else {
          const text = docs.length ? docs[q.doc % docs.length].texts[0] : 'ab';
          lq = text.slice(q.start % (text.length || 1), (q.start % (text.length || 1)) + q.len) || 'a';
        }
        const opts = beforeSeq === null ? {} : { beforeSeq };
        const got = [...index.candidates(lq, opts)];
        const want = naive(docs, lq, beforeSeq ?? Infinity);
        assertDescendingUnique(got);
        assert.ok(includesAll(got, want), `missing a match for ${JSON.stringify(lq)}: got ${got}, want ${want}`);
        assert.ok(got.every((s) => docs.some((d) => d.seq === s)), 'a candidate that is not a document');
        if (lq.length <= 2) assert.deepEqual(got, want, JSON.stringify(lq));
      }
      index.close();
    }),
    { numRuns: 200 },
  );
});

test('a live shard past its planned size keeps frequent grams exact (bitmap, then a varint tail)', async (t) => {
  const dir = tempDir(t);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 16 });
  const docs = [];
  for (let seq = 1; seq <= 70; seq++) docs.push({ seq, texts: [seq % 3 === 0 ? 'the cat' : 'a dog'] });
  for (const d of docs) index.add(d.seq, d.texts);
  for (const lq of ['a', 'th', ' d', 'the', 'dog']) assert.deepEqual([...index.candidates(lq)], naive(docs, lq), lq);
  await index.durable(70, hashOf(70));
  assert.deepEqual(index.shards().map((s) => s.docs), [70]);
  for (const lq of ['a', 'th', ' d', 'the', 'dog']) assert.deepEqual([...index.candidates(lq)], naive(docs, lq), lq);
  index.close();
});

test('a long query asks shard files for its rarest trigrams only and still finds every match', async (t) => {
  const dir = tempDir(t);
  // 1100 documents in a shard file, 1050 live: the live shard is large enough to estimate rarity.
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 1100 });
  const docs = [];
  for (let seq = 1; seq <= 2150; seq++) {
    const text = seq % 97 === 0 ? `the common words and a rare zebraquokka ${seq}` : `the common words and more words ${seq % 13}`;
    docs.push({ seq, texts: [text] });
  }
  await feed(index, docs);
  assert.equal(index.shards().length, 1);
  for (const lq of ['common words and a rare zebraquokka', 'the common words and more', 'zebraquokka 19', 'words and a rare zebra']) {
    const got = [...index.candidates(lq)];
    assertDescendingUnique(got);
    assert.ok(includesAll(got, naive(docs, lq)), lq);
  }
  // Fewer trigrams mean more candidates, never fewer matches; a rare trigram keeps them few.
  assert.ok([...index.candidates('common words and a rare zebraquokka')].length <= 2150 / 97 + 1);
  index.close();
});

test('a seal whose write fails keeps answering from memory and is written before the next one', async (t) => {
  const dir = tempDir(t);
  const index = NgramIndex.open(dir, { key: KEY, shardDocsMax: 3 });
  const { mkdirSync, rmdirSync } = await import('node:fs');
  // A folder where the temp file must go makes the write fail (EISDIR), as a full disk would.
  const blocker = join(dir, `0000000000000001-0000000000000003.ngram.tmp-${process.pid}`);
  mkdirSync(blocker);
  const docs = makeDocs(6);
  for (const d of docs.slice(0, 3)) index.add(d.seq, d.texts);
  await assert.rejects(index.durable(3, hashOf(3)));
  assert.deepEqual(index.shards(), []);
  assert.equal(index.throughSeq, 3);
  assert.deepEqual([...index.candidates('a')], naive(docs.slice(0, 3), 'a'));
  rmdirSync(blocker);
  for (const d of docs.slice(3)) index.add(d.seq, d.texts);
  await index.durable(6, hashOf(6));
  assert.deepEqual(index.shards().map((s) => [s.firstSeq, s.lastSeq]), [[1, 3], [4, 6]]);
  assert.deepEqual([...index.candidates('a')], naive(docs, 'a'));
  index.close();
});

const FIXTURE_TEXTS = ['Élan vital', 'ΣΊΣΥΦΟΣ and straße', 'İstanbul 😀', 'line\nbreak "quoted" back\\slash', 'alpha beta', 'gamma alpha', 'beta', 'the end'];

/** Copies the committed fixture folder `name` (test/fixtures/<name>) into `dir`; returns its file names. */
async function copyFixture(name, dir) {
  const { copyFileSync } = await import('node:fs');
  const fixtures = new URL(`../fixtures/${name}/`, import.meta.url);
  const files = readdirSync(fixtures).sort();
  for (const f of files) copyFileSync(new URL(f, fixtures), join(dir, f));
  return files;
}

test('shard files of format version 2 (committed fixture, key 07…07) still open and answer', async (t) => {
  // test/fixtures/ngram-v2 holds the two shards an index with shardDocsMax 4 and KEY wrote for
  // FIXTURE_TEXTS (seq i + 1, lastHash 'a…a' + seq in hex). A format change must keep reading
  // them or bump NGRAM_FORMAT_VERSION (then they are dropped and rebuilt from the log).
  const docs = FIXTURE_TEXTS.map((text, i) => ({ seq: i + 1, texts: [text.toLowerCase()] }));
  const dir = tempDir(t);
  await copyFixture('ngram-v2', dir);
  const { index, drops } = reopenWithDrops(dir);
  assert.deepEqual(drops, []);
  assert.deepEqual(index.shards().map((s) => [s.firstSeq, s.lastSeq, s.docs, s.lastHash.slice(-2)]), [[1, 4, 4, 'a4'], [5, 8, 4, 'a8']]);
  for (const lq of ['a', 'ß', 'i̇', '😀', '\n', 'σ', 'alpha', 'ΣΊΣ'.toLowerCase(), 'nope']) {
    const got = [...index.candidates(lq)];
    if (lq.length <= 2) assert.deepEqual(got, naive(docs, lq), lq);
    else assert.ok(includesAll(got, naive(docs, lq)), lq);
  }
  assert.deepEqual([...index.candidates('alpha')], [6, 5]);
  index.close();
});

test('shard files of format version 1 (committed fixture, no MAC) are dropped, so the index rebuilds them from the log', async (t) => {
  const dir = tempDir(t);
  const files = await copyFixture('ngram-v1', dir);
  const { index, drops } = reopenWithDrops(dir);
  assert.deepEqual(drops.map((d) => d.file), files.map((f) => join(dir, f)));
  assert.match(drops[0].reason, /format version 1, expected 2/);
  assert.deepEqual(shardFiles(dir), []);
  assert.equal(index.throughSeq, 0);
  index.close();
});

test('a shard file opened under another key is dropped (it was not written with this folder\'s key)', async (t) => {
  const dir = tempDir(t);
  await copyFixture('ngram-v2', dir);
  const drops = [];
  const index = NgramIndex.open(dir, { key: Buffer.alloc(32, 8), shardDocsMax: 4, onDrop: (file, reason) => drops.push(reason) });
  assert.equal(drops.length, 2);
  assert.match(drops[0], /fails its authentication/);
  assert.equal(index.throughSeq, 0);
  index.close();
  assert.throws(() => NgramIndex.open(dir, { shardDocsMax: 4 }), RangeError, 'a key is required');
});

test('postings removed with every CRC recomputed (an edit made without the key) are caught by the MAC at open', async (t) => {
  const dir = tempDir(t);
  const files = await copyFixture('ngram-v2', dir);
  const path = join(dir, files[1]);
  // Zero each bitmap posting list and recompute each entry CRC, each block CRC in the sample,
  // metaCrc and headerCrc: every CRC passes, only the MAC can tell.
  writeFileSync(path, withPostingsRemoved(readFileSync(path)));
  const { index, drops } = reopenWithDrops(dir);
  assert.deepEqual(drops.map((d) => d.file), [path]);
  assert.match(drops[0].reason, /fails its authentication/);
  assert.equal(index.throughSeq, 4, 'the shard before it is kept; the rest is added again from the log');
  index.close();
});
