/**
 * The Merkle tree and checkpoints of issue 53 (src/tlog/merkle.ts, src/store/merkle-tree.ts,
 * src/tlog/note.ts) against an independent implementation written here from RFC 9162 §2 (MTH,
 * PATH, SUBPROOF as recursive definitions over a list of leaves) and the C2SP signed-note rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consistencyProof, inclusionProof, leafHash, rootHash, verifyConsistency, verifyInclusion, EMPTY_ROOT } from '../../dist/tlog/merkle.js';
import { MerkleTree } from '../../dist/store/merkle-tree.js';
import { Log } from '../../dist/store/log.js';
import { checkpointBody, noteKeyId, signCheckpoint, verifyCheckpoint } from '../../dist/tlog/note.js';

// ---- The independent implementation (RFC 9162 §2.1, recursive over the leaf list) ----
const sha = (...parts) => createHash('sha256').update(Buffer.concat(parts)).digest();
const refLeaf = (entry) => sha(Buffer.from([0]), entry);
const refNode = (l, r) => sha(Buffer.from([1]), l, r);
const k2 = (n) => { let k = 1; while (k << 1 < n) k <<= 1; return k; };
function mth(d) {
  if (d.length === 0) return sha();
  if (d.length === 1) return refLeaf(d[0]);
  const k = k2(d.length);
  return refNode(mth(d.slice(0, k)), mth(d.slice(k)));
}
function path(m, d) {
  if (d.length <= 1) return [];
  const k = k2(d.length);
  return m < k ? [...path(m, d.slice(0, k)), mth(d.slice(k))] : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
}
function subproof(m, d, b) {
  if (m === d.length) return b ? [] : [mth(d)];
  const k = k2(d.length);
  return m <= k ? [...subproof(m, d.slice(0, k), b), mth(d.slice(k))] : [...subproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
}

const entries = (n) => Array.from({ length: n }, (_, i) => createHash('sha256').update(`record ${i + 1}`).digest());

/** The server's SubtreeSource over a list, computed by its own rangeHash (no shortcut). */
function listSource(d) {
  const leaves = d.map((e) => leafHash(e));
  const agg = (start, size) => (size === 1 ? leaves[start] : refNode(agg(start, size / 2), agg(start + size / 2, size / 2)));
  return { aligned: agg };
}

test('the empty tree and a leaf hash are the RFC 9162 / CT test vectors', () => {
  assert.equal(EMPTY_ROOT.toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  // SHA-256(0x00): the leaf hash of an empty entry (certificate-transparency-go's test vector).
  assert.equal(leafHash(Buffer.alloc(0)).toString('hex'), '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d');
});

test('roots, inclusion and consistency proofs equal the recursive RFC 9162 definitions for every size up to 40', () => {
  const d = entries(40);
  const src = listSource(d);
  for (let n = 1; n <= 40; n++) {
    const root = mth(d.slice(0, n));
    assert.deepEqual(rootHash(src, n), root, `root of ${n}`);
    for (let m = 0; m < n; m++) {
      const p = inclusionProof(src, m, n);
      assert.deepEqual(p, path(m, d.slice(0, n)), `PATH(${m}, ${n})`);
      assert.ok(verifyInclusion(refLeaf(d[m]), m, n, p, root), `verifies PATH(${m}, ${n})`);
      if (n > 1) assert.equal(verifyInclusion(refLeaf(d[(m + 1) % n]), m, n, p, root), false, `another leaf fails at ${m}, ${n}`);
    }
    for (let m = 1; m <= n; m++) {
      const p = consistencyProof(src, m, n);
      assert.deepEqual(p, subproof(m, d.slice(0, n), true), `SUBPROOF(${m}, ${n})`);
      assert.ok(verifyConsistency(m, n, mth(d.slice(0, m)), root, p), `verifies consistency ${m} → ${n}`);
      if (m < n) {
        const other = [...d.slice(0, m - 1), Buffer.alloc(32, 9), ...d.slice(m, n)];
        assert.equal(verifyConsistency(m, n, mth(d.slice(0, m)), mth(other), p), false, `a rewritten tree fails ${m} → ${n}`);
      }
    }
  }
});

test('a tampered proof hash, a wrong index or a wrong size fails verification', () => {
  const d = entries(13);
  const src = listSource(d);
  const root = mth(d);
  const p = inclusionProof(src, 5, 13);
  for (let i = 0; i < p.length; i++) {
    const bad = p.map((h, j) => (j === i ? Buffer.from(h.map((b, x) => (x === 0 ? b ^ 1 : b))) : h));
    assert.equal(verifyInclusion(refLeaf(d[5]), 5, 13, bad, root), false, `path[${i}] flipped`);
  }
  assert.equal(verifyInclusion(refLeaf(d[5]), 4, 13, p, root), false);
  assert.equal(verifyInclusion(refLeaf(d[5]), 5, 6, p, root), false);
  assert.equal(verifyInclusion(refLeaf(d[5]), 13, 13, p, root), false);
  assert.equal(verifyInclusion(refLeaf(d[5]), 5, 13, p.slice(1), root), false);
  const c = consistencyProof(src, 6, 13);
  assert.equal(verifyConsistency(6, 13, mth(d.slice(0, 6)), root, c.slice(0, -1)), false);
  assert.equal(verifyConsistency(7, 13, mth(d.slice(0, 6)), root, c), false);
});

test('the stored tree (chunks on disk, nodes above them in RAM) answers as the definitions across chunk borders', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'merkle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tree = new MerkleTree(dir, { durableSeq: 0, readLines: async () => null });
  t.after(() => tree.close());
  const n = 1100; // four complete chunks of 256 and an unfinished one
  const d = entries(n);
  for (const e of d) tree.appendEntry(e);
  assert.equal(tree.size, n);
  for (const size of [1, 2, 255, 256, 257, 511, 512, 513, 1024, 1025, 1099, 1100]) {
    const part = d.slice(0, size);
    assert.deepEqual(rootHash(tree, size), mth(part), `root of ${size}`);
    for (const m of [0, 1, 254, 255, 256, size - 1].filter((x) => x >= 0 && x < size)) {
      assert.deepEqual(inclusionProof(tree, m, size), path(m, part), `PATH(${m}, ${size})`);
    }
  }
  for (const [m, size] of [[1, 1100], [256, 1100], [300, 1025], [1024, 1100], [1099, 1100], [700, 700]]) {
    assert.deepEqual(consistencyProof(tree, m, size), subproof(m, d.slice(0, size), true), `SUBPROOF(${m}, ${size})`);
  }
});

test('a checkpoint note is the C2SP text, its key id SHA-256(name || 0x0A || 0x01 || key)[:4], and a changed byte is refused', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url');
  const origin = 'agent-forum/test';
  const root = Buffer.alloc(32, 7);
  const note = signCheckpoint({ origin, size: 42, root }, (data) => sign(null, data, privateKey), raw);
  const body = `${origin}\n42\n${root.toString('base64')}\n`;
  assert.equal(checkpointBody({ origin, size: 42, root }), body);
  const keyId = createHash('sha256').update(Buffer.concat([Buffer.from(`${origin}\n`), Buffer.from([1]), raw])).digest().subarray(0, 4);
  assert.deepEqual(noteKeyId(origin, raw), keyId);
  const sig = Buffer.concat([keyId, sign(null, Buffer.from(body), privateKey)]).toString('base64');
  assert.equal(note, `${body}\n\u2014 ${origin} ${sig}\n`);
  const key = { raw, name: null };
  assert.equal(verifyCheckpoint(note, key).size, 42);
  assert.throws(() => verifyCheckpoint(note.replace('\n42\n', '\n43\n'), key), /does not verify/);
  const other = Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x, 'base64url');
  assert.throws(() => verifyCheckpoint(note, { raw: other, name: null }), /no signature by key/);
});

test('the tree fed the hashes of live appends (and proven appends) equals the tree rebuilt from the log at the next start, across segment roll-overs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'merkle-live-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const opts = { segmentBytesMax: 4096, replayWorkers: 0 };
  const log = await Log.open(dir, () => undefined, opts);
  let time = Date.parse('2026-01-01T00:00:00Z');
  // Every fifth record goes the way a replica's lines do: encoded, then appended as proven (Log#appendProven).
  const write = async (count) => {
    for (let i = 0; i < count; i++) {
      const payload = { text: `note ${log.headSeq + 1} ${'x'.repeat((log.headSeq * 7) % 90)}` };
      if (log.headSeq % 5 === 4) {
        const { record, payloadJson, line, hash } = log.encodeNext('test.note', payload, time++);
        log.appendProven(line, record, payloadJson, hash);
      } else log.append('test.note', payload, time++);
    }
    await log.sync();
  };
  await write(40); // before the tree starts: it reads these back from the log
  // The tree sees the log through a source that records every read-back.
  const reads = [];
  const source = { get durableSeq() { return log.durableSeq; }, readLines: (from, to, max) => { reads.push(from); return log.readLines(from, to, max); } };
  mkdirSync(join(dir, 'live'));
  const live = new MerkleTree(join(dir, 'live'), source);
  t.after(() => live.close());
  void live.catchUp();
  const firstFed = log.durableSeq + 1;
  log.onDurableHashes = (first, hashes) => live.feed(first, hashes);
  // Group commits of 1 to 37 records (several per turn), 700 records, chunks of 256 leaves completed on the way.
  for (let b = 0; log.headSeq < 740; b++) await write(1 + ((b * 13) % 37));
  const n = log.durableSeq;
  await live.waitFor(n, 10_000);
  assert.equal(live.size, n);
  assert.ok(reads.every((from) => from < firstFed), `the live records were taken from memory, not read back (reads from ${reads.join(', ')})`);
  assert.ok(readdirSync(join(dir, 'log')).filter((f) => f.endsWith('.jsonl')).length >= 10, 'the records span many segments');
  const entriesOf = Array.from({ length: n }, (_, i) => Buffer.from(log.records.storedHashOf(i + 1), 'hex'));
  await log.close();

  // The next start: a new log instance and a tree rebuilt from the segments alone.
  const reopened = await Log.open(dir, () => undefined, opts);
  t.after(() => reopened.close());
  mkdirSync(join(dir, 'rebuilt'));
  const rebuilt = new MerkleTree(join(dir, 'rebuilt'), reopened);
  t.after(() => rebuilt.close());
  await rebuilt.waitFor(n, 10_000);
  assert.equal(rebuilt.size, n);
  for (let size = 1; size <= n; size++) assert.deepEqual(rootHash(live, size), rootHash(rebuilt, size), `root of ${size}`);
  assert.deepEqual(rootHash(live, n), mth(entriesOf), 'the root of the whole log is the RFC 9162 root of its chained hashes');
  for (const m of [0, 39, 40, 41, 255, 256, 511, 600, n - 1]) assert.deepEqual(inclusionProof(live, m, n), inclusionProof(rebuilt, m, n), `PATH(${m}, ${n})`);
  for (const m of [1, 40, 41, 256, 257, 700]) assert.deepEqual(consistencyProof(live, m, n), consistencyProof(rebuilt, m, n), `SUBPROOF(${m}, ${n})`);
});

test('the rebuild from the log still stops at a record whose hash field the chain refutes, and keeps a record whose text alone is damaged', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'merkle-damage-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const log = await Log.open(dir, () => undefined, { segmentBytesMax: 4096, replayWorkers: 0 });
  t.after(() => log.close());
  for (let i = 0; i < 60; i++) log.append('test.note', { text: `note ${i}` }, Date.parse('2026-01-01T00:00:00Z') + i);
  await log.sync();
  const n = log.durableSeq;
  // A source that hands the tree record `seq`'s line with one byte changed at `at` (counted from the line's end when negative).
  const damaged = (seq, at) => ({
    get durableSeq() { return log.durableSeq; },
    readLines: async (from, to, max) => {
      const run = await log.readLines(from, to, max);
      if (run === null || seq < run.firstSeq || seq > run.lastSeq) return run;
      const bytes = Buffer.from(run.bytes);
      let start = 0;
      for (let s = run.firstSeq; s < seq; s++) start = bytes.indexOf(0x0a, start) + 1;
      const end = bytes.indexOf(0x0a, start);
      const i = at < 0 ? end + at : start + at;
      bytes[i] = bytes[i] === 0x30 ? 0x31 : 0x30;
      return { ...run, bytes };
    },
  });
  const treeOver = (name, source) => {
    mkdirSync(join(dir, name));
    const tree = new MerkleTree(join(dir, name), source);
    t.after(() => tree.close());
    return tree;
  };
  const good = treeOver('good', log);
  await good.waitFor(n, 10_000);

  // A changed hex digit of record 30's hash field: the next line does not link to it.
  const refuted = treeOver('refuted', damaged(30, -3));
  await assert.rejects(refuted.waitFor(n, 10_000), (err) => err.name === 'RecordDamagedError' && err.seq === 30);
  assert.equal(refuted.size, 29, 'the tree stops before the record');

  // A changed byte of record 30's text: its own check fails, the next line confirms its hash field.
  const text = treeOver('text', damaged(30, 15));
  await text.waitFor(n, 10_000);
  assert.deepEqual(rootHash(text, n), rootHash(good, n));
});
