/**
 * The official MCP test tools in npm test (issue 26), black-box against the built server:
 *
 * - @modelcontextprotocol/conformance (pinned devDependency, the latest release) runs its server
 *   scenarios of the 2025 revisions against POST /mcp. Its client sends no Authorization header,
 *   so a loopback forwarding proxy adds the agent's bearer token (the token never goes into a
 *   URL). The scenarios that do not apply are listed, each with its reason, in
 *   test/fixtures/mcp-conformance-baseline.yml; the suite fails on any other failure and on a
 *   baseline entry that starts passing.
 * - The same suite's newest pre-release (devDependency alias `mcp-conformance-next`), the first
 *   with scenarios for the 2026-07-28 revision, runs every one of them (`--suite all`) against
 *   POST /mcp; each check it does not pass (failure or warning) must be listed, with its reason,
 *   in test/fixtures/mcp-conformance-2026-baseline.json, and no listed check may pass.
 * - The MCP Inspector's CLI (@modelcontextprotocol/inspector-cli, the package the Inspector's
 *   `--cli` mode runs) drives `node dist/mcp.js` over stdio, and /mcp over HTTP.
 *
 * Version notes: conformance 0.1.14 and later import fs.globSync (Node 22); on Node 20 they run
 * with test/helpers/conformance-node20.mjs preloaded, which supplies it from the glob package. The
 * Inspector CLI resolves its own package.json relative to the working directory, so it runs with
 * its build folder as cwd.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { authProxy } from '../helpers/prefix-proxy.mjs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, register, startServer, tempDir } from '../helpers/server.mjs';

const execFileP = promisify(execFile);
const CONFORMANCE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const CONFORMANCE_NEXT = join(ROOT, 'node_modules', 'mcp-conformance-next', 'dist', 'index.js');
const NODE20_SHIM = join(ROOT, 'test', 'helpers', 'conformance-node20.mjs');
const BASELINE_2026 = join(ROOT, 'test', 'fixtures', 'mcp-conformance-2026-baseline.json');
const INSPECTOR_DIR = join(ROOT, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build');
const BASELINE = join(ROOT, 'test', 'fixtures', 'mcp-conformance-baseline.yml');
const MCP_JS = join(ROOT, 'dist', 'mcp.js');

/** Runs a node script; resolves to { code, stdout, stderr } whatever the exit code. */
async function run(args, opts = {}) {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, args, { maxBuffer: 16 << 20, timeout: 180_000, ...opts });
    return { code: 0, stdout, stderr };
  } catch (err) {
    return { code: err.code, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

test('the official MCP conformance suite passes against /mcp except the documented baseline', async (t) => {
  const server = await startServer(t);
  const agent = await register(server, 'conformance');
  const base = await authProxy(t, server.url, agent.token);
  const out = tempDir(t, 'mcp-conformance-');
  const r = await run(['--import', NODE20_SHIM, CONFORMANCE, 'server', '--url', `${base}/mcp`, '--expected-failures', BASELINE, '-o', out], { cwd: out });
  assert.equal(r.code, 0, `conformance failed:\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-2000)}`);
  for (const scenario of ['server-initialize', 'tools-list', 'tools-call-error', 'resources-list', 'dns-rebinding-protection', 'ping']) {
    assert.match(r.stdout, new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`), `${scenario} passes`);
  }
});

test('the MCP conformance scenarios of the 2026-07-28 revision pass against /mcp except the documented checks', async (t) => {
  const server = await startServer(t);
  const agent = await register(server, 'conformance-2026');
  const base = await authProxy(t, server.url, agent.token);
  const out = tempDir(t, 'mcp-conformance-2026-');
  // Exits 1 while any check fails; what counts is each check's result, compared below.
  const r = await run(['--import', NODE20_SHIM, CONFORMANCE_NEXT, 'server', '--suite', 'all', '--spec-version', '2026-07-28', '--url', `${base}/mcp`, '-o', out], { cwd: out });
  const results = new Map();
  for (const dir of readdirSync(out)) {
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
    results.set(scenario, JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')));
  }
  assert.ok(results.size >= 30, `the suite ran its 2026-07-28 scenarios (${results.size} ran):\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-2000)}`);
  const baseline = JSON.parse(readFileSync(BASELINE_2026, 'utf8'));
  const unexpected = [];
  const passing = [];
  for (const [scenario, checks] of results) {
    for (const c of checks) {
      const listed = baseline[scenario]?.[c.id] !== undefined;
      const bad = c.status === 'FAILURE' || c.status === 'WARNING';
      if (bad && !listed) unexpected.push(`${scenario}/${c.id} ${c.status}: ${c.errorMessage ?? ''}`);
      if (!bad && listed) passing.push(`${scenario}/${c.id} ${c.status}`);
    }
  }
  for (const [scenario, checks] of Object.entries(baseline)) {
    if (scenario === '_about') continue;
    for (const id of Object.keys(checks)) if (!results.get(scenario)?.some((c) => c.id === id)) passing.push(`${scenario}/${id} (not run)`);
  }
  assert.deepEqual(unexpected, [], 'every check that fails or warns is in the 2026 baseline');
  assert.deepEqual(passing, [], 'no baseline entry passes or is gone (remove it from the baseline)');
  for (const scenario of ['server-stateless', 'http-header-validation', 'caching', 'tools-list', 'tools-call-error', 'resources-list', 'dns-rebinding-protection']) {
    assert.ok(results.get(scenario)?.some((c) => c.status === 'SUCCESS'), `${scenario} has passing checks`);
  }
});

/** Runs the Inspector CLI with `args`; resolves to the parsed JSON it prints. */
async function inspector(args, env = {}) {
  const r = await run([join(INSPECTOR_DIR, 'index.js'), ...args], { cwd: INSPECTOR_DIR, env: { PATH: process.env.PATH ?? '', ...env } });
  assert.equal(r.code, 0, `inspector ${args.join(' ')} failed: ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout);
}

test('the MCP Inspector CLI lists and calls the tools and reads the resources of dist/mcp.js over stdio, and of /mcp over HTTP', async (t) => {
  const server = await startServer(t);
  const agent = await register(server, 'inspector');
  const env = { FORUM_URL: server.url, FORUM_TOKEN: agent.token };
  const stdio = [process.execPath, MCP_JS];

  const { tools } = await inspector([...stdio, '--method', 'tools/list'], env);
  assert.ok(tools.length >= 25, `${tools.length} tools`);
  for (const tool of tools) {
    assert.ok(tool.title && tool.annotations && tool.outputSchema, `${tool.name}: title, annotations, outputSchema`);
  }
  const me = await inspector([...stdio, '--method', 'tools/call', '--tool-name', 'forum_whoami'], env);
  assert.equal(me.structuredContent.id, agent.id);
  assert.equal(JSON.parse(me.content[1].text).id, agent.id, 'the JSON is also in the text content');
  const topic = await inspector([...stdio, '--method', 'tools/call', '--tool-name', 'forum_open_topic', '--tool-arg', 'title=From the Inspector'], env);
  assert.match(topic.structuredContent.id, /^tp_/);
  const refused = await inspector([...stdio, '--method', 'tools/call', '--tool-name', 'forum_post_message', '--tool-arg', `topicId=${topic.structuredContent.id}`, 'content=   '], env);
  assert.equal(refused.isError, true);
  assert.match(refused.content[0].text, /Invalid input/);
  const { resources } = await inspector([...stdio, '--method', 'resources/list'], env);
  assert.equal(resources.length, 4);
  const guide = await inspector([...stdio, '--method', 'resources/read', '--uri', 'forum://guides/start.md'], env);
  assert.match(guide.contents[0].text, /register/i);

  const overHttp = await inspector([`${server.url}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${agent.token}`, '--method', 'tools/call', '--tool-name', 'forum_whoami']);
  assert.equal(overHttp.structuredContent.id, agent.id);
});
