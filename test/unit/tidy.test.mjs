/**
 * Tidy checks (TigerBeetle's src/tidy.zig): rules of the tree that review kept having to enforce,
 * now enforced by `npm test` — the layering (nothing under src/domain or src/store imports from
 * src/http, nothing under src/store from src/domain; src/errors.ts imports nothing of ours; no
 * import circle anywhere in src/), the `// @ts-check` browser and client JavaScript type-checked
 * (scripts/lint/check-js.mjs, a few seconds) and comments that tell history instead of why. Each check names the file and line it refuses. The
 * ESLint rule set and the dead-export check (knip) are `npm run lint`, which CI runs beside
 * `npm test` (.ci/run): at about 100 s they would outlast the rest of the quick tier (issue 52).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkJs } from '../../scripts/lint/check-js.mjs';

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

/** `import … from '…'`, `export … from '…'` (type-only ones too) and `import '…'`. */
const IMPORT = /^\s*(?:import|export)\b(?:[^'"]*?from\s+|\s+)'([^']+)'/gm;
/** `import('…')` with a literal specifier, outside comment lines. */
const DYNAMIC_IMPORT = /\bimport\(\s*'([^']+)'\s*\)/g;

/** The import specifiers in TypeScript source `text`, static and dynamic (comment lines are skipped for the dynamic ones). */
function specifiersOf(text) {
  const code = text
    .split('\n')
    .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
    .join('\n');
  return [...text.matchAll(IMPORT), ...code.matchAll(DYNAMIC_IMPORT)].map((m) => m[1]);
}

/** The relative imports of a file, resolved to repo paths (…/x.js → …/x.ts). */
function importsOf(file) {
  const out = [];
  for (const specifier of specifiersOf(readFileSync(join(ROOT, file), 'utf8'))) {
    if (!specifier.startsWith('.')) continue;
    out.push(relative(ROOT, join(ROOT, file, '..', specifier)).replace(/\.js$/, '.ts'));
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

/**
 * The import circles of `graph` (file → the files it imports): its strongly connected components
 * (Tarjan) of more than one file, and files that import themselves. Each circle is sorted, so a
 * failure names every file in it.
 */
function importCircles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const circles = [];
  const visit = (v) => {
    index.set(v, index.size);
    low.set(v, index.get(v));
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v).includes(v)) circles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return circles;
}

test('no import circle among the files of src/ (type-only and dynamic imports count)', () => {
  const graph = new Map(tsFiles(SRC).map((file) => [file, importsOf(file)]));
  assert.deepEqual(importCircles(graph), []);
});

test('the import-circle check names every file of a circle, a self-import, and no file merely on a path into one', () => {
  const graph = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts', 'd.ts']],
    ['d.ts', []],
    ['e.ts', ['a.ts', 'e.ts']],
    ['f.ts', ['g.ts']],
    ['g.ts', []],
  ]);
  assert.deepEqual(importCircles(graph), [['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
});

test('the import scan sees type-only, multi-line, re-exported, side-effect and dynamic imports, not ones in comments', () => {
  const text = [
    "import type { A } from './a.js';",
    'import {',
    '  b,',
    "} from './b.js';",
    "export { c } from './c.js';",
    "import './d.js';",
    "const e = await import('./e.js');",
    "/** Loaded with import('./f.js') when needed. */",
    "// import('./g.js')",
  ].join('\n');
  assert.deepEqual(specifiersOf(text).sort(), ['./a.js', './b.js', './c.js', './d.js', './e.js']);
});

/** Every .js and .mjs file under `dir` that asks to be type-checked (`// @ts-check`), as repo paths. */
function tsCheckedJs(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsCheckedJs(p));
    else if (/\.m?js$/.test(name) && /^\s*\/\/ @ts-check\b/m.test(readFileSync(p, 'utf8'))) out.push(relative(ROOT, p));
  }
  return out;
}

test('the // @ts-check browser and client JavaScript type-checks (scripts/lint/check-js.mjs), and every such file is checked', () => {
  const { files, diagnostics } = checkJs();
  assert.deepEqual(diagnostics, []);
  assert.deepEqual(tsCheckedJs(SRC).filter((f) => !files.includes(f)), []);
  assert.ok(files.includes('src/api/docs/client/forum-client.mjs') && files.includes('src/api/web/assets/app.mjs'));
});

/** Lines a file in src/ may have (issue 52), unless docs/internals/architecture.md names it. */
const FILE_LINES_MAX = 700;

test('no file in src/ is over 700 lines except the one-idea files docs/internals/architecture.md names', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'internals', 'architecture.md'), 'utf8');
  const list = doc.slice(doc.indexOf('<!-- long files -->'));
  const named = new Set([...list.slice(0, list.indexOf('\n\n', list.indexOf('\n- '))).matchAll(/^- `([^`]+)`/gm)].map((m) => m[1]));
  assert.ok(named.size > 0, 'the list of long files is in docs/internals/architecture.md');
  const long = tsFiles(SRC)
    .map((f) => ({ f: f.split('\\').join('/'), n: readFileSync(join(ROOT, f), 'utf8').split('\n').length }))
    .filter(({ f, n }) => n > FILE_LINES_MAX && !named.has(f))
    .map(({ f, n }) => `${f} (${n} lines)`);
  assert.deepEqual(long, [], 'split them along their seams, or name them with their one idea in docs/internals/architecture.md');
});
