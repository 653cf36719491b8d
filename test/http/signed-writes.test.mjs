/**
 * Signed writes (issue 53; docs/api/keys.md#signed-writes), black-box: the built server as a real
 * process over REST, the official A2A client and the official MCP client. Keys and signatures are
 * made with node:crypto over the strings the documentation defines (test/helpers/signing.mjs,
 * never the server's code); exports are checked offline by the CLI and the JS helper, and forged
 * ones are refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Role } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, RestTransportFactory, createAuthenticatingFetchWithRetry } from '@a2a-js/sdk/client';
import { A2AError } from '@a2a-js/sdk/errors';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { chromium } from 'playwright-core';
import { verifyExportOffline } from '../../src/api/docs/client/forum-client.mjs';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip } from '../helpers/chromium.mjs';
import { startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { forgeRecord, keyPair, possess, rewriteRecord, rotate, signer, verifies, writeString } from '../helpers/signing.mjs';

test('a signed topic, message and knowledge revision are stored with their signature, which verifies with node:crypto on every read; unsigned writes answer as before', async (t) => {
  const s = await startServer(t);
  const a = await signer(s, 'signer');

  const topicSig = a.signature('topic', { roomId: 'commons', title: 'Signed topic' });
  const topic = await ok(s.post('/api/topics', { title: '  Signed topic ', signature: topicSig }, a.token), 201);
  assert.deepEqual(topic.signature, topicSig, 'the title is signed as published (trimmed, default room)');

  const fields = { clientId: 'c-1', content: 'I wrote this.', replyTo: null, topicId: topic.id };
  const message = await ok(s.post('/api/messages', { topicId: topic.id, content: 'I wrote this.', clientId: 'c-1', signature: a.signature('message', fields) }, a.token), 201);
  assert.ok(verifies(a.key.publicKey, writeString('message', a.originId, a.id, a.keyId, fields), message.signature.value), 'verified here, not by the server');
  const retry = await ok(s.post('/api/messages', { topicId: topic.id, content: 'I wrote this.', clientId: 'c-1', signature: message.signature }, a.token), 201);
  assert.deepEqual(retry, message, 'an identical signed retry returns the stored message');
  const receipt = await ok(s.get('/api/receipts?kind=message&clientId=c-1', a.token));
  assert.deepEqual([receipt.request.signature, receipt.response.body], [message.signature, message], 'a receipt echoes the signed request and the stored answer');
  const unsignedRetry = await s.post('/api/messages', { topicId: topic.id, content: 'I wrote this.', clientId: 'c-1' }, a.token);
  assert.equal(unsignedRetry.status, 409, 'the same clientId without the signature is another message');

  const plain = await ok(s.post('/api/messages', { topicId: topic.id, content: 'unsigned', clientId: 'c-2' }, a.token), 201);
  assert.deepEqual(Object.keys(plain).sort(), ['authorId', 'clientId', 'content', 'created', 'id', 'replyTo', 'topicId'], 'an unsigned message has no signature field');

  const kn1 = { category: 'opinion', content: 'First.', previousId: null, revision: 1, sources: [], title: 'Note', topicId: null };
  const k1 = await ok(s.post('/api/knowledge', { title: 'Note', content: 'First.', category: 'opinion', signature: a.signature('knowledge', kn1) }, a.token), 201);
  const kn2 = { ...kn1, content: 'Second.', previousId: k1.id, revision: 2, topicId: topic.id };
  const k2 = await ok(s.post('/api/knowledge', { title: 'Note', content: 'Second.', category: 'opinion', topicId: topic.id, previousId: k1.id, expectedRevision: 1, signature: a.signature('knowledge', kn2) }, a.token), 201);
  assert.ok(verifies(a.key.publicKey, writeString('knowledge', a.originId, a.id, a.keyId, kn2), k2.signature.value));

  // Every read path carries the same signature.
  assert.deepEqual((await ok(s.get(`/api/messages?messageId=${message.id}`, a.token))).messages[0].signature, message.signature);
  assert.deepEqual((await ok(s.get('/api/topics', a.token))).find((x) => x.id === topic.id).signature, topicSig);
  assert.deepEqual((await ok(s.get(`/api/knowledge?id=${k1.id}`, a.token))).knowledge[0].signature, k2.signature);
  const events = (await ok(s.get('/api/changes?after=0&limit=100', a.token))).events;
  assert.deepEqual(events.find((e) => e.kind === 'message' && e.message.id === message.id).message.signature, message.signature);
  assert.deepEqual(events.find((e) => e.kind === 'knowledge' && e.knowledge.revision === 2).knowledge.signature, k2.signature);
  assert.equal(events.find((e) => e.kind === 'message' && e.message.id === plain.id).message.signature, undefined);
});

test('a badly signed write is refused with 400 naming the problem, before anything is appended', async (t) => {
  const s = await startServer(t);
  const a = await signer(s, 'careful');
  const topic = await ok(s.post('/api/topics', { title: 'T' }, a.token), 201);
  const fields = { clientId: 'm-1', content: 'hello', replyTo: null, topicId: topic.id };
  const body = (signature) => ({ topicId: topic.id, content: 'hello', clientId: 'm-1', signature });
  const head = async () => (await ok(s.get(`/api/messages?topicId=${topic.id}`, a.token))).messages.length;

  const expected = writeString('message', a.originId, a.id, a.keyId, fields);
  const wrongText = await s.post('/api/messages', body(a.signature('message', { ...fields, content: 'hello!' })), a.token);
  assert.equal(wrongText.status, 400);
  assert.equal(wrongText.body.code, 'VALIDATION');
  assert.ok(wrongText.body.error.startsWith(`signature.value: not the Ed25519 signature of your key ${a.keyId} over the UTF-8 string ${JSON.stringify(expected)}`), wrongText.body.error);
  const otherKey = await s.post('/api/messages', body({ keyId: a.keyId, value: keyPair().sign(expected) }), a.token);
  assert.match(otherKey.body.error, /^signature\.value: not the Ed25519 signature/);
  const unknown = await s.post('/api/messages', body({ keyId: 'key_999999', value: a.key.sign(expected) }), a.token);
  assert.equal(unknown.status, 400);
  assert.match(unknown.body.error, /^signature\.keyId: you have no key "key_999999".*sign with your active key key_/);
  const malformed = await s.post('/api/messages', body({ keyId: a.keyId, value: 'short' }), a.token);
  assert.equal(malformed.status, 400);
  assert.match(malformed.body.error, /signature\/value|signature\.value/);
  const missing = await s.post('/api/messages', body({ value: a.key.sign(expected) }), a.token);
  assert.equal(missing.status, 400);
  assert.match(missing.body.error, /keyId/);
  // Another agent's key cannot sign for you, even with a valid signature of its own.
  const b = await signer(s, 'mallory');
  const stolen = await s.post('/api/messages', body({ keyId: b.keyId, value: b.key.sign(writeString('message', a.originId, a.id, b.keyId, fields)) }), a.token);
  assert.match(stolen.body.error, /^signature\.keyId: you have no key/);
  const badTopic = await s.post('/api/topics', { title: 'X', signature: a.signature('topic', { roomId: 'commons', title: 'Y' }) }, a.token);
  assert.equal(badTopic.status, 400);
  assert.ok(badTopic.body.error.includes(JSON.stringify(writeString('topic', a.originId, a.id, a.keyId, { roomId: 'commons', title: 'X' }))));
  assert.equal(await head(), 0, 'nothing was appended');
  assert.equal((await ok(s.get('/api/topics', a.token))).length, 1);
});

test('rotation and revocation: old signatures still verify against the key history, a rotated or revoked key signs nothing new; exports verify offline and forgeries are refused', async (t) => {
  const s = await startServer(t);
  const a = await signer(s, 'rotator');
  const topic = await ok(s.post('/api/topics', { title: 'History' }, a.token), 201);
  const post = (content, clientId, signature) => s.post('/api/messages', { topicId: topic.id, content, clientId, signature }, a.token);
  const f = (content, clientId) => ({ clientId, content, replyTo: null, topicId: topic.id });

  await ok(post('by key one', 'k1', a.signature('message', f('by key one', 'k1'))), 201);
  const k2 = keyPair();
  const rotated = await ok(s.post('/api/me/keys/rotate', { keyId: a.keyId, publicKey: k2.publicKey, proof: k2.sign(possess(a.originId, a.id, k2.publicKey)), endorsement: a.key.sign(rotate(a.originId, a.id, a.keyId, k2.publicKey)) }, a.token));
  const old = await post('old key', 'k1b', a.signature('message', f('old key', 'k1b')));
  assert.equal(old.status, 400);
  assert.match(old.body.error, new RegExp(`^signature\\.keyId: ${a.keyId} was rotated \\(replaced by ${rotated.id}.*sign with your active key ${rotated.id}`));
  await ok(post('by key two', 'k2', a.signature('message', f('by key two', 'k2'), k2, rotated.id)), 201);
  await ok(post('erase me', 'k2e', a.signature('message', f('erase me', 'k2e'), k2, rotated.id)), 201);
  await ok(s.post('/api/me/keys/revoke', { keyId: rotated.id }, a.token));
  const revoked = await post('after revocation', 'k2b', a.signature('message', f('after revocation', 'k2b'), k2, rotated.id));
  assert.equal(revoked.status, 400);
  assert.match(revoked.body.error, new RegExp(`^signature\\.keyId: ${rotated.id} is revoked .*register one with POST /api/me/keys`));

  // Erasure: the placeholder carries no signature; the rest of the export still verifies.
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const messages = (await ok(s.get(`/api/messages?topicId=${topic.id}`, a.token))).messages;
  const toErase = messages.find((m) => m.clientId === 'k2e');
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: toErase.id }, reason: 'test' }, op.token), 201);
  const erased = (await ok(s.get(`/api/messages?messageId=${toErase.id}`, a.token))).messages[0];
  assert.equal(erased.erased, true);
  assert.equal(erased.signature, undefined, 'a placeholder drops the signature over text it no longer holds');

  const key = (await ok(s.get('/api/status'))).checkpointKey;
  const page = await ok(s.get(`/api/exchange?topicId=${topic.id}`, a.token));
  assert.deepEqual(page.keys[a.id].map((k) => [k.id, k.state]), [[a.keyId, 'rotated'], [rotated.id, 'revoked']], 'the export carries the signer\'s key history');
  const summary = await verifyExportOffline([page], key);
  assert.equal(summary.signed, 2);
  assert.deepEqual(summary.revokedKeys, [rotated.id], 'a signature by a key revoked later still verifies, and is reported');
  const dir = tempDir(t);
  const file = (name, p) => { const path = join(dir, name); writeFileSync(path, JSON.stringify(p)); return path; };
  const good = await s.cli('verify-export', file('good.json', page), '--key', key);
  assert.equal(good.code, 0, good.stderr);
  assert.equal(good.json.signed, 2);

  // A changed key history (not covered by the log's hashes) is refused: its signatures no longer hold.
  const forgedHistory = structuredClone(page);
  forgedHistory.keys[a.id][1].endorsement = keyPair().sign('x');
  const h = await s.cli('verify-export', file('history.json', forgedHistory), '--key', key);
  assert.equal(h.code, 1);
  assert.match(h.stderr, /endorsement is not key_\d+'s signature over the rotate string/);
  await assert.rejects(verifyExportOffline([forgedHistory], key), /endorsement/);
  const swapped = structuredClone(page);
  swapped.keys[a.id][0].publicKey = keyPair().publicKey;
  assert.match((await s.cli('verify-export', file('swapped.json', swapped), '--key', key)).stderr, /proof is not its public key's signature/);

  // A tampered signature in the record breaks the hash binding.
  const i = page.records.findIndex((r) => r.canonicalJson.includes('"by key two"'));
  const tamperedSig = structuredClone(page);
  rewriteRecord(tamperedSig.records[i], (rec) => { rec.signature.value = a.key.sign('anything'); });
  const ts = await s.cli('verify-export', file('sig.json', tamperedSig), '--key', key);
  assert.equal(ts.code, 1);
  assert.match(ts.stderr, /does not hash to the proof's entry/);

  // A forger who holds the checkpoint key and rewrites the record, re-chaining it and re-signing
  // the checkpoint, still cannot make the author's signature hold over the changed text.
  const forger = keyPair();
  const forged = forgeRecord(page, i, (rec) => { rec.content = 'by key two, changed'; }, forger);
  const r = forged.records[0];
  const forgerKey = `ed25519:${forger.publicKey}`;
  const fc = await s.cli('verify-export', file('forged.json', forged), '--key', forgerKey);
  assert.equal(fc.code, 1, 'the chain and the checkpoint hold; the author\'s signature does not');
  assert.match(fc.stderr, new RegExp(`record ${r.seq}: signature\\.value is not key ${rotated.id}'s signature over the record's signed string .*the text or the signature was changed`));
  await assert.rejects(verifyExportOffline([forged], forgerKey), /the text or the signature was changed/);
});

/** The official A2A client over HTTP+JSON with `token`. */
async function a2aClient(baseUrl, token) {
  const fetchImpl = createAuthenticatingFetchWithRetry(fetch, { headers: async () => ({ Authorization: `Bearer ${token}` }), shouldRetryWithHeaders: async () => undefined });
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new RestTransportFactory({ fetchImpl })] });
  return new ClientFactory(options).createFromUrl(baseUrl);
}

/** Sends one A2A action; resolves to its data part {action, status, result}. */
async function act(client, action, input) {
  const reply = await client.sendMessage({
    tenant: '',
    message: { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'data', value: { action, input } }, metadata: undefined, filename: '', mediaType: 'application/json' }], metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration: undefined,
    metadata: undefined,
  });
  return reply.parts[0].content.value;
}

test('an A2A message (official A2A client) and an MCP tool call (official MCP client) submit signed writes, carry signatures back, and are refused when badly signed', async (t) => {
  const s = await startServer(t);
  const a = await signer(s, 'multi');
  const topic = await ok(s.post('/api/topics', { title: 'Bindings' }, a.token), 201);
  const f = (content, clientId) => ({ clientId, content, replyTo: null, topicId: topic.id });

  const a2a = await a2aClient(s.url, a.token);
  const sent = await act(a2a, 'post', { topicId: topic.id, content: 'via a2a', clientId: 'a2a-1', signature: a.signature('message', f('via a2a', 'a2a-1')) });
  assert.equal(sent.status, 201);
  assert.ok(verifies(a.key.publicKey, writeString('message', a.originId, a.id, a.keyId, f('via a2a', 'a2a-1')), sent.result.signature.value));
  const a2aTopic = await act(a2a, 'topic', { title: 'A2A topic', signature: a.signature('topic', { roomId: 'commons', title: 'A2A topic' }) });
  assert.equal(a2aTopic.result.signature.keyId, a.keyId);
  await assert.rejects(
    act(a2a, 'post', { topicId: topic.id, content: 'via a2a', clientId: 'a2a-2', signature: a.signature('message', f('via a2a', 'a2a-1')) }),
    (err) => err instanceof A2AError && err.statusCode === 400 && err.message.includes('agent-forum-write-v1'),
  );
  const read = await act(a2a, 'read', { q: 'via a2a', limit: 10 });
  assert.deepEqual(read.result.messages[0].signature, sent.result.signature);

  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${a.token}` } } });
  const mcp = new Client({ name: 'signed-writes-test', version: '1.0.0' });
  await mcp.connect(transport);
  t.after(() => mcp.close());
  const tools = (await mcp.listTools()).tools;
  assert.ok(tools.find((x) => x.name === 'forum_post_message').inputSchema.properties.signature, 'the tool input takes a signature');
  const posted = await mcp.callTool({ name: 'forum_post_message', arguments: { topicId: topic.id, content: 'via mcp', clientId: 'mcp-1', signature: a.signature('message', f('via mcp', 'mcp-1')) } });
  assert.ok(!posted.isError, posted.content?.[0]?.text);
  assert.ok(verifies(a.key.publicKey, writeString('message', a.originId, a.id, a.keyId, f('via mcp', 'mcp-1')), posted.structuredContent.signature.value));
  const bad = await mcp.callTool({ name: 'forum_post_message', arguments: { topicId: topic.id, content: 'via mcp!', clientId: 'mcp-2', signature: a.signature('message', f('via mcp', 'mcp-2')) } });
  assert.ok(bad.isError);
  assert.match(bad.content[0].text, /signature\.value: not the Ed25519 signature.*\[VALIDATION\]/s);
  const msgs = await mcp.callTool({ name: 'forum_read_messages', arguments: { topicId: topic.id } });
  assert.deepEqual(msgs.structuredContent.messages.find((m) => m.clientId === 'mcp-1').signature, posted.structuredContent.signature);
  assert.equal((await ok(s.get(`/api/messages?topicId=${topic.id}`, a.token))).messages.length, 2, 'the refused writes appended nothing');
});

test('the reader shows "signed by key …" on a signed post and the author\'s key history on the profile', async (t) => {
  if (chromiumOrSkip(t, 'the signed-post reader check')) return;
  const s = await startServer(t);
  const a = await signer(s, 'reader-signer');
  const reader = await s.register('reader');
  const topic = await ok(s.post('/api/topics', { title: 'Shown signed' }, a.token), 201);
  const signed = await ok(s.post('/api/messages', { topicId: topic.id, content: 'Signed.', clientId: 's1', signature: a.signature('message', { clientId: 's1', content: 'Signed.', replyTo: null, topicId: topic.id }) }, a.token), 201);
  const plain = await ok(s.post('/api/messages', { topicId: topic.id, content: 'Not signed.', clientId: 's2' }, a.token), 201);

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const page = await (await browser.newContext({ serviceWorkers: 'block' })).newPage();
  await page.goto(`${s.url}/`);
  await page.locator('#token').fill(reader.token);
  await page.locator('#token').press('Enter');
  await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 15_000 });
  await page.goto(`${s.url}/#/topic/${topic.id}`);
  const mark = page.locator(`#h-${signed.id} a.signed`);
  await mark.waitFor({ timeout: 10_000 });
  assert.equal(await mark.innerText(), `signed by key ${a.keyId}`);
  assert.equal(await mark.getAttribute('href'), `#/agent/${a.id}`);
  assert.equal(await page.locator(`#h-${plain.id} a.signed`).count(), 0, 'an unsigned post says nothing');
  await mark.click();
  const key = page.locator('ul.profile-keys > li');
  await key.first().waitFor({ timeout: 10_000 });
  assert.equal(await key.getAttribute('data-id'), a.keyId);
  assert.equal(await key.locator('code').innerText(), a.key.publicKey);
  assert.match(await key.innerText(), /active/);
});
