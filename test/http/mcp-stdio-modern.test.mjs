/**
 * MCP 2026-07-28 over stdio (issue 54), black-box: `node dist/mcp.js` and the one-file bundle
 * (`dist/agent-forum-mcp.mjs`, run from an empty folder), spawned by the official SDK 2.x client's
 * own StdioClientTransport (`@modelcontextprotocol/client` 2.4.0, pinned to the revision: no
 * initialize, the `_meta` envelope on every request), beside an SDK 1.32.2 client (2025-11-25)
 * on the same binary: the connection's first message picks the era (src/mcp/stdio-eras.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { MCP_CACHE_TTL_MS } from '../../dist/constants.js';
import { ROOT, register, startServer } from '../helpers/server.mjs';

const REVISION = '2026-07-28';
const MCP_JS = join(ROOT, 'dist', 'mcp.js');

/** The bundle copied into an empty folder (no package resolvable from it); removed after the test. */
function bundleAlone(t) {
  const dir = mkdtempSync(join(tmpdir(), 'forum-mcp-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'agent-forum-mcp.mjs');
  copyFileSync(join(ROOT, 'dist', 'agent-forum-mcp.mjs'), file);
  return { file, dir };
}

/** Spawns `script` with `env` through the 2.x client's stdio transport, pinned to 2026-07-28; closed after the test. */
async function modern(t, script, env, cwd) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [script], env: { PATH: process.env.PATH, ...env }, cwd, stderr: 'pipe' });
  const client = new Client({ name: 'stdio-modern-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: REVISION } } });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

/** Spawns `script` with `env` through SDK 1.32.2's stdio transport (initialize, 2025-11-25); closed after the test. */
async function legacy(t, script, env, cwd) {
  const transport = new LegacyStdioTransport({ command: process.execPath, args: [script], env: { PATH: process.env.PATH, ...env }, cwd, stderr: 'pipe' });
  const client = new LegacyClient({ name: 'stdio-legacy-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

/** A tool call that must succeed, with a complete result; its structuredContent. */
async function call(client, name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name} failed: ${r.content?.map((c) => c.text).join(' | ')}`);
  assert.deepEqual(JSON.parse(r.content[1].text), r.structuredContent, `${name}: the text block holds the result JSON`);
  return r.structuredContent;
}

for (const form of ['dist/mcp.js', 'the one-file bundle']) {
  test(`${form} serves a 2026-07-28 client over stdio with the 2025 tools in the same order, and a 2025-11-25 client on the same binary`, async (t) => {
    const server = await startServer(t);
    const a = await register(server, 'stdio-modern-alice');
    const b = await register(server, 'stdio-modern-bob');
    const where = form === 'dist/mcp.js' ? { file: MCP_JS, dir: undefined } : bundleAlone(t);
    const alice = await modern(t, where.file, { FORUM_URL: server.url, FORUM_TOKEN: a.token }, where.dir);
    const old = await legacy(t, where.file, { FORUM_URL: server.url, FORUM_TOKEN: b.token }, where.dir);

    const listed = await alice.listTools();
    assert.equal(listed.ttlMs, MCP_CACHE_TTL_MS, 'a 2026-07-28 result: cache hints');
    assert.equal(listed.cacheScope, 'private');
    const oldListed = await old.listTools();
    assert.ok(oldListed.ttlMs === undefined, 'the 2025 answer is SDK 1.32.2\'s, without 2026-07-28 fields');
    assert.deepEqual(listed.tools, oldListed.tools, 'same tools, order, schemas and annotations on both eras');

    assert.equal((await call(alice, 'forum_whoami')).id, a.id);
    const topic = await call(alice, 'forum_open_topic', { title: 'Over stdio, 2026-07-28' });
    const first = await call(alice, 'forum_post_message', { topicId: topic.id, content: 'hello from the new revision' });
    const reply = (await old.callTool({ name: 'forum_post_message', arguments: { topicId: topic.id, content: 'and from 2025', replyTo: first.id } })).structuredContent;
    assert.ok(JSON.stringify((await call(alice, 'forum_inbox')).entries).includes(reply.id), 'the 2025 client\'s reply is in the 2026 client\'s inbox');
    const rest = (await server.get('/api/topics', a.token)).body;
    assert.deepEqual(rest.map((x) => [x.id, x.authorId]), [[topic.id, a.id]]);

    const bad = await alice.callTool({ name: 'forum_search', arguments: { q: ['a', 'b'] } }).then(
      () => assert.fail('invalid arguments were accepted'),
      (err) => err,
    );
    assert.equal(bad.code, -32602, 'argument checks hold on 2026-07-28 over stdio');

    const resources = await alice.listResources();
    assert.deepEqual(resources.resources.map((r) => r.uri), (await old.listResources()).resources.map((r) => r.uri));
    const guide = await alice.readResource({ uri: 'forum://guides/start.md' });
    assert.ok(guide.contents[0].text.includes(server.url), 'read from the forum, with its URL');

    // stdio has no feed to follow: listen is acknowledged with nothing honoured (the SDK keeps it until the client closes it).
    const sub = await alice.listen({ resourceSubscriptions: ['forum://inbox'] });
    assert.deepEqual(sub.honoredFilter, {});
    await sub.close();
    assert.equal(await sub.closed, 'local');
    assert.equal((await call(alice, 'forum_whoami')).id, a.id, 'the connection serves on after the listen');
  });
}

test('over stdio on 2026-07-28 forum_register keeps the new token for the session, and --read-only selects the tools as on 2025', async (t) => {
  const server = await startServer(t);
  const client = await modern(t, MCP_JS, { FORUM_URL: server.url });
  const registration = await call(client, 'forum_register', { name: 'stdio-modern-new', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true });
  assert.equal((await call(client, 'forum_whoami')).id, registration.id);
  const readOnly = await modern(t, MCP_JS, { FORUM_URL: server.url, FORUM_TOKEN: registration.token }, undefined);
  const transport = new StdioClientTransport({ command: process.execPath, args: [MCP_JS, '--read-only'], env: { PATH: process.env.PATH, FORUM_URL: server.url, FORUM_TOKEN: registration.token }, stderr: 'pipe' });
  const ro = new Client({ name: 'stdio-modern-ro', version: '1.0.0' }, { versionNegotiation: { mode: { pin: REVISION } } });
  await ro.connect(transport);
  t.after(() => ro.close());
  const all = (await readOnly.listTools()).tools;
  const reads = (await ro.listTools()).tools;
  assert.ok(reads.length > 0 && reads.length < all.length);
  assert.ok(reads.every((x) => x.annotations.readOnlyHint === true), 'only read tools');
});
