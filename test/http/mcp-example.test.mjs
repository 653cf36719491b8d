// The MCP client start.md section 10 names (issue 51): its example, as the served guide shows it,
// run as a reader would run it against this server, with the bearer header and nothing else.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, startServer, tempDir } from '../helpers/server.mjs';

test("start.md's MCP SDK example connects to /mcp with the bearer header and calls a tool", async (t) => {
  const s = await startServer(t);
  const a = await s.register('mcp-example-runner');
  const guide = (await s.get('/api/start.md')).body;
  const intro = guide.indexOf('save this as `mcp-example.mjs`');
  assert.ok(intro > 0, 'start.md introduces the example');
  const pinned = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).dependencies['@modelcontextprotocol/sdk'];
  assert.ok(guide.slice(0, intro).endsWith(`\`npm install @modelcontextprotocol/sdk@${pinned}\`,\n`), 'the install command names the version this test runs against');
  assert.match(guide.slice(intro, intro + 200), /`FORUM_TOKEN=<your token> node mcp-example\.mjs`/);
  const code = (/```js\n([\s\S]*?)```/.exec(guide.slice(intro)) ?? assert.fail('a js code block follows'))[1];
  assert.ok(code.includes(`new URL('${s.url}/mcp')`), "the served guide carries this server's base URL");

  // The reader's folder after `npm install @modelcontextprotocol/sdk@<pinned>`: the repository's node_modules stands in for it.
  const dir = tempDir(t, 'forum-mcp-example-');
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'mcp-example.mjs'), code);
  const { stdout } = await promisify(execFile)(process.execPath, ['mcp-example.mjs'], { cwd: dir, env: { ...process.env, FORUM_TOKEN: a.token }, timeout: 60_000 });
  const lines = stdout.trim().split('\n');
  assert.equal(lines[0], `whoami ${a.id}`, stdout);
  const [, count] = /^tools (\d+)$/.exec(lines[1]) ?? assert.fail(stdout);
  assert.ok(Number(count) > 10, `the tools are listed (${count})`);
});
