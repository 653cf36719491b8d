/**
 * Signed checkpoints and proofs, black box (issue 53; docs/api/checkpoints.md): the running
 * server's checkpoints and proofs checked by an independent RFC 9162 / C2SP implementation written
 * here (not the server's code), erasure keeping the tree, the export refused offline for each
 * tampered field and proof hash, and verify-consistency (the CLI and the JS helper's
 * verifyConsistency) between two checkpoints.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { verifyExportPages } from '../../dist/tlog/verify.js';
import { verifyConsistency, verifyExportOffline } from '../../src/api/docs/client/forum-client.mjs';

// ---- Independent implementation (RFC 9162 §2.1, C2SP signed-note) ----
const sha = (...parts) => createHash('sha256').update(Buffer.concat(parts)).digest();
const node = (l, r) => sha(Buffer.from([1]), l, r);
const k2 = (n) => { let k = 1; while (k * 2 < n) k *= 2; return k; };
const b64 = (list) => list.map((h) => Buffer.from(h, 'base64'));
/** The root from a leaf hash and its audit path, following PATH's recursion (path listed leaf-up). */
function rootFromPath(leaf, m, n, path) {
  const rec = (m, n, p) => {
    if (n === 1) { assert.equal(p.length, 0, 'the audit path is longer than the tree is deep'); return leaf; }
    const k = k2(n);
    const sibling = p[p.length - 1];
    assert.ok(sibling, 'the audit path is too short');
    return m < k ? node(rec(m, k, p.slice(0, -1)), sibling) : node(sibling, rec(m - k, n - k, p.slice(0, -1)));
  };
  return rec(m, n, path);
}
function mth(leaves) {
  if (leaves.length === 1) return leaves[0];
  const k = k2(leaves.length);
  return node(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}
function subproof(m, d, b) {
  if (m === d.length) return b ? [] : [mth(d)];
  const k = k2(d.length);
  return m <= k ? [...subproof(m, d.slice(0, k), b), mth(d.slice(k))] : [...subproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
}
/** Checks a C2SP checkpoint note's Ed25519 signature with the key from /api/status; returns {origin, size, root}. */
function openNote(note, keyText) {
  const raw = Buffer.from(keyText.slice('ed25519:'.length), 'base64url');
  const [body, sigs] = [note.slice(0, note.lastIndexOf('\n\n') + 1), note.slice(note.lastIndexOf('\n\n') + 2)];
  const [origin, size, root] = body.split('\n');
  const m = /^\u2014 (\S+) (\S+)\n$/.exec(sigs);
  assert.ok(m, 'one signature line');
  assert.equal(m[1], origin, 'the key name is the origin');
  const sig = Buffer.from(m[2], 'base64');
  assert.deepEqual(sig.subarray(0, 4), sha(Buffer.from(`${origin}\n`), Buffer.from([1]), raw).subarray(0, 4), 'key id');
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  assert.ok(verify(null, Buffer.from(body), key, sig.subarray(4)), 'Ed25519 signature over the body');
  return { origin, size: Number(size), root: Buffer.from(root, 'base64') };
}

async function seed(s, n) {
  const a = await s.register('prover');
  const topic = await ok(s.post('/api/topics', { title: 'proofs' }, a.token), 201);
  const messages = [];
  for (let i = 0; i < n; i++) messages.push(await ok(s.post('/api/messages', { topicId: topic.id, content: `proof ${i}`, clientId: `p${i}` }, a.token), 201));
  return { a, topic, messages };
}

test('checkpoints and inclusion and consistency proofs from the server verify with an independent implementation', async (t) => {
  const s = await startServer(t, { env: { FORUM_TEST_CLOCK: '1' } });
  const { a } = await seed(s, 6);
  const status = await ok(s.get('/api/status'));
  assert.match(status.checkpointKey, /^ed25519:[A-Za-z0-9_-]{43}$/);
  assert.equal(statSync(join(s.dataDir, 'checkpoint-key.pem')).mode & 0o777, 0o600, 'the key file is 0600');
  const cp = await ok(s.get('/api/checkpoint'));
  assert.equal(cp.key, status.checkpointKey);
  const old = openNote(cp.note, status.checkpointKey);
  assert.equal(old.size, cp.size);
  // Every leaf hash, each proven against the newer checkpoint; then both roots and the consistency proof recomputed.
  const more = await seed(s, 5);
  // Cadence: fewer than CHECKPOINT_INTERVAL_RECORDS new records and (on the test clock) 10 s later, a new checkpoint.
  await s.cli('clock', 'advance', '--ms', '10000');
  const n = Number(more.messages.at(-1).id.split('_')[1]); // ids carry their record's seq
  assert.equal((await ok(s.get('/api/checkpoint'))).size, n, 'a new checkpoint once the interval passed');
  const latest = await ok(s.get(`/api/proofs/inclusion?seq=1`, a.token));
  assert.equal(latest.treeSize, n, 'proofs default to the latest checkpoint');
  const top = openNote(latest.checkpoint, status.checkpointKey);
  const leaves = [];
  for (let seq = 1; seq <= n; seq++) {
    const p = await ok(s.get(`/api/proofs/inclusion?seq=${seq}&size=${n}`, a.token));
    assert.equal(p.leafIndex, seq - 1);
    const leaf = Buffer.from(p.leafHash, 'base64');
    assert.deepEqual(rootFromPath(leaf, seq - 1, n, b64(p.proof)), top.root, `record ${seq} is included`);
    leaves.push(leaf);
  }
  assert.deepEqual(mth(leaves), top.root, 'the root of every leaf');
  assert.deepEqual(mth(leaves.slice(0, old.size)), old.root, 'the older checkpoint is the root of its prefix');
  const c = await ok(s.get(`/api/proofs/consistency?from=${old.size}&to=${n}`, a.token));
  assert.deepEqual(b64(c.proof), subproof(old.size, leaves, true), 'the consistency proof is SUBPROOF');
  // The key and the tree survive a restart: the same size signs the same root with the same key.
  await s.restart();
  assert.equal((await ok(s.get('/api/status'))).checkpointKey, status.checkpointKey);
  const again = await ok(s.get(`/api/proofs/inclusion?seq=2&size=${n}`, a.token));
  assert.deepEqual(openNote(again.checkpoint, status.checkpointKey).root, top.root);
  // A backup carries the key (0600) with the folder.
  const dir = tempDir(t);
  const backup = await s.cli('backup', join(dir, 'backup'));
  assert.equal(backup.code, 0, backup.stderr);
  assert.equal(readFileSync(join(dir, 'backup', 'checkpoint-key.pem'), 'utf8'), readFileSync(join(s.dataDir, 'checkpoint-key.pem'), 'utf8'));
  assert.equal(statSync(join(dir, 'backup', 'checkpoint-key.pem')).mode & 0o777, 0o600);
  // Offline, with the CLI: the consistency of the two checkpoints, and a rewritten history refused.
  writeFileSync(join(dir, 'old.txt'), cp.note);
  writeFileSync(join(dir, 'new.json'), JSON.stringify(c));
  const good = await cli(['verify-consistency', join(dir, 'old.txt'), join(dir, 'new.json'), '--key', status.checkpointKey]);
  assert.equal(good.code, 0, good.stderr);
  assert.deepEqual(good.json, { verified: true, origin: top.origin, from: old.size, to: n });
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...c, proof: [...c.proof.slice(0, -1), Buffer.alloc(32, 1).toString('base64')] }));
  const bad = await cli(['verify-consistency', join(dir, 'old.txt'), join(dir, 'bad.json'), '--key', status.checkpointKey]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /consistency proof does not show/);
  // Bad queries name the rule.
  const over = await s.get(`/api/proofs/inclusion?seq=${n + 1}&size=${n}`, a.token);
  assert.equal(over.status, 400);
  assert.match(over.body.error, /"seq".*at most "size"/);
});

test('an erased record keeps its leaf: the checkpoint of the same size is unchanged after erasure', async (t) => {
  const s = await startServer(t);
  const { a, messages } = await seed(s, 3);
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const status = await ok(s.get('/api/status'));
  const before = await ok(s.get('/api/proofs/inclusion?seq=1', a.token));
  const size = before.treeSize;
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: messages[1].id }, reason: 'test' }, op.token), 201);
  const after = await ok(s.get(`/api/proofs/inclusion?seq=1&size=${size}`, a.token));
  assert.deepEqual(openNote(after.checkpoint, status.checkpointKey).root, openNote(before.checkpoint, status.checkpointKey).root);
  await s.restart(); // rebuilt from the log, whose line of the message is now a tombstone
  const rebuilt = await ok(s.get(`/api/proofs/inclusion?seq=1&size=${size}`, a.token));
  assert.deepEqual(openNote(rebuilt.checkpoint, status.checkpointKey).root, openNote(before.checkpoint, status.checkpointKey).root);
});

test('a topic export verifies offline (CLI and JS client helper), and every tampered field and proof hash is refused with its reason', async (t) => {
  const s = await startServer(t);
  const { a, topic, messages } = await seed(s, 4);
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: messages[3].id }, reason: 'test' }, op.token), 201);
  const key = (await ok(s.get('/api/status'))).checkpointKey;
  const page = await ok(s.get(`/api/exchange?topicId=${topic.id}`, a.token));
  assert.equal(openNote(page.checkpoint, key).size, page.cursor.through, 'the checkpoint covers the pinned export');
  const erased = page.records.find((r) => r.erased);
  assert.ok(erased && erased.proof.prevHash === undefined, 'an erased record proves inclusion only');
  // Independent check of one record: its text hashes to its entry, and the entry's leaf leads to the root.
  const r0 = page.records[1];
  const body = `{"payload":${r0.canonicalJson},"seq":${r0.seq},"time":"${r0.proof.time}","type":"${r0.proof.type}"}`;
  assert.equal(createHash('sha256').update(r0.proof.prevHash + body).digest('hex'), r0.proof.entry);
  const leaf = sha(Buffer.from([0]), Buffer.from(r0.proof.entry, 'hex'));
  assert.deepEqual(rootFromPath(leaf, r0.seq - 1, page.cursor.through, b64(r0.proof.path)), openNote(page.checkpoint, key).root);

  const summary = verifyExportPages([page], key);
  assert.deepEqual(summary, { origin: openNote(page.checkpoint, key).origin, treeSize: page.cursor.through, pages: 1, records: page.records.length, bound: page.records.length - 1, signed: 0, revokedKeys: [] });
  assert.deepEqual(await verifyExportOffline([page], key), summary, 'the JS client helper agrees, with no server');
  const dir = tempDir(t);
  writeFileSync(join(dir, 'export.json'), JSON.stringify(page));
  const good = await cli(['verify-export', join(dir, 'export.json'), '--key', key]);
  assert.equal(good.code, 0, good.stderr);
  assert.equal(good.json.verified, true);

  const flip = (h) => (h[0] === 'a' ? `b${h.slice(1)}` : `a${h.slice(1)}`);
  const flipB64 = (h) => { const b = Buffer.from(h, 'base64'); b[0] ^= 1; return b.toString('base64'); };
  const cases = [];
  const edit = (name, reason, f) => cases.push({ name, reason, f });
  edit('checkpoint size', /does not verify/, (p) => { p.checkpoint = p.checkpoint.replace(`\n${p.cursor.through}\n`, `\n${p.cursor.through + 1}\n`); });
  edit('checkpoint root', /does not verify/, (p) => { const l = p.checkpoint.split('\n'); l[2] = flipB64(l[2]); p.checkpoint = l.join('\n'); });
  edit('checkpoint signature', /does not verify/, (p) => { const i = p.checkpoint.lastIndexOf(' ') + 10; p.checkpoint = p.checkpoint.slice(0, i) + (p.checkpoint[i] === 'A' ? 'B' : 'A') + p.checkpoint.slice(i + 1); });
  edit('checkpoint removed', /carries no checkpoint/, (p) => { delete p.checkpoint; });
  edit('cursor.through', /pinned at through/, (p) => { p.cursor.through -= 1; });
  for (const [i, r] of page.records.entries()) {
    const at = (f) => (p) => f(p.records[i]);
    edit(`record ${r.seq} seq`, /inclusion proof|seq is not within|does not hash|appears twice/, at((x) => { x.seq = x.seq === 1 ? 2 : x.seq - 1; }));
    edit(`record ${r.seq} canonicalJson`, /sha256/, at((x) => { x.canonicalJson = `${x.canonicalJson} `; }));
    edit(`record ${r.seq} sha256`, /sha256/, at((x) => { x.sha256 = flip(x.sha256); }));
    edit(`record ${r.seq} proof.entry`, /inclusion proof/, at((x) => { x.proof.entry = flip(x.proof.entry); }));
    edit(`record ${r.seq} proof removed`, /carries no proof/, at((x) => { delete x.proof; }));
    r.proof.path.forEach((_, j) => edit(`record ${r.seq} proof.path[${j}]`, /inclusion proof/, at((x) => { x.proof.path[j] = flipB64(x.proof.path[j]); })));
    edit(`record ${r.seq} proof.path shortened`, /inclusion proof/, at((x) => { x.proof.path.pop(); }));
    if (r.proof.prevHash !== undefined) {
      edit(`record ${r.seq} proof.prevHash`, /does not hash to the proof's entry/, at((x) => { x.proof.prevHash = flip(x.proof.prevHash); }));
      edit(`record ${r.seq} proof.time`, /does not hash to the proof's entry/, at((x) => { x.proof.time = x.proof.time.replace(/(\d)Z$/, (_, d) => `${(Number(d) + 1) % 10}Z`); }));
      edit(`record ${r.seq} proof.type`, /is not a record type of kind/, at((x) => { x.proof.type = 'room.create'; }));
      edit(`record ${r.seq} text and checksum together`, /does not hash to the proof's entry/, at((x) => {
        x.canonicalJson = `${x.canonicalJson} `;
        x.sha256 = createHash('sha256').update(x.canonicalJson).digest('hex');
      }));
      edit(`record ${r.seq} binding dropped`, /does not bind its text/, at((x) => { delete x.proof.prevHash; }));
    }
  }
  for (const c of cases) {
    const copy = structuredClone(page);
    c.f(copy);
    assert.throws(() => verifyExportPages([copy], key), c.reason, `${c.name} is refused`);
    await assert.rejects(verifyExportOffline([copy], key), c.reason, `${c.name} is refused by the client helper`);
  }
  // The CLI refuses too, naming the record and the rule (exit 1).
  const tampered = structuredClone(page);
  tampered.records[1].proof.path[0] = flipB64(tampered.records[1].proof.path[0]);
  writeFileSync(join(dir, 'tampered.json'), JSON.stringify(tampered));
  const bad = await cli(['verify-export', join(dir, 'tampered.json'), '--key', key]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, new RegExp(`record ${tampered.records[1].seq}: the inclusion proof does not lead to the checkpoint's root`));
  // Another key is refused.
  const other = await cli(['verify-export', join(dir, 'export.json'), '--key', `ed25519:${Buffer.alloc(32, 3).toString('base64url')}`]);
  assert.equal(other.code, 1);
  assert.match(other.stderr, /no signature by key/);
});

test("the JS helper's verifyConsistency accepts the server's proof from every older size and refuses each changed hash, size and root with its reason", async (t) => {
  const s = await startServer(t);
  const { a } = await seed(s, 12);
  const key = (await ok(s.get('/api/status'))).checkpointKey;
  const c0 = await ok(s.get('/api/checkpoint'));
  const n = c0.size;
  assert.ok(n >= 13, 'a tree of a dozen records and more');
  /** The signed checkpoint note of size m (as an inclusion proof's answer carries it). */
  const noteOf = async (m) => (await ok(s.get(`/api/proofs/inclusion?seq=1&size=${m}`, a.token))).checkpoint;
  for (let m = 1; m <= n; m++) {
    const c = await ok(s.get(`/api/proofs/consistency?from=${m}&to=${n}`, a.token));
    assert.deepEqual(await verifyConsistency(await noteOf(m), c, c, key), { origin: c0.origin, from: m, to: n }, `the proof from ${m} to ${n} holds`);
  }
  const m = 5; // not a power of two: the proof carries the older tree's subtrees
  const old = await noteOf(m);
  const c = await ok(s.get(`/api/proofs/consistency?from=${m}&to=${n}`, a.token));
  assert.ok(c.proof.length >= 3);
  assert.deepEqual(await verifyConsistency({ note: old }, c.checkpoint, c.proof, key), { origin: c0.origin, from: m, to: n }, 'JSON with a note, a note text and the bare hash list');
  const flipB64 = (h) => { const b = Buffer.from(h, 'base64'); b[0] ^= 1; return b.toString('base64'); };
  const changedRoot = (note) => { const l = note.split('\n'); l[2] = flipB64(l[2]); return l.join('\n'); };
  const notProven = /: the consistency proof does not show the tree of \d+ records as a prefix of the tree of \d+: the log was rewritten, or the proof changed$/;
  const refused = async (name, args, reason) => assert.rejects(verifyConsistency(...args, key), reason, `${name}: refused with its reason`);
  for (let i = 0; i < c.proof.length; i++) {
    await refused(`proof hash ${i} changed`, [old, c, { ...c, proof: c.proof.map((h, j) => (j === i ? flipB64(h) : h)) }], notProven);
  }
  await refused('a proof hash dropped', [old, c, { ...c, proof: c.proof.slice(1) }], notProven);
  await refused('a proof hash added', [old, c, [...c.proof, c.proof[0]]], notProven);
  await refused('two proof hashes swapped', [old, c, [c.proof[1], c.proof[0], ...c.proof.slice(2)]], notProven);
  await refused("the proof's from", [old, c, { ...c, from: m + 1 }], /: the proof is from 6 to \d+, the checkpoints are 5 and \d+$/);
  await refused("the proof's to", [old, c, { ...c, to: n - 1 }], /: the proof is from 5 to \d+, the checkpoints are 5 and \d+$/);
  await refused('a proof hash that is not base64 of 32 bytes', [old, c, ['AAAA', ...c.proof.slice(1)]], /: the proof is not a list of base64 32-byte hashes$/);
  await refused("the kept checkpoint's root", [changedRoot(old), c, c], /: OLD: checkpoint: its signature does not verify with the given key/);
  await refused("the new checkpoint's root", [old, changedRoot(c.checkpoint), c], /: NEW: checkpoint: its signature does not verify with the given key/);
  await refused("the kept checkpoint's size", [old.replace(`\n${m}\n`, `\n${m + 1}\n`), c, c], /: OLD: checkpoint: its signature does not verify/);
  await refused('the checkpoints swapped', [c, old, c], /: OLD \(\d+ records\) is larger than NEW \(5\): swap them$/);
  await refused('no checkpoint', [{}, c, c], /: OLD: holds no checkpoint/);
  await assert.rejects(verifyConsistency(old, c, c, `ed25519:${Buffer.alloc(32, 3).toString('base64url')}`), /: OLD: checkpoint: it carries no signature by the given key/, 'checkpoints of another key');
  await assert.rejects(verifyConsistency(old, c, c, 'ed25519:short'), /: key: expected ed25519:/);

  // A forger holding a checkpoint key signs changed roots: the signatures hold, the proof does not.
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url');
  const forgerKey = `ed25519:${raw.toString('base64url')}`;
  const signNote = (note) => {
    const body = note.slice(0, note.lastIndexOf('\n\n') + 1);
    const origin = body.split('\n')[0];
    const keyId = sha(Buffer.from(`${origin}\n`), Buffer.from([1]), raw).subarray(0, 4);
    return `${body}\n\u2014 ${origin} ${Buffer.concat([keyId, sign(null, Buffer.from(body), privateKey)]).toString('base64')}\n`;
  };
  assert.deepEqual(await verifyConsistency(signNote(old), signNote(c.checkpoint), c, forgerKey), { origin: c0.origin, from: m, to: n }, 'the genuine roots re-signed still verify: each refusal below is the change');
  await assert.rejects(verifyConsistency(signNote(changedRoot(old)), signNote(c.checkpoint), c, forgerKey), notProven, 'a changed kept root, re-signed');
  await assert.rejects(verifyConsistency(signNote(old), signNote(changedRoot(c.checkpoint)), c, forgerKey), notProven, 'a changed new root, re-signed');
  await assert.rejects(verifyConsistency(signNote(old), signNote(changedRoot(old)), [], forgerKey), /: OLD and NEW both cover 5 records with different roots: the log was rewritten \(a fork\)$/, 'two roots for one size');
});
