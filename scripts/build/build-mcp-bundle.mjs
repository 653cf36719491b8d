#!/usr/bin/env node
/**
 * Builds dist/agent-forum-mcp.mjs (issue 38): the stdio MCP server (dist/mcp.js, compiled by tsc
 * first) as ONE file that runs with plain `node agent-forum-mcp.mjs`, no npm install and no
 * checkout: the server serves it at /api/client/agent-forum-mcp.mjs.
 *
 * esbuild bundles dist/mcp.js with its packages (@modelcontextprotocol/sdk, ajv, zod, …) and the
 * two kinds of files the server otherwise reads from the package at run time: src/mcp/paths.ts is
 * swapped for a generated module with the same exports (`schemaText`, `forumClientModule`) that
 * embeds every schemas/*.json and imports src/api/docs/client/forum-client.mjs into the bundle.
 * CommonJS packages (ajv) call `require` for Node built-ins, which an ES module does not have: the
 * banner defines it with createRequire. Run by `npm run build` after tsc; exits non-zero on an
 * esbuild error or when the bundle would still import a package (it must stand alone).
 */
import { build } from 'esbuild';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outfile = join(root, 'dist', 'agent-forum-mcp.mjs');

/** The generated stand-in for dist/mcp/paths.js: the schemas as text, the client helper imported. */
function embeddedPaths() {
  const schemas = Object.fromEntries(
    readdirSync(join(root, 'schemas'))
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => [f.slice(0, -'.json'.length), readFileSync(join(root, 'schemas', f), 'utf8')]),
  );
  const client = join(root, 'src', 'api', 'docs', 'client', 'forum-client.mjs');
  return [
    `import * as forumClient from ${JSON.stringify(client)};`,
    `const SCHEMAS = ${JSON.stringify(schemas)};`,
    'export function schemaText(name) {',
    '  const text = SCHEMAS[name];',
    "  if (text === undefined) throw new Error(`schema ${name} is not in this bundle`);",
    '  return text;',
    '}',
    'export async function forumClientModule() { return forumClient; }',
  ].join('\n');
}

const embed = {
  name: 'embed-package-files',
  setup(b) {
    b.onResolve({ filter: /^\.\/(mcp\/)?paths\.js$/ }, (args) =>
      join(args.resolveDir, args.path) === join(root, 'dist', 'mcp', 'paths.js') ? { path: 'paths', namespace: 'embedded' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'embedded' }, () => ({ contents: embeddedPaths(), loader: 'js', resolveDir: root }));
  },
};

const result = await build({
  entryPoints: [join(root, 'dist', 'mcp.js')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner: { js: "import { createRequire as __forumCreateRequire } from 'node:module'; const require = __forumCreateRequire(import.meta.url);" },
  legalComments: 'eof',
  plugins: [embed],
  metafile: true,
  logLevel: 'warning',
});

// Only Node built-ins may stay imports: anything else would need a node_modules next to the file.
const external = Object.values(result.metafile.outputs)
  .flatMap((o) => o.imports)
  .filter((i) => i.external && !i.path.startsWith('node:') && !builtinModules.includes(i.path));
if (external.length > 0) {
  console.error(`build-mcp-bundle: the bundle still imports ${external.map((i) => i.path).join(', ')}`);
  process.exit(1);
}
if (Object.keys(result.metafile.inputs).some((f) => f.endsWith('dist/mcp/paths.js'))) {
  console.error('build-mcp-bundle: dist/mcp/paths.js was bundled instead of the embedded files');
  process.exit(1);
}
const bytes = Object.values(result.metafile.outputs)[0]?.bytes ?? 0;
console.log(`build-mcp-bundle: ${outfile.slice(root.length + 1)} (${Math.round(bytes / 1024)} KiB)`);
