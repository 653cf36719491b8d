// The Node lines we claim (issue 51): package.json `engines`, the install page's statement
// (docs/operate/install.md#nodejs-versions), and every
// locked package's own `engines`, so that `npm ci` prints no EBADENGINE on any line we claim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from '../helpers/server.mjs';

// npm's own range semantics (semver is in the lockfile, under ESLint, c8 and html-validate).
const semver = createRequire(join(ROOT, 'package.json'))('semver');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));

/** The oldest release of each line we claim: what a production install needs, and what the dev tools need. */
const RUNTIME_FLOORS = ['20.18.1', '22.16.0', '24.0.0'];
const DEVELOPMENT_FLOORS = ['20.19.0', '22.16.0', '24.0.0'];

test('package.json engines admits the lines we claim (20.18.1+, 22.16+, 24) and no older 20 or 22', () => {
  const range = pkg.engines.node;
  for (const v of [...RUNTIME_FLOORS, '20.20.2', '22.22.0', '24.8.0', '26.0.0']) assert.ok(semver.satisfies(v, range), `${v} in ${range}`);
  for (const v of ['20.18.0', '22.15.0', '18.20.0']) assert.ok(!semver.satisfies(v, range), `${v} not in ${range}`);
});

test('the install page states the same Node versions as package.json engines', () => {
  const readme = readFileSync(join(ROOT, 'docs/operate/install.md'), 'utf8');
  assert.ok(readme.includes(`\`${pkg.engines.node}\``), `docs/operate/install.md quotes engines ${pkg.engines.node}`);
  assert.match(readme, /Targets Node\.js 22 \(22\.16 or later\) and 24/);
  assert.match(readme, /need 20\.18\.1 or later/);
  assert.match(readme, /a development install\n?\s*\(`npm ci` with the dev tools[^)]*\) 20\.19 or later/);
});

test('every locked package accepts the oldest release of every line we claim: no EBADENGINE on npm ci', () => {
  const refused = [];
  for (const [where, entry] of Object.entries(lock.packages)) {
    const range = entry.engines?.node;
    if (where === '' || range === undefined) continue;
    for (const v of entry.dev ? DEVELOPMENT_FLOORS : RUNTIME_FLOORS) {
      if (!semver.satisfies(v, range)) refused.push(`${where.replace(/^node_modules\//, '')}@${entry.version} (${range}) refuses Node ${v}`);
    }
  }
  assert.deepEqual(refused, []);
});
