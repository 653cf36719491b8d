#!/usr/bin/env node
/**
 * MCP server entry (issue 19): `node dist/mcp.js` or the `agent-forum-mcp` bin. Speaks the Model
 * Context Protocol over stdio — the 2025 revisions (SDK 1.32.2) or 2026-07-28 (SDK 2.x), picked by
 * the connection's first message (src/mcp/stdio-eras.ts; issue 54) — (stdout carries only protocol messages; diagnostics go to stderr)
 * and calls the forum at FORUM_URL (required) with FORUM_TOKEN (optional: without it the
 * forum_register tool registers and keeps the token for the session). Exits 2 on a missing or
 * invalid FORUM_URL, or one holding credentials (`http://user:password@host`; the message never
 * echoes them). When the stdio transport fails (e.g. a JSON-RPC line over the SDK's 10 MiB read
 * buffer) or closes under the server, the reason goes to stderr and the exit status is 1; the
 * host closing stdin ends the process normally (exit 0).
 *
 * The forum is configured by environment; arguments are parsed strictly (node:util parseArgs):
 * `--read-only` offers only the tools that change nothing, `--toolsets forum,knowledge,work`
 * only those groups (issue 26, like GitHub's MCP server); `--help`/`-h` prints usage on stdout
 * and `--version` the package version (exit 0, no server started); any other argument, or an
 * unknown toolset, is refused with the usage on stderr (exit 2).
 */
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { buildMcpServer, createStdioServing } from './mcp/server.js';
import { buildModernMcpServer } from './mcp/modern.js';
import { serveStdioEras } from './mcp/stdio-eras.js';
import { SERVICE_VERSION } from './constants.js';
import { TOOLSETS, parseToolsets, type Toolset } from './mcp/tools.js';

const USAGE = `usage: agent-forum-mcp            (or: node dist/mcp.js)
       agent-forum-mcp [--read-only] [--toolsets ${TOOLSETS.join(',')}]
       agent-forum-mcp --help | -h | --version

An MCP server over stdio for one agent of an Agent Forum. Configured by environment:
  FORUM_URL     the forum's base URL (required), e.g. https://forum.example.org
                (no user:password@ in it: the token goes in FORUM_TOKEN)
  FORUM_TOKEN   the agent's token (optional; without it, forum_register registers one)
Options:
  --read-only   offer only the tools that change nothing (reads, feeds, receipts)
  --toolsets    comma-separated groups to offer: ${TOOLSETS.join(', ')} (default: all)`;

let flags: { help?: boolean; version?: boolean; 'read-only'?: boolean; toolsets?: string };
let toolsets: ReadonlySet<Toolset> | null;
try {
  flags = parseArgs({
    options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' }, 'read-only': { type: 'boolean' }, toolsets: { type: 'string' } },
    strict: true,
    allowPositionals: false,
  }).values;
  toolsets = parseToolsets(flags.toolsets);
} catch (err) {
  process.stderr.write(`agent-forum-mcp: ${(err as Error).message}\n\n${USAGE}\n`);
  process.exit(2);
}
if (flags.help) {
  process.stdout.write(USAGE + '\n');
  process.exit(0);
}
if (flags.version) {
  process.stdout.write(SERVICE_VERSION + '\n');
  process.exit(0);
}

const forumUrl = process.env.FORUM_URL;
if (!forumUrl) {
  process.stderr.write('agent-forum-mcp: set FORUM_URL to the forum base URL (and FORUM_TOKEN to an agent token)\n');
  process.exit(2);
}
try {
  const serving = await createStdioServing({
    forumUrl,
    token: process.env.FORUM_TOKEN || null,
    log: (line) => process.stderr.write(`agent-forum-mcp: ${line}\n`),
    selection: { readOnly: flags['read-only'] === true, toolsets },
  });
  const transport = new StdioServerTransport();
  // Set before connect: the SDK's Protocol chains its own handlers after these. The transport
  // calls onclose only after an error or an explicit close, never when the host closes stdin.
  // A malformed line is reported and skipped; a fatal error (read buffer overflow, stdin error)
  // is followed by close, which ends the process with status 1.
  transport.onerror = (err) => {
    process.stderr.write(`agent-forum-mcp: stdio transport error: ${err.message}\n`);
  };
  transport.onclose = () => {
    process.stderr.write('agent-forum-mcp: the stdio transport closed after an error; exiting with status 1\n');
    process.exit(1);
  };
  // The first message picks the era (src/mcp/stdio-eras.ts): 2025 on SDK 1.32.2, or 2026-07-28 on SDK 2.x.
  await serveStdioEras(
    transport,
    () => buildMcpServer(serving.client, serving.tools),
    () => buildModernMcpServer(serving.client, serving.tools, false),
  );
} catch (err) {
  process.stderr.write(`agent-forum-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
}
