// The lean CLI entry (issue 51): what `node dist/cli.js` loads for each kind of command, the
// archive-command names it keeps beside src/cli/offline.ts, and its admin-socket answer parser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_JS, ROOT, startServer } from '../helpers/server.mjs';
import { offlineCommands } from '../../dist/cli/offline.js';
import { parseChannelAnswer } from '../../dist/admin/socket-path.js';

// A module-loading hook that names every module the ESM loader loads, one `LOADED <url>` line each on stderr.
const TRACE_HOOK = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module';
   register('data:text/javascript,' + encodeURIComponent("export async function load(url, ctx, next) { process.stderr.write('LOADED ' + url + '\\\\n'); return next(url, ctx); }"));`,
)}`;

/** The modules `node dist/cli.js ...args` loads, as paths relative to the checkout (node:… and packages as they are). */
function modulesLoadedBy(args) {
  const r = spawnSync(process.execPath, ['--import', TRACE_HOOK, CLI_JS, ...args], { encoding: 'utf8', cwd: ROOT });
  return {
    status: r.status,
    modules: r.stderr
      .split('\n')
      .filter((l) => l.startsWith('LOADED '))
      .map((l) => l.slice('LOADED '.length).replace(/^file:\/\/.*?\/node_modules\//, 'node_modules/').replace(`file://${ROOT}/`, '')),
  };
}

/** Modules a command that never opens the archive must not load: the app, the HTTP server, the store, undici, the AWS SDK. */
const HEAVY = /^(dist\/(app|server|service|replication)\.js|dist\/(http|store|domain|api)\/|node_modules\/(undici|@aws-sdk|ajv)\b)/;

test('--version and --help load only the CLI entry and leaf modules: no app, store, HTTP server, undici or AWS SDK', () => {
  for (const args of [['--version'], ['--help'], ['agents', '--help'], ['restore', '--help']]) {
    const { status, modules } = modulesLoadedBy(args);
    assert.equal(status, 0, args.join(' '));
    assert.ok(modules.includes('dist/cli.js'), `the trace sees the entry (${args.join(' ')})`);
    assert.deepEqual(modules.filter((m) => HEAVY.test(m)), [], `${args.join(' ')} loads nothing heavy`);
  }
});

test('a command the running server answers over its admin socket loads no more than --version does', async (t) => {
  const s = await startServer(t);
  const { status, modules } = modulesLoadedBy(['--data-dir', s.dataDir, 'agents', 'list']);
  assert.equal(status, 0);
  assert.deepEqual(modules.filter((m) => HEAVY.test(m) || m === 'dist/admin/commands.js'), []);
  assert.deepEqual(modules.filter((m) => m.startsWith('dist/')).sort(), modulesLoadedBy(['--version']).modules.filter((m) => m.startsWith('dist/')).sort());
});

test('an archive command loads the store but not the HTTP server, the app, undici or the AWS SDK', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-entry-'));
  try {
    const { modules } = modulesLoadedBy(['--data-dir', dir, 'verify']);
    assert.ok(modules.includes('dist/cli/offline.js') && modules.some((m) => m.startsWith('dist/store/')), 'verify loads the store');
    assert.deepEqual(
      modules.filter((m) => /^(dist\/(app|server|service)\.js|dist\/http\/|node_modules\/(undici|@aws-sdk)\b)/.test(m)),
      [],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the usage text lists as archive commands exactly the commands of src/cli/offline.ts', () => {
  const usage = execFileSync(process.execPath, [CLI_JS, '--help'], { encoding: 'utf8' });
  const section = usage.split('Archive commands:\n')[1]?.split('\n\n')[0] ?? '';
  // A command is its leading lower-case words (`verify`, `replication detach`), before its arguments and options.
  const commandWords = (line) => line.trim().split(' ').filter((w, i, all) => all.slice(0, i + 1).every((x) => /^[a-z][a-z-]*$/.test(x) && !x.startsWith('-'))).join(' ');
  const listed = new Set(section.split('\n').map(commandWords).filter(Boolean));
  assert.deepEqual([...listed].sort(), Object.keys(offlineCommands).sort());
});

test("an admin channel answer is read by its status line and Content-Length", () => {
  const raw = (s) => Buffer.from(s, 'latin1');
  assert.deepEqual(parseChannelAnswer(raw('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]')), { status: 200, body: '[]' });
  const body = JSON.stringify({ error: 'no agent with id "é"', code: 'NOT_FOUND' });
  const answer = parseChannelAnswer(Buffer.concat([raw(`HTTP/1.1 404 Not Found\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`), Buffer.from(body)]));
  assert.deepEqual(answer, { status: 404, body });
  assert.throws(() => parseChannelAnswer(raw('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n[]')), /not a complete HTTP\/1.1 response/, 'a cut body');
  assert.throws(() => parseChannelAnswer(raw('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n')), /Content-Length/, 'no Content-Length');
  assert.throws(() => parseChannelAnswer(raw('')), /0 bytes/, 'nothing at all');
});
