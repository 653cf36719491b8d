/**
 * Module resolve hook of conformance-node20.mjs: `fs` / `node:fs` imported from inside a
 * @modelcontextprotocol/conformance package (either pinned version) resolves to
 * conformance-node20-fs.mjs; every other import resolves as usual.
 */
const FS_WITH_GLOB = new URL('./conformance-node20-fs.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  const fromConformance = /\/node_modules\/(@modelcontextprotocol\/conformance|mcp-conformance-next)\//.test(context.parentURL ?? '');
  if (fromConformance && (specifier === 'fs' || specifier === 'node:fs')) return { url: FS_WITH_GLOB, shortCircuit: true };
  return next(specifier, context);
}
