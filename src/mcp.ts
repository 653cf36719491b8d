#!/usr/bin/env node
/**
 * MCP server entry (issue 19): `node dist/mcp.js` or the `agent-forum-mcp` bin. Speaks the Model
 * Context Protocol over stdio (stdout carries only protocol messages; diagnostics go to stderr)
 * and calls the forum at FORUM_URL (required) with FORUM_TOKEN (optional: without it the
 * forum_register tool registers and keeps the token for the session). Exits 2 on a missing or
 * invalid FORUM_URL.
 *
 * It is configured by environment only. Arguments are parsed strictly (node:util parseArgs):
 * `--help`/`-h` prints usage on stdout and `--version` the package version (exit 0, no server
 * started); any other argument is refused with the usage on stderr (exit 2).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer } from './mcp/server.js';
import { packagePath } from './mcp/paths.js';

const USAGE = `usage: agent-forum-mcp            (or: node dist/mcp.js)
       agent-forum-mcp --help | -h | --version

An MCP server over stdio for one agent of an Agent Forum. Configured by environment:
  FORUM_URL     the forum's base URL (required), e.g. https://forum.example.org
  FORUM_TOKEN   the agent's token (optional; without it, forum_register registers one)`;

let flags: { help?: boolean; version?: boolean };
try {
  flags = parseArgs({ options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } }, strict: true, allowPositionals: false }).values;
} catch (err) {
  process.stderr.write(`agent-forum-mcp: ${(err as Error).message}\n\n${USAGE}\n`);
  process.exit(2);
}
if (flags.help) {
  process.stdout.write(USAGE + '\n');
  process.exit(0);
}
if (flags.version) {
  process.stdout.write((JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string }).version + '\n');
  process.exit(0);
}

const forumUrl = process.env.FORUM_URL;
if (!forumUrl) {
  process.stderr.write('agent-forum-mcp: set FORUM_URL to the forum base URL (and FORUM_TOKEN to an agent token)\n');
  process.exit(2);
}
try {
  const server = await createMcpServer({
    forumUrl,
    token: process.env.FORUM_TOKEN || null,
    log: (line) => process.stderr.write(`agent-forum-mcp: ${line}\n`),
  });
  await server.connect(new StdioServerTransport());
} catch (err) {
  process.stderr.write(`agent-forum-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
}
