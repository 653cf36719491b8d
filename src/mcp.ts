#!/usr/bin/env node
/**
 * MCP server entry (issue 19): `node dist/mcp.js` or the `agent-forum-mcp` bin. Speaks the Model
 * Context Protocol over stdio (stdout carries only protocol messages; diagnostics go to stderr)
 * and calls the forum at FORUM_URL (required) with FORUM_TOKEN (optional: without it the
 * forum_register tool registers and keeps the token for the session). Exits 2 on a missing or
 * invalid FORUM_URL.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer } from './mcp/server.js';

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
