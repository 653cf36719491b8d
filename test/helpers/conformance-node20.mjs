/**
 * Lets the MCP conformance suite run on this project's Node 20 floor (test/http/mcp-conformance.test.mjs
 * passes it to `node --import`). @modelcontextprotocol/conformance 0.1.14 and later import
 * `globSync` from `fs`, which Node added in 22 (its tier-check summary uses it; the `server`
 * command we run does not). On a Node without `fs.globSync` this registers a resolve hook that
 * gives the conformance package — and only it — a `fs` module that is `node:fs` plus glob's
 * `globSync` (the pinned `glob` devDependency, same call shape: pattern, `{ cwd }`). On Node 22
 * and later it does nothing.
 */
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') register('./conformance-node20-hooks.mjs', import.meta.url);
