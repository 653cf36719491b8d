/**
 * Issue 20 "Install": the production way — `npm pack` (dist/ already built), unpack, install only
 * the production dependencies from the lockfile (`npm ci --omit=dev`, offline from the npm cache
 * the test run's own install filled), then run that copy's `node dist/server.js`: it serves the API
 * reference, the guides and the client helpers, and nothing of the dev tooling is installed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startServer, tempDir } from '../helpers/server.mjs';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

test('a packed copy installed with npm ci --omit=dev serves the docs, the guides, the client helpers and the web reader', { timeout: 180_000 }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'forum-install-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  // --ignore-scripts: dist/ is built by the test command already; packing must not rebuild it.
  const packed = spawnSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(packed.status, 0, packed.stderr);
  const [{ filename, files }] = JSON.parse(packed.stdout);
  const paths = files.map((f) => f.path);
  assert.ok(paths.includes('dist/server.js') && paths.includes('dist/cli.js') && paths.includes('dist/mcp.js'));
  assert.ok(paths.some((p) => p.startsWith('schemas/')) && paths.some((p) => p.startsWith('src/api/docs/guides/')));
  assert.ok(!paths.some((p) => p.startsWith('test/') || p.endsWith('.ts') && !p.endsWith('.d.ts')), 'no tests or TypeScript sources');

  const app = join(work, 'app');
  mkdirSync(app);
  const untar = spawnSync('tar', ['-xzf', join(work, filename), '-C', app, '--strip-components=1'], { encoding: 'utf8' });
  assert.equal(untar.status, 0, untar.stderr);
  copyFileSync(join(ROOT, 'package-lock.json'), join(app, 'package-lock.json'));
  const install = spawnSync(npm, ['ci', '--omit=dev', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: app, encoding: 'utf8', env: { ...process.env, SCARF_ANALYTICS: undefined } });
  assert.equal(install.status, 0, `${install.stdout}\n${install.stderr}`);
  const modules = readdirSync(join(app, 'node_modules'));
  for (const dev of ['typescript', 'c8', 'playwright-core', 'fast-check']) assert.ok(!modules.includes(dev), `${dev} (a dev dependency) is not installed`);
  assert.ok(existsSync(join(app, 'node_modules', 'undici')));

  const version = spawnSync(process.execPath, [join(app, 'dist', 'cli.js'), '--version'], { encoding: 'utf8' });
  assert.equal(version.status, 0, version.stderr);
  assert.match(version.stdout, /^\d+\.\d+\.\d+/);

  const s = await startServer(t, { dataDir: join(tempDir(t), 'data'), serverJs: join(app, 'dist', 'server.js') });
  for (const [path, type, body] of [
    ['/api/docs', /text\/html/, /swagger|openapi/i],
    ['/openapi.json', /application\/json/, /"openapi"/],
    ['/api/start.md', /text\/markdown/, /#/],
    ['/api/exchange.md', /text\/markdown/, /#/],
    ['/api/retry-budget.md', /text\/markdown/, /#/],
    ['/api/client/forum-client.mjs', /javascript/, /export/],
    ['/', /text\/html/, /<html/],
    ['/web/markdown.mjs', /javascript/, /createMarkdownRenderer/],
    ['/web/marked.esm.js', /javascript/, /marked v\d+/],
  ]) {
    const res = await s.request('GET', path, { raw: undefined });
    assert.equal(res.status, 200, path);
    assert.match(res.headers['content-type'], type, path);
    assert.match(typeof res.body === 'string' ? res.body : JSON.stringify(res.body), body, path);
  }
});
