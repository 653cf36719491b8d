/**
 * The replica key and the signed bucket objects (issue 50; src/store/replica/keys.ts, format.ts):
 * key files and public keys are parsed, made and matched as docs/operate/replication.md says; a chunk or
 * manifest authenticates only under its key, unaltered, in its own kind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import stableStringify from 'fast-json-stable-stringify';
import { createSigningKey, loadReplicaKeys, parsePublicKey, readSigningKey, verifyKey } from '../../dist/store/replica/keys.js';
import { CHUNK_FORMAT, EMPTY_HEAD, MANIFEST_FORMAT, UnsignedBucketError, checkSegment, decodeChunk, decodeManifest, encodeChunk, encodeManifest, sha256Hex } from '../../dist/store/replica/format.js';
import { tempDir } from '../helpers/server.mjs';

const fields = { format: CHUNK_FORMAT, originId: 'o1', epoch: 3, writer: 'w', firstSeq: 5, lastSeq: 6, prevHash: 'a'.repeat(64), segment: 1, offset: 100 };
const lines = Buffer.from('{"line":5}\n{"line":6}\n');
const manifest = { format: MANIFEST_FORMAT, keyId: '', originId: 'o1', created: '2026-01-01T00:00:00.000Z', lineage: {}, epoch: 2, writer: 'w', leaderUrl: 'http://x', since: '2026-01-01T00:00:00.000Z', segments: [], erased: 0, head: EMPTY_HEAD };

test('a new signing key file is PKCS#8 PEM, mode 0600, with no temp file left, and reads back as the same key', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'replica-signing-key.pem');
  const made = createSigningKey(path);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.match(readFileSync(path, 'utf8'), /^-----BEGIN PRIVATE KEY-----\n/);
  assert.deepEqual(readdirSync(dir), ['replica-signing-key.pem']);
  const read = readSigningKey(path);
  assert.equal(read.text, made.text);
  assert.ok(read.canSign);
  assert.match(made.text, /^ed25519:[A-Za-z0-9_-]{43}$/);
  assert.match(made.keyId, /^[0-9a-f]{16}$/);
  assert.equal(readSigningKey(join(dir, 'absent.pem')), null, 'no file: null');
});

test('a key file that is not an Ed25519 private key is refused, naming the file and not echoing it', (t) => {
  const dir = tempDir(t);
  const garbage = join(dir, 'garbage.pem');
  writeFileSync(garbage, 'SECRET-NOT-A-KEY');
  assert.throws(() => readSigningKey(garbage), (err) => err.message.includes(garbage) && !err.message.includes('SECRET') && /PKCS#8 PEM/.test(err.message));
  const rsa = join(dir, 'rsa.pem');
  writeFileSync(rsa, generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }));
  assert.throws(() => readSigningKey(rsa), /is a rsa key, not an Ed25519 key/);
});

test('a public key is ed25519: and 43 base64url characters; it is the signing key’s when derived; anything else is refused with the rule', (t) => {
  const key = createSigningKey(join(tempDir(t), 'k.pem'));
  const pub = parsePublicKey(key.text);
  assert.equal(pub.text, key.text);
  assert.equal(pub.keyId, key.keyId);
  assert.equal(pub.canSign, false);
  assert.throws(() => pub.sign(Buffer.from('x')), /only the replica public key/);
  for (const bad of ['', 'ed25519:', `rsa:${key.text.slice(8)}`, `${key.text}A`, key.text.slice(0, -1), `ed25519:${'+'.repeat(43)}`]) {
    assert.throws(() => parsePublicKey(bad), /a replica public key is ed25519: followed by the base64url/, bad);
  }
});

test('loading keys: the public key alone verifies; the signing key alone derives it; a mismatch between them is refused; neither is refused saying what to set', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'k.pem');
  const key = createSigningKey(path);
  const other = createSigningKey(join(dir, 'other.pem'));
  assert.equal(loadReplicaKeys({ signingKeyPath: path, publicKey: null }).verify.text, key.text);
  const only = loadReplicaKeys({ signingKeyPath: join(dir, 'absent.pem'), publicKey: key.text });
  assert.equal(only.signing, null);
  assert.equal(only.verify.text, key.text);
  assert.throws(() => loadReplicaKeys({ signingKeyPath: path, publicKey: other.text }), /must be one key pair/);
  assert.throws(() => verifyKey({ signingKeyPath: join(dir, 'absent.pem'), publicKey: null }, 'a follower'), /a follower verifies .* set FORUM_REPLICA_PUBLIC_KEY=ed25519:/);
});

test('a signed chunk decodes under its key; altered lines, an altered header, another key or the v1 format are refused, naming the key', (t) => {
  const key = createSigningKey(join(tempDir(t), 'k.pem'));
  const other = createSigningKey(join(tempDir(t), 'o.pem'));
  const body = encodeChunk(fields, lines, key);
  const { header, lines: back } = decodeChunk(body, 'chunks/x', parsePublicKey(key.text));
  assert.deepEqual(back, lines);
  assert.equal(header.linesSha256, sha256Hex(lines));
  assert.equal(header.epoch, 3);
  const refused = (b, k, re) => assert.throws(() => decodeChunk(b, 'chunks/x', k), (err) => err.code === 'LOG_CORRUPT' && err.message.includes('chunks/x') && re.test(err.message));
  refused(Buffer.from(body.toString('utf8').replace('{"line":6}', '{"line":7}')), key, /linesSha256 differs/);
  refused(Buffer.from(body.toString('utf8').replace('"epoch":3', '"epoch":4')), key, new RegExp(`not signed by the replica key ${key.text}`));
  refused(body, other, new RegExp(`not signed by the replica key ${other.text}`));
  refused(encodeChunk(fields, lines, other), key, /not signed by the replica key/);
  const v1 = Buffer.concat([Buffer.from(`${JSON.stringify({ ...fields, format: 'agent-forum-chunk-v1' })}\n`), lines]);
  refused(v1, key, /unsigned agent-forum-chunk-v1 chunk.*Start the leader once with this version/);
  // An erasure rewrite re-signs: the decoded header with new lines encodes to a chunk that authenticates.
  const rewritten = encodeChunk(header, Buffer.from('{"line":5}\n{"erased":6}\n'), key);
  assert.equal(decodeChunk(rewritten, 'chunks/x', key).header.sig !== header.sig, true);
});

test('a signed manifest decodes under its key only; its signature does not verify as a chunk’s (domain separation); a v1 manifest is named as unsigned', (t) => {
  const key = createSigningKey(join(tempDir(t), 'k.pem'));
  const other = createSigningKey(join(tempDir(t), 'o.pem'));
  const body = encodeManifest({ ...manifest, segments: [{ firstSeq: 1, lastSeq: 4, bytes: 10, lastHash: 'b'.repeat(64), sha256: sha256Hex(Buffer.from('segment')) }] }, key);
  const m = decodeManifest(body, 'manifest.json', key);
  assert.equal(m.keyId, key.keyId);
  assert.equal(m.sig, undefined);
  assert.equal(m.epoch, 2);
  checkSegment(Buffer.from('segment'), m.segments[0], 'segments/1', key);
  assert.throws(() => checkSegment(Buffer.from('segmenT'), m.segments[0], 'segments/1', key), /sha256 differs/);
  assert.throws(() => decodeManifest(Buffer.from(body.toString().replace('"epoch": 2', '"epoch": 9')), 'manifest.json', key), /not signed by the replica key/);
  assert.throws(() => decodeManifest(body, 'manifest.json', other), new RegExp(`signed by the replica key with keyId "${key.keyId}", not by the replica key ${other.text}`));
  // The same fields signed as the other kind (the manifest's tag) never verify as a chunk.
  const chunk = encodeChunk(fields, lines, key);
  const { sig: _sig, ...signed } = JSON.parse(chunk.toString('utf8', 0, chunk.indexOf(10)));
  const asManifest = key.sign(Buffer.from(`${MANIFEST_FORMAT}\n${stableStringify(signed)}`));
  const swapped = Buffer.concat([Buffer.from(`${JSON.stringify({ ...signed, sig: asManifest })}\n`), lines]);
  assert.throws(() => decodeChunk(swapped, 'chunks/x', key), /not signed/);
  const asChunk = key.sign(Buffer.from(`${CHUNK_FORMAT}\n${stableStringify(signed)}`));
  assert.equal(decodeChunk(Buffer.concat([Buffer.from(`${JSON.stringify({ ...signed, sig: asChunk })}\n`), lines]), 'chunks/x', key).header.sig, asChunk, 'the documented byte string is what is signed');
  const v1 = Buffer.from(JSON.stringify({ ...manifest, format: 'agent-forum-replica-v1', keyId: undefined, head: undefined }));
  assert.throws(() => decodeManifest(v1, 'manifest.json', key), (err) => err instanceof UnsignedBucketError && /unsigned agent-forum-replica-v1 manifest/.test(err.message));
});
