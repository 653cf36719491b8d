#!/usr/bin/env node
// Writes src/api/schema-consts.ts: every request schema a route names (schemas/<Name>.json) and
// the schemas they reference, as TypeScript `as const` literals, so that src/api/route.ts can
// derive each route's query and body type from its schema with json-schema-to-ts (issue 29).
// The literals are imported as types only: nothing of them reaches dist/ at run time.
//
// Usage: node scripts/build/gen-schema-types.mjs [--check] [--root DIR]
//   --root DIR  the repository to read and write (default: the one holding this script)
//   --check  exit 1 (and say which file) when src/api/schema-consts.ts is not what this script
//            would write; test/unit/schema-types.test.mjs runs it so a schema edit cannot leave
//            the route types behind.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const rootFlag = process.argv.indexOf('--root');
const root = rootFlag === -1 ? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..') : path.resolve(process.argv[rootFlag + 1]);
const schemasDir = path.join(root, 'schemas');
const out = path.join(root, 'src', 'api', 'schema-consts.ts');

/** Every schema by $id. */
const all = new Map();
for (const f of readdirSync(schemasDir).filter((f) => f.endsWith('.json')).sort()) {
  const s = JSON.parse(readFileSync(path.join(schemasDir, f), 'utf8'));
  all.set(s.$id ?? f.slice(0, -5), s);
}

/** The request schemas (query and body) the route table names, found in the route sources. */
function routeSchemaNames() {
  const names = new Set();
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) {
        for (const m of readFileSync(p, 'utf8').matchAll(/^\s*(?:query|body): '([A-Za-z0-9]+)',?$/gm)) names.add(m[1]);
      }
    }
  };
  walk(path.join(root, 'src', 'api'));
  return names;
}

/** `name` and every schema it references, transitively. */
function withReferences(names) {
  const seen = new Set();
  const visit = (name) => {
    if (seen.has(name)) return;
    const s = all.get(name);
    if (s === undefined) throw new Error(`schema ${name} not found in schemas/`);
    seen.add(name);
    JSON.stringify(s, (k, v) => {
      if (k === '$ref' && typeof v === 'string') visit(v);
      return v;
    });
  };
  for (const n of names) visit(n);
  return [...seen].sort();
}

/**
 * The schema without what json-schema-to-ts does not need: annotations (a string `description`;
 * a property may itself be named "description", whose schema is an object and stays), examples.
 */
function typeRelevant(s) {
  const annotation = (k, v) => (k === 'description' && typeof v === 'string') || k === 'x-example' || k === '$schema';
  return JSON.parse(JSON.stringify(s, (k, v) => (annotation(k, v) ? undefined : v)));
}

const routeNames = routeSchemaNames();
const names = withReferences(routeNames);
const lines = [
  '/**',
  ' * The request schemas of the route table and the schemas they reference, as literals for',
  ' * json-schema-to-ts (src/api/route.ts derives each route\'s query and body type from them).',
  ' * Written by scripts/build/gen-schema-types.mjs from schemas/*.json; do not edit: edit the schema and',
  ' * run the script (test/unit/schema-types.test.mjs fails while this file lags behind).',
  ' */',
];
for (const n of names) lines.push(`export const ${n} = ${JSON.stringify(typeRelevant(all.get(n)))} as const;`);
lines.push('/** Every schema above, for json-schema-to-ts to resolve `$ref`s by `$id`. */');
lines.push(`export type References = [${names.map((n) => `typeof ${n}`).join(', ')}];`);
lines.push('/** The schemas the route table names as a query or a body. */');
lines.push(`export type RouteSchemaName = ${[...routeNames].sort().map((n) => `'${n}'`).join(' | ')};`);
lines.push('');
const text = lines.join('\n');

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(out, 'utf8');
  } catch {
    // missing: reported below
  }
  if (current !== text) {
    console.error(`${path.relative(root, out)} is out of date: run node scripts/build/gen-schema-types.mjs`);
    process.exit(1);
  }
} else {
  writeFileSync(out, text);
  console.log(`wrote ${path.relative(root, out)} (${names.length} schemas)`);
}
