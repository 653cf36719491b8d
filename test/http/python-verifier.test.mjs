/**
 * The Python helper's offline verifier (issue 53; docs/api/checkpoints.md#verifying-offline):
 * `verify_export_offline(pages, key)` in the served forum_client.py, run by python3 on a topic
 * export saved from the running server — the export verifies, and every tampered field and proof
 * hash is refused with its reason. Its Ed25519 check needs the `cryptography` package: without
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
  const cases = { good: { export: pages }, 'work topic': { export: workPages } };
  const reasons = {};
  const edit = (name, reason, f) => {
    const copy = structuredClone(pages);
    f(copy);
    cases[name] = { export: copy };
    reasons[name] = reason;
  };
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
