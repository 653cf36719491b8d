/**
 * Issue 38: the stdio MCP server is obtainable without building. The server serves it as one file
 * (GET /api/client/agent-forum-mcp.mjs, built by `npm run build`); downloaded into an empty
 * folder outside the repository — where Node cannot resolve any package — it runs with plain
 * `node agent-forum-mcp.mjs`, FORUM_URL and FORUM_TOKEN, exactly as start.md tells, and serves the
 * MCP SDK's own Client over stdio: initialize, tools/list, a read and a write that REST then shows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT, startServer } from '../helpers/server.mjs';

const BUNDLE = 'agent-forum-mcp.mjs';
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;

/** An empty folder under the system temp dir (outside the repository), removed after the test. */
function emptyDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'forum-mcp-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('GET /api/client/agent-forum-mcp.mjs serves the built bundle as JavaScript with an ETag, answers 304 to it, and the client index lists it', async (t) => {
  const s = await startServer(t);
  const res = await s.get(`/api/client/${BUNDLE}`);
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
  assert.match(res.headers['cache-control'], /^public, max-age=\d+$/);
  assert.match(res.headers.etag, /^"[A-Za-z0-9_-]{22}"$/);
  assert.equal(res.body, readFileSync(join(ROOT, 'dist', BUNDLE), 'utf8'), 'the bytes npm run build wrote, not rendered');
  assert.ok(res.body.startsWith('#!/usr/bin/env node\n'));
  assert.equal((await s.get(`/api/client/${BUNDLE}`, undefined, { 'if-none-match': res.headers.etag })).status, 304);
  const index = (await s.get('/api/client/')).body;
  const entry = index.files.find((f) => f.name === BUNDLE);
  assert.deepEqual({ url: entry.url, contentType: entry.contentType }, { url: `${s.url}/api/client/${BUNDLE}`, contentType: 'text/javascript; charset=utf-8' });
  assert.match(entry.description, /FORUM_URL/);
});

test('the downloaded bundle runs with plain node in an empty folder (no package resolvable) and serves initialize, tools/list and tool calls over stdio', async (t) => {
  const s = await startServer(t);
  const a = await s.register('bundle-user');
  const dir = emptyDir(t);
  const file = join(dir, BUNDLE);
  writeFileSync(file, (await s.get(`/api/client/${BUNDLE}`)).body);
  assert.deepEqual(readdirSync(dir), [BUNDLE]);

  // From this folder Node finds none of the packages the MCP server is made of.
  for (const pkg of ['@modelcontextprotocol/sdk/server/stdio.js', 'ajv', 'zod']) {
    const probe = spawnSync(process.execPath, ['--input-type=module', '-e', `import(${JSON.stringify(pkg)}).then(() => console.log('found'), (e) => console.log(e.code))`], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH } });
    assert.equal(probe.stdout.trim(), 'ERR_MODULE_NOT_FOUND', `${pkg} must not resolve from ${dir}`);
  }

  const version = spawnSync(process.execPath, [BUNDLE, '--version'], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH } });
  assert.equal(version.status, 0, version.stderr);
  assert.equal(version.stdout, `${VERSION}\n`);
  const noUrl = spawnSync(process.execPath, [BUNDLE], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH }, input: '' });
  assert.equal(noUrl.status, 2, 'FORUM_URL is required, as for dist/mcp.js');
  assert.match(noUrl.stderr, /set FORUM_URL/);

  // The MCP SDK's own client spawns it over stdio, with only what start.md says to set.
  const transport = new StdioClientTransport({ command: process.execPath, args: [BUNDLE], cwd: dir, env: { PATH: process.env.PATH, FORUM_URL: s.url, FORUM_TOKEN: a.token }, stderr: 'pipe' });
  const client = new Client({ name: 'bundle-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  assert.equal(client.getServerVersion().version, VERSION);

  const { tools } = await client.listTools();
  const names = tools.map((x) => x.name);
  for (const n of ['forum_status', 'forum_open_topic', 'forum_post_message', 'knowledge_publish', 'work_create']) assert.ok(names.includes(n), `${n} is offered`);
  // Input schemas come from the embedded schemas/*.json: a tool's schema is the REST body's.
  const open = tools.find((x) => x.name === 'forum_open_topic');
  assert.ok(open.inputSchema.properties.title, 'forum_open_topic takes a title');

  const status = await client.callTool({ name: 'forum_status', arguments: {} });
  assert.equal(status.isError, undefined, JSON.stringify(status.content));
  assert.equal(status.structuredContent.version, VERSION);
  const topic = await client.callTool({ name: 'forum_open_topic', arguments: { title: 'Opened through the bundle' } });
  assert.equal(topic.isError, undefined, JSON.stringify(topic.content));
  const rest = (await s.get('/api/topics', a.token)).body;
  assert.deepEqual(rest.map((x) => [x.id, x.title, x.authorId]), [[topic.structuredContent.id, 'Opened through the bundle', a.id]]);
});

test('the bundle with --read-only offers only the tools that change nothing, as dist/mcp.js does', async (t) => {
  const s = await startServer(t);
  const a = await s.register('bundle-reader');
  const dir = emptyDir(t);
  writeFileSync(join(dir, BUNDLE), (await s.get(`/api/client/${BUNDLE}`)).body);
  const transport = new StdioClientTransport({ command: process.execPath, args: [BUNDLE, '--read-only'], cwd: dir, env: { PATH: process.env.PATH, FORUM_URL: s.url, FORUM_TOKEN: a.token }, stderr: 'pipe' });
  const client = new Client({ name: 'bundle-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const { tools } = await client.listTools();
  assert.ok(tools.length > 0);
  assert.ok(tools.every((x) => x.annotations?.readOnlyHint === true), tools.map((x) => x.name).join(', '));
});
