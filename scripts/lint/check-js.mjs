/**
 * Type-checks the `// @ts-check` JavaScript that tsconfig.json does not compile (issue 52): the web
 * reader's modules (src/api/web/assets), the API docs page script (src/api/docs/ui) and the
 * published client helper (src/api/docs/client), with the options and files of
 * scripts/lint/tsconfig.checkjs.json (DOM lib, allowJs, checkJs, noEmit).
 *
 * The browser imports some modules by the URL the server serves them at, not by their place in
 * the tree; those imports resolve through SERVED below, everything else as TypeScript resolves it.
 * Run by test/unit/tidy.test.mjs; `node scripts/lint/check-js.mjs` prints the same diagnostics
 * (exit 1 when there are any).
 */
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG = join(ROOT, 'scripts/lint/tsconfig.checkjs.json');
const require = createRequire(import.meta.url);
const MARKED_TYPES = join(dirname(require.resolve('marked/package.json')), require('marked/package.json').types);

/**
 * Imports by served URL: from a module in `dir` (repo path), `specifier` is the file `file`
 * (absolute) with extension `extension`. The reader's modules are served at {base}/web/ and the
 * client helper at {base}/api/client/ (src/api/docs/routes.ts); marked.esm.js is the marked
 * package's own ES module build (src/api/web/routes.ts), checked against the package's types.
 */
const SERVED = [
  { dir: 'src/api/web/assets', specifier: '../api/client/forum-client.mjs', file: join(ROOT, 'src/api/docs/client/forum-client.mjs'), extension: ts.Extension.Mjs, external: false },
  { dir: 'src/api/web/assets', specifier: './marked.esm.js', file: MARKED_TYPES, extension: ts.Extension.Dts, external: true },
];

/**
 * The checked program: its root files (repo paths) and every diagnostic as `file:line:col: TSnnnn
 * message` (repo paths, 1-based), sorted. Takes a few seconds (the DOM lib is most of it).
 */
export function checkJs() {
  const parsed = ts.getParsedCommandLineOfConfigFile(CONFIG, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
  if (parsed === undefined) throw new Error(`cannot read ${CONFIG}`);
  const host = ts.createCompilerHost(parsed.options);
  host.resolveModuleNameLiterals = (literals, containingFile, redirected, options) =>
    literals.map((literal) => {
      const dir = relative(ROOT, dirname(containingFile));
      const served = SERVED.find((s) => s.dir === dir && s.specifier === literal.text);
      if (served !== undefined) return { resolvedModule: { resolvedFileName: served.file, extension: served.extension, isExternalLibraryImport: served.external } };
      return ts.resolveModuleName(literal.text, containingFile, options, host, undefined, redirected);
    });
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options, host, configFileParsingDiagnostics: parsed.errors });
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file === undefined || d.start === undefined) return `TS${d.code} ${text}`;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${relative(ROOT, d.file.fileName)}:${line + 1}:${character + 1}: TS${d.code} ${text}`;
  });
  return { files: parsed.fileNames.map((f) => relative(ROOT, f)).sort(), diagnostics: diagnostics.sort() };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { files, diagnostics } = checkJs();
  for (const d of diagnostics) console.log(d);
  console.log(`check-js: ${files.length} files, ${diagnostics.length} diagnostics`);
  process.exitCode = diagnostics.length === 0 ? 0 : 1;
}
