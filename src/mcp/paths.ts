/**
 * The files the stdio MCP server reads at run time, all relative to the package root (the folder
 * holding package.json, dist/, schemas/ and src/api/docs/). One place, so a packed or production
 * install that ships those folders works the same as the repository — and so the single-file
 * bundle (dist/agent-forum-mcp.mjs, issue 38) can replace this module with one that has the same
 * exports and the files embedded (scripts/build/build-mcp-bundle.mjs).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Absolute path of a file under the package root (this file is dist/mcp/paths.js, two levels below it). */
function packagePath(...parts: string[]): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', ...parts);
}

/** The text of schemas/<name>.json. Throws (ENOENT) when the file is missing: a packaging error. */
export function schemaText(name: string): string {
  return readFileSync(packagePath('schemas', `${name}.json`), 'utf8');
}

/** The client helper module the server also serves at /api/client/forum-client.mjs, imported. */
export function forumClientModule(): Promise<unknown> {
  return import(pathToFileURL(packagePath('src', 'api', 'docs', 'client', 'forum-client.mjs')).href);
}
