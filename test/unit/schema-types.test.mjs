/**
 * Route types come from the schemas (issue 29): src/api/route.ts derives each route's query and
 * body type with json-schema-to-ts from src/api/schema-consts.ts, which
 * scripts/build/gen-schema-types.mjs writes from schemas/*.json. These tests keep that file in step, so
 * a schema edit cannot leave the handlers' types behind (tsc then checks the handlers against it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'build', 'gen-schema-types.mjs');

function check(root) {
  return spawnSync(process.execPath, [SCRIPT, '--check', '--root', root], { encoding: 'utf8' });
}

test('the schema literals behind the route types match schemas/', () => {
  const r = check(ROOT);
  assert.equal(r.status, 0, r.stderr);
});

test('a schema edit without regenerating the route types is refused', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'schema-types-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'schemas'), join(dir, 'schemas'), { recursive: true });
  cpSync(join(ROOT, 'src', 'api'), join(dir, 'src', 'api'), { recursive: true });
  assert.equal(check(dir).status, 0, 'the copy starts in step');
  const file = join(dir, 'schemas', 'MessageInput.json');
  const schema = JSON.parse(readFileSync(file, 'utf8'));
  schema.required = schema.required.filter((f) => f !== 'clientId');
  writeFileSync(file, JSON.stringify(schema));
  const r = check(dir);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /src\/api\/schema-consts\.ts is out of date/);
});

test('a property named "description" keeps its schema (only string annotations are dropped)', () => {
  const text = readFileSync(join(ROOT, 'src', 'api', 'schema-consts.ts'), 'utf8');
  const line = text.split('\n').find((l) => l.startsWith('export const RegisterInput ='));
  assert.ok(line, 'RegisterInput is among the literals');
  assert.match(line, /"description":\{"type":"string","maxLength":500,"default":""\}/);
  assert.doesNotMatch(line, /"description":"/);
});
