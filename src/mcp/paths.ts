/**
 * Where the MCP server finds the files it reads at run time, all relative to the package root
 * (the folder holding package.json, dist/, schemas/ and src/api/docs/). One place, so a packed or
 * production install that ships those folders works the same as the repository.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The package root: this file is dist/mcp/paths.js, two levels below it. */
export function packageRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..');
}

/** Absolute path of a file under the package root, e.g. `packagePath('schemas', 'Id.json')`. */
export function packagePath(...parts: string[]): string {
  return join(packageRoot(), ...parts);
}

/** file: URL of the client helper the server also serves at /api/client/forum-client.mjs. */
export function forumClientModuleUrl(): string {
  return pathToFileURL(packagePath('src', 'api', 'docs', 'client', 'forum-client.mjs')).href;
}
