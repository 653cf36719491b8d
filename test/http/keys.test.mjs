/**
 * Agent signing keys, opt-in (issue 53; docs/api/keys.md), black-box: the built server as a real
 * process over HTTP. Keys and signatures are made with node:crypto over the strings the
 * documentation defines (test/helpers/signing.mjs), and the key history the server answers is re-verified here the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../helpers/server.mjs';
import { keyPair, possess, rotate, verifies } from '../helpers/signing.mjs';
import { fromSnapshotThenReplay } from '../helpers/snapshot.mjs';


/** A registered agent with the forum's originId. */
async function agentOf(s, name) {
  const a = await s.register(name);
  const originId = (await s.get('/api/status')).body.originId;
  return { ...a, originId };
}

/** Registers `key` for agent `a`; resolves to the response. */
const registerKey = (s, a, key, proof = key.sign(possess(a.originId, a.id, key.publicKey))) => s.post('/api/me/keys', { publicKey: key.publicKey, proof }, a.token);

test('an agent registers an Ed25519 key with proof of possession; a proof over anything else, by another key, or for another agent or forum is refused with 400 naming it', async (t) => {
  const s = await startServer(t);
  const a = await agentOf(s, 'signer');
  const b = await agentOf(s, 'other');
  const key = keyPair();
  const stranger = keyPair();

  const refused = [
    ['another key signed', stranger.sign(possess(a.originId, a.id, key.publicKey))],
    ['for another agent', key.sign(possess(a.originId, b.id, key.publicKey))],
    ['for another forum', key.sign(possess('00000000-0000-4000-8000-000000000000', a.id, key.publicKey))],
    ['with a final newline', key.sign(`${possess(a.originId, a.id, key.publicKey)}\n`)],
  ];
  for (const [what, proof] of refused) {
    const r = await registerKey(s, a, key, proof);
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.error, /^proof: not publicKey's Ed25519 signature over the UTF-8 string "agent-forum-key-v1\\npossess\\n/, what);
  }
  const malformed = await s.post('/api/me/keys', { publicKey: 'A'.repeat(42), proof: key.sign('x') }, a.token);
  assert.equal(malformed.status, 400);
  assert.match(malformed.body.error, /publicKey/);
  assert.deepEqual((await s.get('/api/me/keys', a.token)).body.keys, [], 'nothing was registered');

  const ok = await registerKey(s, a, key);
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  assert.match(ok.body.id, /^key_[0-9]+$/);
  assert.deepEqual([ok.body.publicKey, ok.body.state, ok.body.ended, ok.body.replaces, ok.body.replacedBy, ok.body.endorsement], [key.publicKey, 'active', null, null, null, null]);

  const second = await registerKey(s, a, keyPair());
  assert.equal(second.status, 409, 'one active key at a time');
  assert.equal(second.body.code, 'KEY_STATE');
  assert.match(second.body.error, new RegExp(`you have an active key \\(${ok.body.id}\\): rotate it`));
  const reused = await registerKey(s, b, key, key.sign(possess(b.originId, b.id, key.publicKey)));
  assert.equal(reused.status, 409, 'a key is used once, across agents too');
  assert.match(reused.body.error, /publicKey: this key was registered before/);

  // A read-only token may not register a key (every POST is a write).
  const ro = (await s.post('/api/me/tokens', { name: 'ro', scopes: ['read'] }, b.token)).body;
  const scoped = await registerKey(s, { ...b, token: ro.token }, keyPair());
  assert.equal(scoped.status, 403);
  assert.equal(scoped.body.code, 'TOKEN_SCOPE');
});

test('a rotation needs the active key to sign the new one: the old key becomes rotated, the new one active, and the history re-verifies link by link', async (t) => {
  const s = await startServer(t);
  const a = await agentOf(s, 'rotator');
  const k1 = keyPair();
  const first = (await registerKey(s, a, k1)).body;
  const k2 = keyPair();
  const body = (endorser, keyId = first.id) => ({
    keyId,
    publicKey: k2.publicKey,
    proof: k2.sign(possess(a.originId, a.id, k2.publicKey)),
    endorsement: endorser.sign(rotate(a.originId, a.id, keyId, k2.publicKey)),
  });

  const unendorsed = await s.post('/api/me/keys/rotate', body(k2), a.token);
  assert.equal(unendorsed.status, 400, 'the new key cannot endorse itself');
  assert.match(unendorsed.body.error, new RegExp(`^endorsement: not the Ed25519 signature of your active key ${first.id}`));
  const badProof = await s.post('/api/me/keys/rotate', { ...body(k1), proof: k1.sign(possess(a.originId, a.id, k2.publicKey)) }, a.token);
  assert.equal(badProof.status, 400);
  assert.match(badProof.body.error, /^proof:/);
  const unknown = await s.post('/api/me/keys/rotate', body(k1, 'key_0000009999'), a.token);
  assert.equal(unknown.status, 404);

  const rotated = await s.post('/api/me/keys/rotate', body(k1), a.token);
  assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
  assert.deepEqual([rotated.body.state, rotated.body.replaces, rotated.body.publicKey], ['active', first.id, k2.publicKey]);
  const again = await s.post('/api/me/keys/rotate', body(k1), a.token);
  assert.equal(again.status, 409, 'a rotated key cannot endorse a second successor');
  assert.equal(again.body.code, 'KEY_STATE');

  // Anyone with a token reads the history and can check every link without trusting the server.
  const reader = await s.register('verifier');
  const history = await s.get(`/api/agents/keys?agentId=${a.id}`, reader.token);
  assert.equal(history.status, 200, JSON.stringify(history.body));
  assert.equal(history.body.originId, a.originId);
  const [h1, h2] = history.body.keys;
  assert.deepEqual([h1.state, h1.replacedBy, h2.state, h2.replaces], ['rotated', h2.id, 'active', h1.id]);
  assert.notEqual(h1.ended, null);
  for (const k of history.body.keys) assert.ok(verifies(k.publicKey, possess(history.body.originId, a.id, k.publicKey), k.proof), `${k.id}'s proof verifies`);
  assert.ok(verifies(h1.publicKey, rotate(history.body.originId, a.id, h1.id, h2.publicKey), h2.endorsement), 'the old key endorsed the new one');
  assert.equal((await s.get('/api/agents/keys?agentId=ag_nope', reader.token)).status, 404);
});

test('a key is revoked with the token alone; a revoked key stays in the history, cannot be registered again, and a new key can be registered', async (t) => {
  const s = await startServer(t);
  const a = await agentOf(s, 'revoker');
  const k1 = keyPair();
  const first = (await registerKey(s, a, k1)).body;
  const revoked = await s.post('/api/me/keys/revoke', { keyId: first.id }, a.token);
  assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
  assert.equal(revoked.body.state, 'revoked');
  assert.notEqual(revoked.body.ended, null);
  const twice = await s.post('/api/me/keys/revoke', { keyId: first.id }, a.token);
  assert.equal(twice.status, 409);
  assert.match(twice.body.error, /is revoked already/);
  assert.equal((await s.post('/api/me/keys/revoke', { keyId: 'key_0000009999' }, a.token)).status, 404);
  assert.equal((await registerKey(s, a, k1)).status, 409, 'a revoked key is not registered again');
  const next = await registerKey(s, a, keyPair());
  assert.equal(next.status, 201, 'after a revocation a new key may be registered');
  assert.deepEqual((await s.get('/api/me/keys', a.token)).body.keys.map((k) => k.state), ['revoked', 'active']);
});

test('key history survives restarts from the snapshot and from the log, and each change is one record listed in the operator action log', async (t) => {
  const s = await startServer(t);
  const a = await agentOf(s, 'durable');
  const op = (await s.cli('operator', 'create', '--name', 'Ops')).json;
  const k1 = keyPair();
  const first = (await registerKey(s, a, k1)).body;
  const k2 = keyPair();
  const second = (await s.post('/api/me/keys/rotate', {
    keyId: first.id, publicKey: k2.publicKey, proof: k2.sign(possess(a.originId, a.id, k2.publicKey)), endorsement: k1.sign(rotate(a.originId, a.id, first.id, k2.publicKey)),
  }, a.token)).body;
  assert.equal((await s.post('/api/me/keys/revoke', { keyId: second.id }, a.token)).status, 200);

  const actions = (await s.get('/api/admin/actions', op.token)).body.actions.filter((x) => x.action.startsWith('keys.'));
  assert.deepEqual(actions.map((x) => [x.action, x.target, x.agentId, x.operatorId]), [
    ['keys.revoke', `key ${second.id} of ${a.id}`, a.id, null],
    ['keys.rotate', `key ${second.id} of ${a.id}`, a.id, null],
    ['keys.register', `key ${first.id} of ${a.id}`, a.id, null],
  ]);
  const before = (await s.get('/api/me/keys', a.token)).body;
  const refusedAgain = async () => (await registerKey(s, a, k2, k2.sign(possess(a.originId, a.id, k2.publicKey)))).status;
  assert.equal(await refusedAgain(), 409);

  await s.stop();
  await fromSnapshotThenReplay(s, async (from) => {
    assert.deepEqual((await s.get('/api/me/keys', a.token)).body, before, from);
    assert.equal(await refusedAgain(), 409, `the used-once rule holds ${from}`);
  });
  const after = (await s.get('/api/admin/actions', op.token)).body.actions.filter((x) => x.action.startsWith('keys.'));
  assert.deepEqual(after, actions);
});
