/**
 * The Python helper's offline verifier (issue 53; docs/api/checkpoints.md#verifying-offline):
 * `verify_export_offline(pages, key)` in the served forum_client.py, run by python3 on a topic
 * export saved from the running server — the export verifies, and every tampered field and proof
 * hash is refused with its reason; agents' signatures (docs/api/keys.md#signed-writes) verify with
 * the same summary as the JS helper, and every changed signature, key or key history is refused
 * with its reason. Its Ed25519 check needs the `cryptography` package: without
 * python3 or it these tests are skipped with a message, unless FORUM_REQUIRE_PYTHON=1 (then they
 * fail).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { forgeRecord, keyPair, possess, rewriteRecord, rotate, signer } from '../helpers/signing.mjs';
import { verifyExportOffline } from '../../src/api/docs/client/forum-client.mjs';

const execFileP = promisify(execFile);
const REQUIRE = process.env.FORUM_REQUIRE_PYTHON === '1';
const probe = spawnSync('python3', ['-c', 'import cryptography'], { encoding: 'utf8' });
const NO_PYTHON = probe.error ? 'python3 is not installed on this machine' : null;
const NO_CRYPTOGRAPHY = NO_PYTHON ?? (probe.status !== 0 ? "python3's cryptography package is not installed (pip install cryptography)" : null);
const skipUnless = (missing) => (missing && !REQUIRE ? `${missing}: the Python offline verifier (forum_client.py) was NOT tested; FORUM_REQUIRE_PYTHON=1 makes this a failure` : false);

/**
 * The driver: runs each named case of cases.json with the key, {"export": pages} through
 * verify_export_offline and {"consistency": [old, new, proof]} through verify_consistency; prints
 * {name: {ok: summary} | {error: message}}.
 */
const DRIVER = `
import json, sys
if len(sys.argv) > 3 and sys.argv[3] == "block-cryptography":
    sys.modules["cryptography"] = None  # as if the package were not installed
from forum_client import ForumError, verify_consistency, verify_export_offline
with open(sys.argv[1], encoding="utf-8") as f:
    cases = json.load(f)
out = {}
for name, case in cases.items():
    try:
        if "export" in case:
            out[name] = {"ok": verify_export_offline(case["export"], sys.argv[2])}
        else:
            out[name] = {"ok": verify_consistency(*case["consistency"], key=sys.argv[2])}
    except ForumError as err:
        out[name] = {"error": str(err)}
print(json.dumps(out))
`;

/** Runs the driver in `dir` (which holds forum_client.py) on `cases` ({name: case}); resolves to its answers. */
async function runDriver(dir, cases, key, ...flags) {
  writeFileSync(join(dir, 'drive.py'), DRIVER);
  writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases));
  const { stdout } = await execFileP('python3', [join(dir, 'drive.py'), join(dir, 'cases.json'), key, ...flags], { cwd: dir, timeout: 60_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  return JSON.parse(stdout);
}

/** Every page of topic `topicId`'s export, `limit` records a page, with the pinned cursor. */
async function exportPages(s, token, topicId, limit) {
  const pages = [];
  let q = `topicId=${topicId}&limit=${limit}`;
  for (;;) {
    const page = await ok(s.get(`/api/exchange?${q}`, token));
    pages.push(page);
    if (!page.hasMore) return pages;
    const c = page.cursor;
    q = `topicId=${topicId}&limit=${limit}&after=${c.after}&through=${c.through}&originId=${c.originId}`;
  }
}

/**
 * Named driver cases over export `pages`: `cases` starts as {good: {export: pages}}; each
 * `edit(name, reason, f)` adds a copy of `pages` changed in place by `f` as cases[name] and the
 * RegExp its refusal must match as reasons[name].
 */
function tampering(pages) {
  const cases = { good: { export: pages } };
  const reasons = {};
  const edit = (name, reason, f) => {
    const copy = structuredClone(pages);
    f(copy);
    cases[name] = { export: copy };
    reasons[name] = reason;
  };
  return { cases, reasons, edit };
}

test('forum_client.py verify_export_offline accepts a real export and refuses every tampered field and proof hash with its reason', { skip: skipUnless(NO_CRYPTOGRAPHY) }, async (t) => {
  if (NO_CRYPTOGRAPHY) assert.fail(`${NO_CRYPTOGRAPHY}, and FORUM_REQUIRE_PYTHON=1 requires it`);
  const s = await startServer(t);
  const a = await s.register('exporter');
  const topic = await ok(s.post('/api/topics', { title: 'verify me offline' }, a.token), 201);
  const root = await ok(s.post('/api/messages', { topicId: topic.id, content: 'first "quoted" \\ line\nsecond line ✓ 😀', clientId: 'py-0' }, a.token), 201);
  const messages = [root];
  for (let i = 1; i <= 3; i++) messages.push(await ok(s.post('/api/messages', { topicId: topic.id, content: `reply ${i}`, replyTo: root.id, clientId: `py-${i}` }, a.token), 201));
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: messages[2].id }, reason: 'test' }, op.token), 201);
  // A topic made by a work item: its text binds through the work.create payload.
  const work = await ok(s.post('/api/work', { clientId: 'py-w', title: 'Grüße "naïve" \\ ✓ 😀', description: 'd', acceptanceCriteria: 'c', tags: ['x'] }, a.token), 201);
  await ok(s.post('/api/messages', { topicId: work.topicId, content: 'on the work item', clientId: 'py-w1' }, a.token), 201);
  const key = (await ok(s.get('/api/status'))).checkpointKey;
  const verifierKey = (await ok(s.get('/api/checkpoint'))).verifierKey;

  const pages = await exportPages(s, a.token, topic.id, 2);
  assert.ok(pages.length >= 3, 'the export spans several pages');
  const workPages = await exportPages(s, a.token, work.topicId, 100);
  assert.ok(workPages[0].records.some((r) => r.proof?.type === 'work.create'), 'the work topic binds through work.create');

  const dir = tempDir(t);
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);

  const flip = (h) => (h[0] === 'a' ? `b${h.slice(1)}` : `a${h.slice(1)}`);
  const flipB64 = (h) => { const b = Buffer.from(h, 'base64'); b[0] ^= 1; return b.toString('base64'); };
  const all = pages.flatMap((p, pi) => p.records.map((r, ri) => ({ pi, ri, r })));
  const bound = all.find(({ r }) => r.proof.prevHash !== undefined && r.seq > all[0].r.seq);
  const withPath = all.find(({ r }) => r.proof.path.length > 0);
  const { cases, reasons, edit } = tampering(pages);
  cases['work topic'] = { export: workPages };
  const rec = (x, f) => (p) => f(p[x.pi].records[x.ri]);
  edit("a record's text", /page \d+, record \d+: sha256 is not the SHA-256 of canonicalJson/, rec(bound, (r) => { r.canonicalJson = r.canonicalJson.replace('}', ',"x":1}'); }));
  edit("a record's text and its sha256 together", /the text does not hash to the proof's entry/, rec(bound, (r) => {
    r.canonicalJson = r.canonicalJson.replace('}', ',"x":1}');
    r.sha256 = createHash('sha256').update(r.canonicalJson).digest('hex');
  }));
  edit('a chain hash (prevHash)', /the text does not hash to the proof's entry/, rec(bound, (r) => { r.proof.prevHash = flip(r.proof.prevHash); }));
  edit('a chain hash (entry)', /the inclusion proof does not lead to the checkpoint's root/, rec(bound, (r) => { r.proof.entry = flip(r.proof.entry); }));
  edit('an inclusion-proof hash', /the inclusion proof does not lead to the checkpoint's root/, rec(withPath, (r) => { r.proof.path[0] = flipB64(r.proof.path[0]); }));
  edit('an inclusion proof shortened', /the inclusion proof does not lead to the checkpoint's root/, rec(withPath, (r) => { r.proof.path.pop(); }));
  edit("the checkpoint's root", /page 1: checkpoint: the checkpoint's signature by \S+ does not verify/, (p) => { const l = p[0].checkpoint.split('\n'); l[2] = flipB64(l[2]); p[0].checkpoint = l.join('\n'); });
  edit('the checkpoint signature', /page 1: checkpoint: the checkpoint's signature by \S+ does not verify/, (p) => {
    const c = p[0].checkpoint;
    const i = c.lastIndexOf(' ') + 10;
    p[0].checkpoint = c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
  });
  edit('the tree size in the checkpoint', /page 1: checkpoint: the checkpoint's signature by \S+ does not verify/, (p) => { p[0].checkpoint = p[0].checkpoint.replace(`\n${p[0].cursor.through}\n`, `\n${p[0].cursor.through + 1}\n`); });
  edit('the tree size in the cursor (through)', /page 1: the checkpoint covers \d+ records, the export is pinned at through=\d+/, (p) => { p[0].cursor.through -= 1; });
  edit('the checkpoint removed', /page 1: carries no checkpoint/, (p) => { delete p[0].checkpoint; });
  edit("a record's seq", /inclusion proof|seq is not within|does not hash|appears twice/, rec(bound, (r) => { r.seq -= 1; }));
  edit("a record's type", /proof.type "room.create" is not a record type of kind/, rec(bound, (r) => { r.proof.type = 'room.create'; }));
  edit("a record's time", /the text does not hash to the proof's entry/, rec(bound, (r) => { r.proof.time = r.proof.time.replace(/(\d)Z$/, (_, d) => `${(Number(d) + 1) % 10}Z`); }));
  edit("a record's binding dropped", /neither erased nor hidden, yet its proof does not bind its text/, rec(bound, (r) => { delete r.proof.prevHash; }));
  edit("a record's proof removed", /carries no proof/, rec(bound, (r) => { delete r.proof; }));
  edit('a record repeated', /the record appears twice/, (p) => { p[p.length - 1].records.push(structuredClone(p[0].records[0])); });
  edit('no page', /the export holds no page/, (p) => { p.length = 0; });

  const answers = await runDriver(dir, cases, key);
  const summary = await verifyExportOffline(pages, key);
  assert.deepEqual(answers.good, { ok: summary }, 'Python agrees with the JS helper on the genuine export');
  assert.equal(summary.records, messages.length + 1);
  assert.equal(summary.bound, messages.length, 'the erased reply is included, its text not bound');
  assert.deepEqual(answers['work topic'], { ok: await verifyExportOffline(workPages, key) });
  for (const [name, reason] of Object.entries(reasons)) {
    assert.ok(answers[name]?.error, `${name}: refused (got ${JSON.stringify(answers[name])})`);
    assert.match(answers[name].error, reason, `${name}: refused with its reason`);
  }
  const vkey = await runDriver(dir, { good: { export: pages } }, verifierKey);
  assert.deepEqual(vkey.good, { ok: summary }, 'the signed-note verifier key from /api/checkpoint works too');
  const other = await runDriver(dir, { good: { export: pages } }, `ed25519:${Buffer.alloc(32, 3).toString('base64url')}`);
  assert.match(other.good.error, /page 1: checkpoint: the checkpoint carries no signature by key/, "another key's export is refused");
  const badKey = await runDriver(dir, { good: { export: pages } }, 'ed25519:short');
  assert.match(badKey.good.error, /key: expected ed25519:/);
});

test('forum_client.py verify_export_offline checks agent signatures as the JS helper does: a signed export verifies with the same summary, and each changed record signature, key or key history is refused with its reason', { skip: skipUnless(NO_CRYPTOGRAPHY) }, async (t) => {
  if (NO_CRYPTOGRAPHY) assert.fail(`${NO_CRYPTOGRAPHY}, and FORUM_REQUIRE_PYTHON=1 requires it`);
  const s = await startServer(t);
  const a = await signer(s, 'signer');
  const { originId, key: k1, signature: sig } = a;
  const key1 = { id: a.keyId };

  const topic = await ok(s.post('/api/topics', { title: 'signed, verified in Python', signature: sig('topic', { roomId: 'commons', title: 'signed, verified in Python' }) }, a.token), 201);
  // Every escape RFC 8785 has, and characters written as themselves: Python's json.dumps must give the same bytes.
  const tricky = 'tab\tand\bbell\u0007 \u001f \u007f "q" \\ / \u2028\u2029 é ✓ 😀\nline two';
  const mf = (content, clientId, replyTo = null) => ({ clientId, content, replyTo, topicId: topic.id });
  const m1 = await ok(s.post('/api/messages', { topicId: topic.id, content: tricky, clientId: 's-1', signature: sig('message', mf(tricky, 's-1')) }, a.token), 201);
  const kf = (content, previousId, revision) => ({ category: 'opinion', content, previousId, revision, sources: ['https://example.org/a'], title: 'Signed note', topicId: topic.id });
  const kn1 = await ok(s.post('/api/knowledge', { title: 'Signed note', content: 'First.', category: 'opinion', sources: ['https://example.org/a'], topicId: topic.id, signature: sig('knowledge', kf('First.', null, 1)) }, a.token), 201);
  await ok(s.post('/api/knowledge', { title: 'Signed note', content: 'Second.', category: 'opinion', sources: ['https://example.org/a'], topicId: topic.id, previousId: kn1.id, expectedRevision: 1, signature: sig('knowledge', kf('Second.', kn1.id, 2)) }, a.token), 201);
  await ok(s.post('/api/messages', { topicId: topic.id, content: 'unsigned', clientId: 's-u' }, a.token), 201);
  const k2 = keyPair();
  const key2 = await ok(s.post('/api/me/keys/rotate', { keyId: key1.id, publicKey: k2.publicKey, proof: k2.sign(possess(originId, a.id, k2.publicKey)), endorsement: k1.sign(rotate(originId, a.id, key1.id, k2.publicKey)) }, a.token));
  const m2 = await ok(s.post('/api/messages', { topicId: topic.id, content: 'by key two', clientId: 's-2', replyTo: m1.id, signature: sig('message', mf('by key two', 's-2', m1.id), k2, key2.id) }, a.token), 201);
  await ok(s.post('/api/me/keys/revoke', { keyId: key2.id }, a.token));

  const key = (await ok(s.get('/api/status'))).checkpointKey;
  const pages = await exportPages(s, a.token, topic.id, 3);
  assert.ok(pages.length >= 2, 'the export spans several pages');
  assert.deepEqual(pages[0].keys[a.id].map((k) => [k.id, k.state]), [[key1.id, 'rotated'], [key2.id, 'revoked']], "the export carries the signer's key history");
  const summary = await verifyExportOffline(pages, key);
  const signedRecords = pages.flatMap((p) => p.records).filter((r) => JSON.parse(r.canonicalJson).signature !== undefined);
  assert.equal(signedRecords.length, 5, 'the topic, two messages and two knowledge revisions are signed');
  assert.equal(summary.signed, 5);
  assert.deepEqual(summary.revokedKeys, [key2.id]);

  const dir = tempDir(t);
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);
  const all = pages.flatMap((p, pi) => p.records.map((r, ri) => ({ pi, ri, r })));
  const find = (id) => all.find(({ r }) => JSON.parse(r.canonicalJson).id === id);
  const [r1, r2] = [find(m1.id), find(m2.id)];

  // The key histories are not covered by the log's hashes: changed, they are refused by their own signatures.
  const { cases, reasons, edit } = tampering(pages);
  const hist = (f) => (p) => { for (const page of p) if (page.keys?.[a.id]) f(page.keys[a.id]); };
  edit("a key's proof", new RegExp(`^page 1: keys\\.${a.id}, key ${key1.id}: its proof is not its public key's signature over its possess string`), hist((h) => { h[0].proof = keyPair().sign(possess(originId, a.id, k1.publicKey)); }));
  edit("a key's public key", new RegExp(`^page 1: keys\\.${a.id}, key ${key2.id}: its proof is not its public key's signature over its possess string`), hist((h) => { h[1].publicKey = keyPair().publicKey; }));
  edit('a rotation endorsement', new RegExp(`^page 1: keys\\.${a.id}, key ${key2.id}: its endorsement is not ${key1.id}'s signature over the rotate string`), hist((h) => { h[1].endorsement = keyPair().sign(rotate(originId, a.id, key1.id, k2.publicKey)); }));
  // The same 64 bytes spelled another way (the last character's 4 unused bits set): not the text the
  // log's key record holds, so refused as the CLI and Python refuse it (canonical base64url only).
  const otherSpelling = (b64) => { const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'; return b64.slice(0, -1) + abc[abc.indexOf(b64.at(-1)) | 1]; };
  edit("a key's proof in another spelling", new RegExp(`^page 1: keys\\.${a.id}, key ${key1.id}: its proof is not its public key's signature over its possess string`), hist((h) => { h[0].proof = otherSpelling(h[0].proof); }));
  edit('a rotation endorsement in another spelling', new RegExp(`^page 1: keys\\.${a.id}, key ${key2.id}: its endorsement is not ${key1.id}'s signature over the rotate string`), hist((h) => { h[1].endorsement = otherSpelling(h[1].endorsement); }));
  edit('a rotated-in key whose predecessor is dropped', new RegExp(`key ${key2.id}: it replaces ${key1.id}, which comes nowhere before it`), hist((h) => { h.shift(); }));
  edit('a signing key dropped from the history', new RegExp(`record ${r2.r.seq}: signed with key ${key2.id}, which is not in the export's key history of ${a.id}`), hist((h) => { h.pop(); }));
  edit("a key's active time", new RegExp(`record \\d+: signed at \\S+ with key ${key1.id}, which was active from 2999-01-01T00:00:00.000Z to`), hist((h) => { h[0].created = '2999-01-01T00:00:00.000Z'; }));
  edit("a signed record's signature value, not re-chained", /the text does not hash to the proof's entry/, (p) => {
    rewriteRecord(p[r1.pi].records[r1.ri], (rec) => { rec.signature.value = k1.sign('anything'); });
  });

  // A forger holding the disk and a checkpoint key rewrites one record, re-chains it and signs a new
  // checkpoint: the chain and the checkpoint hold, the author's signature does not.
  const forger = keyPair();
  const forgerKey = `ed25519:${forger.publicKey}`;
  const forgedCases = {};
  const forgedReasons = {};
  const forge = (name, x, reason, f) => {
    forgedCases[name] = { export: [forgeRecord(pages[x.pi], x.ri, f, forger)] };
    forgedReasons[name] = reason;
  };
  const valueRefused = (x, keyId) => new RegExp(`^page 1, record ${x.r.seq}: signature\\.value is not key ${keyId}'s signature over the record's signed string .*: the text or the signature was changed$`, 's');
  forge('unchanged, re-signed by the forger', r1, null, () => {});
  forge("a signed record's content", r1, valueRefused(r1, key1.id), (rec) => { rec.content = `${rec.content}!`; });
  forge("a signed record's signature value", r2, valueRefused(r2, key2.id), (rec) => { rec.signature.value = k2.sign('anything'); });
  forge("a signed record's keyId (unknown)", r1, new RegExp(`record ${r1.r.seq}: signed with key key_999999, which is not in the export's key history`), (rec) => { rec.signature.keyId = 'key_999999'; });
  forge("a signed record's keyId (a key registered later)", r1, new RegExp(`record ${r1.r.seq}: signed with key ${key2.id}, registered at or after this record`), (rec) => { rec.signature.keyId = key2.id; });
  forge("a signed record's keyId (a key rotated before it)", r2, new RegExp(`record ${r2.r.seq}: signed at \\S+ with key ${key1.id}, which was active from \\S+ to \\S+ only`), (rec) => { rec.signature.keyId = key1.id; });
  forge("a signed record's author", r1, new RegExp(`record ${r1.r.seq}: signed with key ${key1.id}, which is not in the export's key history of ag_other`), (rec) => { rec.authorId = 'ag_other'; });
  forge('a lone surrogate in a signed field', r1, new RegExp(`record ${r1.r.seq}: .*lone surrogate`), (rec) => { rec.content = 'half \ud800 a pair'; });

  const answers = await runDriver(dir, cases, key);
  assert.deepEqual(answers.good, { ok: summary }, 'Python agrees with the JS helper on the genuine signed export (signed, revokedKeys)');
  for (const [name, reason] of Object.entries(reasons)) {
    assert.ok(answers[name]?.error, `${name}: refused by Python (got ${JSON.stringify(answers[name])})`);
    assert.match(answers[name].error, reason, `${name}: refused with its reason`);
    await assert.rejects(verifyExportOffline(cases[name].export, key), (err) => err.message === answers[name].error, `${name}: refused by the JS helper with the same words`);
  }
  const forgedAnswers = await runDriver(dir, forgedCases, forgerKey);
  const forgedSummary = await verifyExportOffline(forgedCases['unchanged, re-signed by the forger'].export, forgerKey);
  assert.equal(forgedSummary.signed, 1);
  assert.deepEqual(forgedAnswers['unchanged, re-signed by the forger'], { ok: forgedSummary }, 'the re-checkpointed genuine record verifies: each refusal below is the change, not the forging');
  for (const [name, reason] of Object.entries(forgedReasons)) {
    if (reason === null) continue;
    assert.ok(forgedAnswers[name]?.error, `${name}: refused by Python (got ${JSON.stringify(forgedAnswers[name])})`);
    assert.match(forgedAnswers[name].error, reason, `${name}: refused with its reason`);
    // A lone surrogate: Python refuses the text (no UTF-8 form); JavaScript escapes it, and the signature then fails.
    const same = name === 'a lone surrogate in a signed field' ? /signature\.value is not key/ : (err) => err.message === forgedAnswers[name].error;
    await assert.rejects(verifyExportOffline(forgedCases[name].export, forgerKey), same, `${name}: refused by the JS helper (with the same words)`);
  }
});

test('without the cryptography package, verify_export_offline and verify_consistency say to pip install cryptography', { skip: skipUnless(NO_PYTHON) }, async (t) => {
  if (NO_PYTHON) assert.fail(`${NO_PYTHON}, and FORUM_REQUIRE_PYTHON=1 requires it`);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'forum_client.py'), readFileSync(join(ROOT, 'src/api/docs/client/forum_client.py'), 'utf8'));
  const answers = await runDriver(dir, { any: { export: [] }, consistency: { consistency: ['', '', []] } }, `ed25519:${Buffer.alloc(32, 3).toString('base64url')}`, 'block-cryptography');
  assert.match(answers.any.error, /needs the cryptography package .*: pip install cryptography/);
  assert.match(answers.consistency.error, /needs the cryptography package .*: pip install cryptography/);
});

test('forum_client.py verify_consistency accepts a real consistency proof between a kept and a later checkpoint and refuses a changed one', { skip: skipUnless(NO_CRYPTOGRAPHY) }, async (t) => {
  if (NO_CRYPTOGRAPHY) assert.fail(`${NO_CRYPTOGRAPHY}, and FORUM_REQUIRE_PYTHON=1 requires it`);
  const s = await startServer(t);
  const a = await s.register('keeper');
  const topic = await ok(s.post('/api/topics', { title: 'growing' }, a.token), 201);
  for (let i = 0; i < 3; i++) await ok(s.post('/api/messages', { topicId: topic.id, content: `before ${i}`, clientId: `b${i}` }, a.token), 201);
  const kept = await ok(s.get('/api/checkpoint'));
  let last;
  for (let i = 0; i < 4; i++) last = await ok(s.post('/api/messages', { topicId: topic.id, content: `after ${i}`, clientId: `a${i}` }, a.token), 201);
  const n = Number(last.id.split('_')[1]); // ids carry their record's seq
  const c = await ok(s.get(`/api/proofs/consistency?from=${kept.size}&to=${n}`, a.token));
  assert.ok(c.proof.length > 0);
  const key = kept.key;
  const dir = tempDir(t);
  writeFileSync(join(dir, 'forum_client.py'), (await s.get('/api/client/forum_client.py')).body);

  const flipB64 = (h) => { const b = Buffer.from(h, 'base64'); b[0] ^= 1; return b.toString('base64'); };
  const changedRoot = (note) => { const l = note.split('\n'); l[2] = flipB64(l[2]); return l.join('\n'); };
  const answers = await runDriver(dir, {
    'note and answer': { consistency: [kept.note, c, c] },
    'checkpoint JSON, note and hashes': { consistency: [kept, c.checkpoint, c.proof] },
    'one checkpoint twice': { consistency: [kept.note, kept.note, []] },
    'a proof hash changed': { consistency: [kept.note, c, { ...c, proof: [flipB64(c.proof[0]), ...c.proof.slice(1)] }] },
    'a proof hash dropped': { consistency: [kept.note, c, { ...c, proof: c.proof.slice(1) }] },
    'the sizes swapped': { consistency: [c, kept.note, c] },
    "the proof's sizes": { consistency: [kept.note, c, { ...c, from: kept.size - 1 }] },
    "the kept checkpoint's root": { consistency: [changedRoot(kept.note), c, c] },
    "the new checkpoint's root": { consistency: [kept.note, changedRoot(c.checkpoint), c.proof] },
    'no checkpoint': { consistency: [{}, c, c] },
  }, key);
  const origin = kept.origin;
  assert.deepEqual(answers['note and answer'], { ok: { origin, from: kept.size, to: n } });
  assert.deepEqual(answers['checkpoint JSON, note and hashes'], { ok: { origin, from: kept.size, to: n } });
  assert.deepEqual(answers['one checkpoint twice'], { ok: { origin, from: kept.size, to: kept.size } });
  const refused = {
    'a proof hash changed': /the consistency proof does not show the tree of \d+ records as a prefix/,
    'a proof hash dropped': /the consistency proof does not show the tree of \d+ records as a prefix/,
    'the sizes swapped': /OLD \(\d+ records\) is larger than NEW/,
    "the proof's sizes": /the proof is from \d+ to \d+, the checkpoints are/,
    "the kept checkpoint's root": /^OLD: the checkpoint's signature by \S+ does not verify/,
    "the new checkpoint's root": /^NEW: the checkpoint's signature by \S+ does not verify/,
    'no checkpoint': /^OLD: holds no checkpoint/,
  };
  for (const [name, reason] of Object.entries(refused)) assert.match(answers[name].error ?? JSON.stringify(answers[name]), reason, `${name}: refused with its reason`);
});
