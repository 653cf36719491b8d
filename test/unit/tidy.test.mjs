/**
 * Tidy checks (TigerBeetle's src/tidy.zig): rules of the tree that review kept having to enforce,
 * now enforced by `npm test` — the layering (nothing under src/domain or src/store imports from
 * src/http, nothing under src/store from src/domain; src/errors.ts imports nothing of ours) and
 * comments that tell history instead of why. Each check names the file and line it refuses. The
 * ESLint rule set and the dead-export check (knip) are `npm run lint`, which CI runs beside
 * `npm test` (.ci/run): at about 100 s they would outlast the rest of the quick tier (issue 52).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');

/** Every .ts file under `dir`, as paths relative to the repo root. */
function tsFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts')) out.push(relative(ROOT, p));
  }
  return out;
}

const IMPORT = /^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm;

/** The relative import specifiers of a file, resolved to repo paths (…/x.js → …/x.ts). */
function importsOf(file) {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out = [];
  for (const m of text.matchAll(IMPORT)) {
    if (!m[1].startsWith('.')) continue;
    out.push(relative(ROOT, join(ROOT, file, '..', m[1])).replace(/\.js$/, '.ts'));
  }
  return out;
}

test('nothing under src/domain or src/store imports from src/http', () => {
  const offenders = [];
  for (const file of [...tsFiles(join(SRC, 'domain')), ...tsFiles(join(SRC, 'store'))]) {
    for (const target of importsOf(file)) if (target.startsWith('src/http/')) offenders.push(`${file} imports ${target}`);
  }
  assert.deepEqual(offenders, []);
});

test('nothing under src/store imports from src/domain (the store sits below the domain; rules it needs come as data)', () => {
  const offenders = [];
  for (const file of tsFiles(join(SRC, 'store'))) {
    for (const target of importsOf(file)) if (target.startsWith('src/domain/')) offenders.push(`${file} imports ${target}`);
  }
  assert.deepEqual(offenders, []);
});

test('the error catalogue (src/errors.ts) imports nothing of the service, so every layer can use it', () => {
  assert.deepEqual(importsOf('src/errors.ts'), []);
});

/**
 * Phrases that tell how a line came to be rather than what it guarantees; history belongs in
 * commit messages (STYLE.md "Comments and docs").
 */
const HISTORY = [/\bas before\b/i, /\bmoved from\b/i, /\bthe old `/i, /\bwas\b[^.;]*\bnow\b/i, /\bfell from\b/i, /\bas this \w+ first was\b/i, /\bused to be\b/i];

test('comments say what the code guarantees, not how it came to be ("was … now", "as before", "moved from")', () => {
  const offenders = [];
  for (const file of tsFiles(SRC)) {
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
    lines.forEach((line, i) => {
      const comment = /^\s*(\*|\/\/|\/\*\*)/.test(line) ? line : line.includes('//') ? line.slice(line.indexOf('//')) : '';
      if (comment !== '' && HISTORY.some((re) => re.test(comment))) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(offenders, []);
});
