/**
 * Agent keys and signed writes made the way a client makes them (issue 53; docs/api/keys.md and
 * docs/api/checkpoints.md), for the black-box tests: Ed25519 key pairs, the documented signed
 * strings and their check with node:crypto, and a forger's re-chained record under a re-signed
 * checkpoint. Everything here is built from the documentation with node:crypto, never with the
 * server's code, so a test that uses it checks the server against the documented format.
 */
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';

/**
 * A fresh Ed25519 key pair: `{publicKey, privateKey, sign(text)}`, where `publicKey` is the raw key
 * as unpadded base64url (the JWK x), `privateKey` a node:crypto KeyObject and `sign` answers the
 * unpadded base64url signature over `text`'s UTF-8 bytes.
 */
export function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { publicKey: publicKey.export({ format: 'jwk' }).x, privateKey, sign: (text) => sign(null, Buffer.from(text, 'utf8'), privateKey).toString('base64url') };
}

/** The documented proof-of-possession string (docs/api/keys.md): what a new key signs. */
export const possess = (originId, agentId, publicKey) => ['agent-forum-key-v1', 'possess', originId, agentId, publicKey].join('\n');

/** The documented rotation string (docs/api/keys.md): what the active key signs to endorse its successor. */
export const rotate = (originId, agentId, oldKeyId, publicKey) => ['agent-forum-key-v1', 'rotate', originId, agentId, oldKeyId, publicKey].join('\n');

/** RFC 8785 for the documented field values (strings, integers, null, lists, objects): sorted keys, JSON escapes, no white space. */
export const jcs = (v) => (Array.isArray(v) ? `[${v.map(jcs).join(',')}]` : v !== null && typeof v === 'object' ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}` : JSON.stringify(v));

/** The documented signed string of a write (docs/api/keys.md#signed-writes): `kind` is topic, message or knowledge; `fields` its signed fields. */
export const writeString = (kind, originId, agentId, keyId, fields) => ['agent-forum-write-v1', kind, originId, agentId, keyId, jcs(fields)].join('\n');

/** Whether `value` (unpadded base64url) is `publicKey`'s (unpadded base64url) Ed25519 signature over `text`, checked here with node:crypto. */
export const verifies = (publicKey, text, value) =>
  verify(null, Buffer.from(text, 'utf8'), createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' }), Buffer.from(value, 'base64url'));

/**
 * A newly registered agent of test server `s` with an active key (its possess proof made here):
 * `{...s.register(name), originId, key: keyPair(), keyId, signature(kind, fields, key?, keyId?)}`,
 * where `signature` answers the `{keyId, value}` a signed write carries (by default with this key).
 * Asserts the key's registration answered 201.
 */
export async function signer(s, name) {
  const a = await s.register(name);
  const originId = (await s.get('/api/status')).body.originId;
  const key = keyPair();
  const r = await s.post('/api/me/keys', { publicKey: key.publicKey, proof: key.sign(possess(originId, a.id, key.publicKey)) }, a.token);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const agent = { ...a, originId, key, keyId: r.body.id };
  agent.signature = (kind, fields, k = agent.key, keyId = agent.keyId) => ({ keyId, value: k.sign(writeString(kind, originId, a.id, keyId, fields)) });
  return agent;
}

/** A C2SP signed note of (origin, size, root: Buffer) by `key` (a keyPair()): a checkpoint as a forger holding that key would sign it. */
function signNote(origin, size, root, key) {
  const body = `${origin}\n${size}\n${root.toString('base64')}\n`;
  const raw = Buffer.from(key.publicKey, 'base64url');
  const keyId = createHash('sha256').update(Buffer.concat([Buffer.from(`${origin}\n`), Buffer.from([1]), raw])).digest().subarray(0, 4);
  return `${body}\n\u2014 ${origin} ${Buffer.concat([keyId, sign(null, Buffer.from(body), key.privateKey)]).toString('base64')}\n`;
}

/** RFC 9162 §2.1.3.2: the root an audit path (Buffers, leaf-up) leads to from `leaf` at `index` in a tree of `size` (independent of the server). */
function rootFromPath(leaf, index, size, path) {
  const node = (l, r) => createHash('sha256').update(Buffer.concat([Buffer.from([1]), l, r])).digest();
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r);
      while (fn % 2 === 0 && fn !== 0) { fn >>= 1; sn >>= 1; }
    } else r = node(r, p);
    fn >>= 1;
    sn >>= 1;
  }
  return r;
}

/**
 * Rewrites export record `r` in place: `change` edits its parsed canonicalJson object, which is
 * then re-serialized (RFC 8785) and given a matching sha256 — the record's own checksum holds, its
 * proof (the chain entry) no longer does.
 */
export function rewriteRecord(r, change) {
  const rec = JSON.parse(r.canonicalJson);
  change(rec);
  r.canonicalJson = jcs(rec);
  r.sha256 = createHash('sha256').update(r.canonicalJson).digest('hex');
}

/**
 * A forger's copy of export page `page` holding only its record at `index`, rewritten by `change`
 * (see rewriteRecord), re-chained (its proof's entry recomputed over the changed text) and under
 * a checkpoint re-signed by `forger` (a keyPair()) over the root its unchanged audit path now
 * leads to: the chain and the checkpoint hold for the forger's key, only agents' signatures can
 * tell. `page` itself is left as it was.
 */
export function forgeRecord(page, index, change, forger) {
  const forged = structuredClone(page);
  const r = forged.records[index];
  forged.records = [r];
  rewriteRecord(r, change);
  r.proof.entry = createHash('sha256').update(`${r.proof.prevHash}{"payload":${r.canonicalJson},"seq":${r.seq},"time":"${r.proof.time}","type":"${r.proof.type}"}`).digest('hex');
  const leaf = createHash('sha256').update(Buffer.concat([Buffer.from([0]), Buffer.from(r.proof.entry, 'hex')])).digest();
  const root = rootFromPath(leaf, r.seq - 1, page.cursor.through, r.proof.path.map((p) => Buffer.from(p, 'base64')));
  forged.checkpoint = signNote(page.checkpoint.split('\n')[0], page.cursor.through, root, forger);
  return forged;
}
