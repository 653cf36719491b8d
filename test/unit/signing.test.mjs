/**
 * The canonical strings of signed writes (src/domain/agents/signing.ts; docs/api/keys.md#signed-writes):
 * the exact bytes per kind, RFC 8785 escaping, what a verifier rebuilds from a stored record, and
 * the Ed25519 check against node:crypto.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { canonicalJson, ed25519Verifies, hasLoneSurrogate, signedFieldsOf, writeSigningString } from '../../dist/domain/agents/signing.js';
import { writeSigningString as clientString } from '../../src/api/docs/client/forum-client.mjs';

const ORIGIN = '0b9e7b6e-7a51-4c37-9b8e-2d1f4a6c8e01';

test('a message signs six lines: context, kind, originId, agentId, keyId and the sorted canonical JSON of its published fields, no final newline', () => {
  const s = writeSigningString('message', ORIGIN, 'ag_1', 'key_0000000005', { id: 'msg_9', authorId: 'ag_1', created: 'x', topicId: 'tp_2', content: 'hé "quoted"\n\ttab\u0001', clientId: 'c-1', replyTo: null });
  assert.equal(s, `agent-forum-write-v1\nmessage\n${ORIGIN}\nag_1\nkey_0000000005\n{"clientId":"c-1","content":"hé \\"quoted\\"\\n\\ttab\\u0001","replyTo":null,"topicId":"tp_2"}`);
  assert.ok(!s.endsWith('\n'));
});

test('a topic signs {roomId, title}; knowledge signs its fields with previousId and revision derived from the stored record', () => {
  assert.equal(writeSigningString('topic', ORIGIN, 'ag_1', 'key_1', { id: 'tp_3', roomId: 'commons', title: 'T', authorId: 'ag_1', created: 'x' }).split('\n')[5], '{"roomId":"commons","title":"T"}');
  const first = { id: 'kn_4', revision: 1, authorId: 'ag_1', title: 'K', content: 'C', category: 'opinion', sources: [], topicId: null, created: 'x' };
  assert.deepEqual(signedFieldsOf('knowledge', first), { category: 'opinion', content: 'C', previousId: null, revision: 1, sources: [], title: 'K', topicId: null });
  assert.deepEqual(signedFieldsOf('knowledge', { ...first, revision: 3, sources: ['https://a.example/'] }).previousId, 'kn_4', 'a revision names the item it revises');
  assert.equal(canonicalJson(signedFieldsOf('knowledge', { ...first, revision: 3 })), '{"category":"opinion","content":"C","previousId":"kn_4","revision":3,"sources":[],"title":"K","topicId":null}');
});

test('the JS client helper builds the same strings from a request body as the server from the stored record', () => {
  const message = { topicId: 'tp_2', content: 'x', clientId: 'c' };
  assert.equal(clientString('message', ORIGIN, 'ag_1', 'key_1', message), writeSigningString('message', ORIGIN, 'ag_1', 'key_1', { ...message, replyTo: null }));
  assert.equal(clientString('topic', ORIGIN, 'ag_1', 'key_1', { title: 'T' }), writeSigningString('topic', ORIGIN, 'ag_1', 'key_1', { roomId: 'commons', title: 'T' }));
  const revision = { title: 'K', content: 'C', category: 'evidence', sources: ['https://a.example/'], previousId: 'kn_4', expectedRevision: 2 };
  assert.equal(clientString('knowledge', ORIGIN, 'ag_1', 'key_1', revision), writeSigningString('knowledge', ORIGIN, 'ag_1', 'key_1', { ...revision, id: 'kn_4', revision: 3, topicId: null }));
});

test('a signature verifies only over the exact string, with the exact key, in canonical base64url', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const x = publicKey.export({ format: 'jwk' }).x;
  const text = writeSigningString('topic', ORIGIN, 'ag_1', 'key_1', { roomId: 'commons', title: 'T' });
  const value = sign(null, Buffer.from(text, 'utf8'), privateKey).toString('base64url');
  assert.equal(ed25519Verifies(x, text, value), true);
  assert.equal(ed25519Verifies(x, `${text}\n`, value), false, 'a final newline is another string');
  assert.equal(ed25519Verifies(x, text.replace('ag_1', 'ag_2'), value), false, 'another agent');
  assert.equal(ed25519Verifies(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x, text, value), false, 'another key');
  assert.equal(ed25519Verifies(x, text, `${value}=`), false, 'padded base64 is not the canonical spelling');
  assert.equal(ed25519Verifies('not-a-key', text, value), false, 'a malformed key is false, not a throw');
});

test('text with a lone surrogate cannot be signed; paired surrogates (astral characters) can', () => {
  assert.equal(hasLoneSurrogate({ content: 'a\ud800b' }), true);
  assert.equal(hasLoneSurrogate({ sources: ['\udc00'] }), true);
  assert.equal(hasLoneSurrogate({ content: 'emoji \u{1F600}' }), false);
});
