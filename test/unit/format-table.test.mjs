/**
 * The format table of docs/internals/formats.md (issue 52) is the one list of every on-disk and
 * bucket format tag and version: each row must match the exported constant it names (imported
 * from the build, dist/), and every format constant exported by src/store/** or src/constants.ts
 * must be in a row, so a new or bumped format cannot go undocumented.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/server.mjs';

const PAGE = join(ROOT, 'docs/internals/formats.md');
const DIST = join(ROOT, 'dist');

/** Constants of src/constants.ts named *FORMAT* that are API response formats, not files (docs/api). */
const RESPONSE_FORMATS = new Set(['CATALOG_FORMAT', 'CATALOG_BRIEF_FORMAT']);

/** Cells of a markdown table row, trimmed, without surrounding backticks. */
const cells = (line) => line.slice(1, -1).split(' | ').map((c) => c.trim().replace(/^`(.*)`$/, '$1'));

/**
 * The rows of the table after the `format table` marker in `text`, as
 * {where, tag, version, constant, module}; '—' cells become null. Throws when there is no table.
 */
function parseFormatTable(text) {
  const lines = text.split('\n');
  const marker = lines.findIndex((l) => l.startsWith('<!-- format table'));
  assert.ok(marker >= 0, 'the page has a format table marker');
  const header = cells(lines[marker + 1]);
  assert.deepEqual(header.slice(0, 5), ['where', 'tag', 'version', 'constant', 'module']);
  const rows = [];
  for (const line of lines.slice(marker + 3)) {
    if (!line.startsWith('|')) break;
    const [where, tag, version, constant, module] = cells(line).map((c) => (c === '—' ? null : c));
    rows.push({ where, tag, version: version === null ? null : Number(version), constant, module });
  }
  return rows;
}

/** The problems of `rows` against the modules' exports (`exportsOf(module)` → namespace), as sentences. */
async function rowProblems(rows, exportsOf) {
  const problems = [];
  for (const row of rows) {
    if (row.constant === null) {
      if (row.tag !== null || row.version !== null) problems.push(`${row.where}: a tag or version without a constant`);
      continue;
    }
    const ns = await exportsOf(row.module);
    if (!(row.constant in ns)) {
      problems.push(`${row.where}: ${row.module} exports no ${row.constant}`);
      continue;
    }
    const value = ns[row.constant];
    if (typeof value === 'number') {
      if (row.tag !== null) problems.push(`${row.where}: ${row.constant} is a number, the tag cell must be —`);
      if (row.version !== value) problems.push(`${row.where}: version ${row.version}, but ${row.constant} = ${value}`);
    } else {
      const v = /-v(\d+)$/.exec(String(value));
      if (row.tag !== value) problems.push(`${row.where}: tag ${row.tag}, but ${row.constant} = ${value}`);
      else if (v === null || Number(v[1]) !== row.version) problems.push(`${row.where}: version ${row.version} does not match the tag ${value}`);
    }
  }
  return problems;
}

const exportsOf = (module) => import(pathToFileURL(join(DIST, `${module}.js`)).href);

/** Every built module under dist/store, as a module name (`store/replica/format`). */
function storeModules(dir = join(DIST, 'store')) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    if (d.isDirectory()) return storeModules(join(dir, d.name));
    return d.name.endsWith('.js') ? [relative(DIST, join(dir, d.name)).replace(/\.js$/, '')] : [];
  });
}

test('every row of the format table matches the exported constant it names', async () => {
  const rows = parseFormatTable(readFileSync(PAGE, 'utf8'));
  assert.ok(rows.length >= 8, `the table has its rows (${rows.length})`);
  assert.deepEqual(await rowProblems(rows, exportsOf), []);
});

test('every format constant of src/store and src/constants.ts is in the format table', () => {
  const documented = new Set(parseFormatTable(readFileSync(PAGE, 'utf8')).map((r) => `${r.module}.${r.constant}`));
  const missing = [];
  // Read the built files rather than importing them: worker entry points run when imported.
  for (const module of ['constants', ...storeModules()]) {
    const text = readFileSync(join(DIST, `${module}.js`), 'utf8');
    for (const [, name] of text.matchAll(/^export const ([A-Z0-9_]*FORMAT[A-Z0-9_]*) =/gm)) {
      if (module === 'constants' && RESPONSE_FORMATS.has(name)) continue;
      if (!documented.has(`${module}.${name}`)) missing.push(`${module}.${name}`);
    }
  }
  assert.deepEqual(missing, [], 'add a row to docs/internals/formats.md for each');
});

test('the format check is honest: a stale version, a wrong tag and an unknown constant are reported', async () => {
  const table = [
    '<!-- format table -->',
    '| where | tag | version | constant | module | across versions |',
    '|---|---|---|---|---|---|',
    '| snapshot | `agent-forum-state-v7` | 7 | `SNAPSHOT_FORMAT` | `store/snapshot` | x |',
    '| shards | — | 2 | `NGRAM_FORMAT_VERSION` | `constants` | x |',
    '| nothing | `x-v1` | 1 | `NO_SUCH_FORMAT` | `store/meta` | x |',
    '| log | `agent-forum-log-v1` | 1 | `LOG_FORMAT` | `store/meta` | x |',
  ].join('\n');
  const problems = await rowProblems(parseFormatTable(table), exportsOf);
  assert.equal(problems.length, 3, problems.join('\n'));
  assert.match(problems[0], /snapshot: tag agent-forum-state-v7, but SNAPSHOT_FORMAT = agent-forum-state-v\d+/);
  assert.match(problems[1], /shards: version 2, but NGRAM_FORMAT_VERSION = 3/);
  assert.match(problems[2], /exports no NO_SUCH_FORMAT/);
});
