/**
 * The error table of docs/operate/observability.md ("Errors, request ids and logs") is the
 * catalogue people read: it
 * must list every code src/errors.ts can render, each with the status it is rendered with, and
 * no code the source does not know (issue 34: OPERATOR_ONLY was missing).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ERROR_CATALOGUE } from '../../dist/errors.js';

const PAGE = readFileSync(fileURLToPath(new URL('../../docs/operate/observability.md', import.meta.url)), 'utf8');

/** The rows of the page's table headed `| code | status | meaning |`, as code → status. */
function docErrorTable() {
  const lines = PAGE.split('\n');
  const start = lines.findIndex((l) => l.trim() === '| code | status | meaning |');
  assert.ok(start >= 0, 'docs/operate/observability.md has an error table');
  const rows = new Map();
  for (const line of lines.slice(start + 2)) {
    const m = /^\| `([A-Z_]+)` \| (\d{3}) \|/.exec(line);
    if (m === null) break;
    assert.ok(!rows.has(m[1]), `${m[1]} is listed once`);
    rows.set(m[1], Number(m[2]));
  }
  return rows;
}

test('the error table of docs/operate/observability.md lists every error code of src/errors.ts with the status it is rendered with, and nothing else', () => {
  const table = docErrorTable();
  const source = new Map(Object.entries(ERROR_CATALOGUE).map(([code, e]) => [code, e.status]));
  assert.deepEqual([...table.keys()].sort(), [...source.keys()].sort());
  for (const [code, status] of source) assert.equal(table.get(code), status, `${code}'s status`);
});
