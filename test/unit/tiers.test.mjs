/**
 * The test tiers (test/tiers.mjs, issue 52) split `npm test` exactly: every test file is in one
 * tier, so `test:quick`, `test:http` and `test:slow` together run what `npm test` runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allTestFiles, missingSlowHttp, tiers } from '../tiers.mjs';
import { ROOT } from '../helpers/server.mjs';

test('every test file of npm test is in exactly one tier, and every tier has files', () => {
  const t = tiers();
  const seen = new Map();
  for (const [tier, files] of Object.entries(t)) {
    assert.ok(files.length > 0, `tier ${tier} has no files`);
    for (const f of files) seen.set(f, [...(seen.get(f) ?? []), tier]);
  }
  const twice = [...seen].filter(([, ts]) => ts.length > 1).map(([f, ts]) => `${f}: ${ts.join(', ')}`);
  assert.deepEqual(twice, [], 'files in two tiers');
  assert.deepEqual(allTestFiles().filter((f) => !seen.has(f)), [], 'files in no tier');
  assert.deepEqual([...seen.keys()].filter((f) => !allTestFiles().includes(f)), [], 'tier files npm test does not run');
});

test('the slow tier names only HTTP test files that exist', () => {
  assert.deepEqual(missingSlowHttp(), []);
});

test('the quick tier is test/unit, and package.json runs each tier through test/tiers.mjs while npm test runs every folder', () => {
  assert.ok(tiers().quick.every((f) => f.startsWith('test/unit/')));
  const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts;
  for (const tier of ['quick', 'http', 'slow']) assert.equal(scripts[`test:${tier}`], `npm run build && node test/tiers.mjs ${tier}`);
  assert.match(scripts.test, /node --test --test-concurrency=2 test\/\*\/\*\.test\.mjs$/);
});
