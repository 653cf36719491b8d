/**
 * Tokens an agent manages itself (issue 53; docs/api/tokens.md), black-box: the built server as
 * a real process, spoken to over HTTP (REST, A2A, and MCP through the official SDK client).
 * Rotation stops the old secret at once, a named token works until revoked, the list never shows
 * a secret, a read-only token is refused every write on every binding, the number of named tokens
 * is bounded, and every change is one record (hash only) that survives restarts and is listed in
 * the operator's action log.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AGENT_TOKENS_MAX } from '../../dist/constants.js';
import { startServer } from '../helpers/server.mjs';
import { folderText } from '../helpers/files.mjs';
import { fromSnapshotThenReplay } from '../helpers/snapshot.mjs';

const sha256 = (s) => createHash('sha256').update(s).digest('hex');
const A2A = { 'a2a-version': '1.0' };

/** The status of an authenticated read with `token`. */
const readStatus = async (s, token) => (await s.get('/api/rooms', token)).status;

/** Creates a named token; asserts 201 and resolves to the answer's body. */
async function createToken(s, token, name, scopes) {
  const r = await s.post('/api/me/tokens', { name, scopes }, token);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}

/** A2A message:send with one data part. */
function a2a(s, token, action, input) {
  const data = input === undefined ? { action } : { action, input };
  return s.post('/a2a/message:send', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data, mediaType: 'application/json' }] } }, token, A2A);
}

test('an agent rotates its own token: the old secret gets 401 at once, the new one (shown once) works as the same agent with the same id, name and scopes', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('rotator');

  const rotated = await s.post('/api/me/tokens/rotate', {}, agent.token);
  assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
  assert.equal(rotated.body.id, 'primary', '{} rotates the token the request was made with');
  assert.deepEqual(rotated.body.scopes, ['read', 'write']);
  assert.match(rotated.body.token, /^af_/);
  assert.notEqual(rotated.body.token, agent.token);
  assert.equal(await readStatus(s, agent.token), 401, 'the old registration token is refused as soon as the rotation answered');
  const me = await s.get('/api/me', rotated.body.token);
  assert.equal(me.status, 200);
  assert.equal(me.body.id, agent.id, 'same identity');
  const again = await s.post('/api/me/tokens/rotate', {}, agent.token);
  assert.equal(again.status, 401, 'the old secret cannot rotate either');

  // A named token, rotated by id from another token: same id, name and scopes, new secret.
  const named = await createToken(s, rotated.body.token, 'ci', ['read']);
  const byId = await s.post('/api/me/tokens/rotate', { tokenId: named.id }, rotated.body.token);
  assert.equal(byId.status, 200, JSON.stringify(byId.body));
  assert.deepEqual([byId.body.id, byId.body.name, byId.body.scopes, byId.body.current], [named.id, 'ci', ['read'], false]);
  assert.equal(await readStatus(s, named.token), 401, "the named token's old secret is refused");
  assert.equal(await readStatus(s, byId.body.token), 200);

  const unknown = await s.post('/api/me/tokens/rotate', { tokenId: 'tk_0000009999' }, rotated.body.token);
  assert.equal(unknown.status, 404);
  assert.match(unknown.body.error, /tokenId: you have no token "tk_0000009999"/);
  // Another agent's token is not yours to rotate.
  const other = await s.register('other');
  const foreign = await s.post('/api/me/tokens/rotate', { tokenId: named.id }, other.token);
  assert.equal(foreign.status, 404);
  assert.equal(await readStatus(s, byId.body.token), 200, "another agent's attempt changed nothing");
});

test('a named token authenticates as its agent until it is revoked, then gets 401; the registration token cannot be revoked, only rotated', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('holder');
  const named = await createToken(s, agent.token, '  deploy bot  ', ['write', 'read']);
  assert.match(named.id, /^tk_[0-9]+$/);
  assert.equal(named.name, 'deploy bot', 'the name is trimmed');
  assert.deepEqual(named.scopes, ['read', 'write'], 'scopes in one order');
  assert.equal(named.lastUsed, null);
  assert.match(named.token, /^af_/);

  const topic = await s.post('/api/topics', { title: 'written with a named token' }, named.token);
  assert.equal(topic.status, 201, JSON.stringify(topic.body));
  assert.equal(topic.body.authorId, agent.id, 'a named token writes as its agent');

  const revoked = await s.post('/api/me/tokens/revoke', { tokenId: named.id }, agent.token);
  assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
  assert.equal(revoked.body.id, named.id);
  assert.equal(revoked.body.token, undefined, 'a revocation shows no secret');
  assert.equal(await readStatus(s, named.token), 401, 'the revoked token is refused at once');
  assert.equal((await s.post('/api/topics', { title: 'x' }, named.token)).status, 401);
  const twice = await s.post('/api/me/tokens/revoke', { tokenId: named.id }, agent.token);
  assert.equal(twice.status, 404, 'a revoked token is gone');

  const primary = await s.post('/api/me/tokens/revoke', { tokenId: 'primary' }, agent.token);
  assert.equal(primary.status, 400);
  assert.match(primary.body.error, /tokenId: "primary" is your registration token, which cannot be revoked; rotate it/);
  assert.equal(await readStatus(s, agent.token), 200);

  // A token may revoke itself; and a disabled agent's named tokens are refused like its registration token.
  const self = await createToken(s, agent.token, 'self', ['read', 'write']);
  const bySelf = await s.post('/api/me/tokens/revoke', { tokenId: self.id }, self.token);
  assert.equal(bySelf.status, 200);
  assert.equal(bySelf.body.current, true);
  assert.equal(await readStatus(s, self.token), 401);
  const kept = await createToken(s, agent.token, 'kept', ['read']);
  assert.equal((await s.cli('agents', 'disable', agent.id)).code, 0);
  assert.equal(await readStatus(s, kept.token), 401, "a disabled agent's named token gets 401");
  assert.equal((await s.cli('agents', 'enable', agent.id)).code, 0);
  assert.equal(await readStatus(s, kept.token), 200);
});

test('the token list shows id, name, scopes, created and last used of every live token, never a secret or its hash', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('lister');
  const reader = await createToken(s, agent.token, 'reader', ['read']);
  const writer = await createToken(s, agent.token, 'writer', ['read', 'write']);
  const gone = await createToken(s, agent.token, 'gone', ['read']);
  assert.equal((await s.post('/api/me/tokens/revoke', { tokenId: gone.id }, agent.token)).status, 200);
  assert.equal(await readStatus(s, reader.token), 200);

  const list = await s.get('/api/me/tokens', writer.token);
  assert.equal(list.status, 200, JSON.stringify(list.body));
  assert.equal(list.body.max, AGENT_TOKENS_MAX);
  assert.deepEqual(
    list.body.tokens.map((x) => [x.id, x.name, x.scopes, x.current]),
    [
      ['primary', 'registration', ['read', 'write'], false],
      [reader.id, 'reader', ['read'], false],
      [writer.id, 'writer', ['read', 'write'], true],
    ],
    'the registration token first, then the named tokens in creation order; the revoked one is gone',
  );
  for (const x of list.body.tokens) {
    assert.deepEqual(Object.keys(x).sort(), ['created', 'current', 'id', 'lastUsed', 'name', 'scopes']);
    assert.ok(!Number.isNaN(Date.parse(x.created)));
  }
  assert.notEqual(list.body.tokens[1].lastUsed, null, 'the reader token was used');
  assert.notEqual(list.body.tokens[2].lastUsed, null, 'the writer token is being used');
  const text = JSON.stringify(list.body);
  for (const secret of [agent.token, reader.token, writer.token, gone.token]) {
    assert.ok(!text.includes(secret), 'no secret in the list');
    assert.ok(!text.includes(sha256(secret)), 'no hash in the list');
  }
  // Each agent sees only its own tokens.
  const other = await s.register('other');
  assert.deepEqual((await s.get('/api/me/tokens', other.token)).body.tokens.map((x) => x.id), ['primary']);
});

test('a read-only token reads but is refused every write with 403 TOKEN_SCOPE, over REST, A2A and MCP, and nothing is written', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('scoped');
  const topic = await s.post('/api/topics', { title: 'a topic' }, agent.token);
  assert.equal(topic.status, 201);
  const ro = await createToken(s, agent.token, 'read only', ['read']);

  // REST: reads work; every write route refuses, naming the rule.
  for (const path of ['/api/topics', '/api/me', '/api/me/tokens', `/api/messages?topicId=${topic.body.id}`, '/api/work', '/api/changes']) {
    assert.equal((await s.get(path, ro.token)).status, 200, `GET ${path}`);
  }
  const writes = [
    ['/api/topics', { title: 'refused' }],
    ['/api/messages', { topicId: topic.body.id, content: 'refused', clientId: 'c1' }],
    ['/api/knowledge', { title: 'refused', content: 'refused', category: 'opinion' }],
    ['/api/work', { clientId: 'w1', title: 'refused', description: 'd', acceptanceCriteria: 'a' }],
    ['/api/flags', { target: { type: 'topic', id: topic.body.id }, reason: 'spam', clientId: 'f1' }],
    ['/api/me/tokens', { name: 'escalate', scopes: ['read', 'write'] }],
    ['/api/me/tokens/rotate', {}],
    ['/api/me/tokens/revoke', { tokenId: ro.id }],
  ];
  for (const [path, body] of writes) {
    const r = await s.post(path, body, ro.token);
    assert.equal(r.status, 403, `POST ${path}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, 'TOKEN_SCOPE');
    assert.match(r.body.error, new RegExp(`this token's scopes are \\["read"\\]: POST ${path.replace(/\//g, '\\/')} is a write and needs scope "write"`));
  }
  // Even an invalid body is refused for the scope first: the token may not write at all.
  assert.equal((await s.post('/api/topics', { nope: 1 }, ro.token)).body.code, 'TOKEN_SCOPE');

  // A2A: a read action answers; a write action is PERMISSION_DENIED with reason TOKEN_SCOPE.
  const read = await a2a(s, ro.token, 'read', { topicId: topic.body.id });
  assert.equal(read.status, 200, JSON.stringify(read.body));
  const a2aWrite = await a2a(s, ro.token, 'topic', { title: 'refused over A2A' });
  assert.equal(a2aWrite.status, 403, JSON.stringify(a2aWrite.body));
  assert.equal(a2aWrite.body.error.status, 'PERMISSION_DENIED');
  assert.equal(a2aWrite.body.error.details[0].reason, 'TOKEN_SCOPE');
  const a2aPost = await a2a(s, ro.token, 'post', { topicId: topic.body.id, content: 'refused', clientId: 'a2a-1' });
  assert.equal(a2aPost.status, 403);

  // MCP over HTTP with the SDK client: a read tool answers; a write tool is a tool error naming TOKEN_SCOPE.
  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${ro.token}` } } });
  const client = new Client({ name: 'tokens-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const topics = await client.callTool({ name: 'forum_list_topics', arguments: {} });
  assert.ok(!topics.isError, topics.content?.[0]?.text);
  const open = await client.callTool({ name: 'forum_open_topic', arguments: { title: 'refused over MCP' } });
  assert.ok(open.isError, 'a write tool with a read-only token is a tool error');
  assert.match(open.content[0].text, /\[TOKEN_SCOPE\]/);

  // Nothing of the refused writes was written; the registration token still writes.
  const all = await s.get('/api/topics', agent.token);
  assert.deepEqual(all.body.map((x) => x.title), ['a topic']);
  assert.equal((await s.get('/api/me/tokens', agent.token)).body.tokens.length, 2, 'no token was created, rotated away or revoked');
  assert.equal(await readStatus(s, ro.token), 200);
  assert.equal((await s.post('/api/topics', { title: 'written' }, agent.token)).status, 201);
});

test(`an agent holds at most AGENT_TOKENS_MAX (${AGENT_TOKENS_MAX}) named tokens: the next gets 409 CREDENTIAL_LIMIT until one is revoked; names and scopes are checked`, async (t) => {
  const s = await startServer(t);
  const agent = await s.register('collector');
  const made = [];
  for (let i = 0; i < AGENT_TOKENS_MAX; i++) made.push(await createToken(s, agent.token, `t${i}`, ['read']));
  const over = await s.post('/api/me/tokens', { name: 'one too many', scopes: ['read'] }, agent.token);
  assert.equal(over.status, 409, JSON.stringify(over.body));
  assert.equal(over.body.code, 'CREDENTIAL_LIMIT');
  assert.match(over.body.error, new RegExp(`tokens: at most ${AGENT_TOKENS_MAX} named tokens per agent`));
  assert.equal((await s.post('/api/me/tokens/revoke', { tokenId: made[3].id }, agent.token)).status, 200);
  await createToken(s, agent.token, 'fits again', ['read']);
  assert.equal((await s.post('/api/me/tokens', { name: 'over again', scopes: ['read'] }, agent.token)).status, 409);
  // Another agent has its own allowance.
  const other = await s.register('other');
  await createToken(s, other.token, 'mine', ['read']);

  const invalid = [
    [{ name: '', scopes: ['read'] }, /name/],
    [{ name: '   ', scopes: ['read'] }, /name/],
    [{ name: 'x'.repeat(81), scopes: ['read'] }, /name/],
    [{ name: 'w', scopes: ['write'] }, /scopes/],
    [{ name: 'w', scopes: [] }, /scopes/],
    [{ name: 'w', scopes: ['read', 'admin'] }, /scopes/],
    [{ name: 'w', scopes: ['read', 'read'] }, /scopes/],
    [{ name: 'w' }, /scopes/],
    [{ name: 'w', scopes: ['read'], extra: 1 }, /extra/],
  ];
  for (const [body, field] of invalid) {
    const r = await s.post('/api/me/tokens', body, other.token);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.error, field, JSON.stringify(body));
  }
});

test('every token change is one record holding the hash, never the secret; tokens survive restarts from the snapshot and from the log; the operator action log lists each change', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('durable');
  const op = (await s.cli('operator', 'create', '--name', 'Ops')).json;
  const keep = await createToken(s, agent.token, 'keep', ['read']);
  const drop = await createToken(s, agent.token, 'drop', ['read', 'write']);
  const rotated = (await s.post('/api/me/tokens/rotate', { tokenId: keep.id }, agent.token)).body;
  assert.equal((await s.post('/api/me/tokens/revoke', { tokenId: drop.id }, agent.token)).status, 200);
  const primary = (await s.post('/api/me/tokens/rotate', {}, agent.token)).body;
  assert.match(primary.token, /^af_/);

  const actions = await s.get('/api/admin/actions', op.token);
  assert.equal(actions.status, 200, JSON.stringify(actions.body));
  const mine = actions.body.actions.filter((a) => a.action.startsWith('tokens.'));
  assert.deepEqual(
    mine.map((a) => [a.action, a.target, a.agentId, a.operatorId]),
    [
      ['tokens.rotate', `token primary of ${agent.id}`, agent.id, null],
      ['tokens.revoke', `token ${drop.id} of ${agent.id}`, agent.id, null],
      ['tokens.rotate', `token ${keep.id} of ${agent.id}`, agent.id, null],
      ['tokens.create', `token ${drop.id} of ${agent.id}`, agent.id, null],
      ['tokens.create', `token ${keep.id} of ${agent.id}`, agent.id, null],
    ],
    'newest first, one entry per change',
  );

  const expected = async () => [
    await readStatus(s, agent.token),
    await readStatus(s, primary.token),
    await readStatus(s, keep.token),
    await readStatus(s, rotated.token),
    await readStatus(s, drop.token),
    JSON.stringify((await s.get('/api/me/tokens', primary.token)).body.tokens.map((x) => [x.id, x.name, x.scopes, x.created])),
    (await s.post('/api/topics', { title: 'scoped' }, rotated.token)).status,
  ];
  const before = await expected();
  assert.deepEqual(before.slice(0, 5), [401, 200, 401, 200, 401]);
  assert.equal(before[6], 403, 'the kept token is still read-only');

  await s.stop();
  const stored = folderText(s.dataDir);
  for (const type of ['agent.token_create', 'agent.token_rotate', 'agent.token_revoke']) {
    const n = stored.split(`"${type}"`).length - 1;
    assert.equal(n, type === 'agent.token_revoke' ? 1 : 2, `${type}: one record per change`);
  }
  for (const secret of [keep.token, drop.token, rotated.token, primary.token]) {
    assert.ok(stored.includes(sha256(secret)), 'the records carry the hash');
    assert.ok(!stored.includes(secret), 'no secret in the data folder');
    assert.ok(!s.stdout.includes(secret) && !s.stderr.includes(secret), 'no secret in the server log');
  }

  await fromSnapshotThenReplay(s, async (from) => assert.deepEqual(await expected(), before, from));
  const after = await s.get('/api/admin/actions', op.token);
  assert.deepEqual(after.body.actions.filter((a) => a.action.startsWith('tokens.')), mine, 'the action log is rebuilt from the log');
});
