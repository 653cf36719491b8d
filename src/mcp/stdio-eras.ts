/**
 * One stdio connection of the MCP server (src/mcp.ts), on either era (issue 54): the 2025
 * revisions on SDK 1.32.2, or MCP 2026-07-28 on the 2.x SDK's `serveStdio`.
 * The connection's first message decides, as the 2.x SDK's own stdio entry decides (its
 * `classifyOpeningMessage`): a message carrying the per-request envelope claim
 * (`params._meta["io.modelcontextprotocol/protocolVersion"]`) opens a 2026-07-28 connection; an
 * `initialize` without it, or any other claim-less message, a 2025 one. The era is then pinned
 * for the connection, and every later message goes to the same server.
 *
 * Why not `serveStdio` for both: its 2025 leg is a 2.x server, whose answers differ from SDK
 * 1.32.2's (docs/api/mcp.md "Why two SDKs"), and its own stdio transport ends the process
 * differently when stdin closes. Here the wire stays SDK 1.32.2's `StdioServerTransport` (the
 * same line framing, read buffer bound and close behaviour), and each era's server is connected
 * to a thin channel over it, so a 2025 client reads the bytes SDK 1.32.2 writes.
 *
 * On 2026-07-28 the stdio server declares no `resources.subscribe`: it has no feed to follow (it
 * calls the forum's REST API per tool call), so `subscriptions/listen` is acknowledged with
 * nothing honoured (the SDK's stdio entry keeps it until the client closes it); the feeds are
 * polled with the tools as on the 2025 revisions.
 */
import type { Transport as LegacyTransport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage as LegacyMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Server as LegacyServer } from '@modelcontextprotocol/sdk/server/index.js';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Server as ModernServer, Transport as ModernTransport, JSONRPCMessage as ModernMessage } from '@modelcontextprotocol/server';

/** The envelope claim's `_meta` key (MCP 2026-07-28 "Per-request metadata"). */
const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';

/** Whether `message` carries the 2026-07-28 envelope claim (any value: `serveStdio` validates it). */
function claimsModernEra(message: unknown): boolean {
  const params = (message as { params?: unknown } | null)?.params;
  const meta = params !== null && typeof params === 'object' ? (params as { _meta?: unknown })._meta : undefined;
  return meta !== null && typeof meta === 'object' && PROTOCOL_VERSION_META in meta;
}

/** A transport that forwards what its server sends to `wire` and is handed what the wire receives. */
class Channel {
  onmessage?: (message: never) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  constructor(private readonly wire: LegacyTransport) {}

  async start(): Promise<void> {}

  async send(message: unknown): Promise<void> {
    await this.wire.send(message as LegacyMessage);
  }

  async close(): Promise<void> {
    await this.wire.close();
  }

  deliver(message: unknown): void {
    (this.onmessage as ((m: unknown) => void) | undefined)?.(message);
  }
}

/**
 * Serves `wire` (SDK 1.32.2's StdioServerTransport, its onerror/onclose already set by the
 * caller): at the first message, connects `legacy()` (2025) or `serveStdio(modern, strict)`
 * (2026-07-28) to a channel over the wire, and delivers that message and every later one to it.
 * Resolves once the wire has started.
 */
export async function serveStdioEras(wire: LegacyTransport, legacy: () => LegacyServer, modern: () => ModernServer): Promise<void> {
  const channel = new Channel(wire);
  let pinned = false;
  const queued: unknown[] = [];
  let ready = false;
  wire.onmessage = (message) => {
    if (!pinned) {
      pinned = true;
      if (claimsModernEra(message)) {
        serveStdio(() => modern(), { legacy: 'reject', transport: channel as unknown as ModernTransport });
        ready = true;
      } else {
        void legacy()
          .connect(channel as unknown as LegacyTransport)
          .then(() => {
            ready = true;
            for (const m of queued.splice(0)) channel.deliver(m);
          });
        queued.push(message);
        return;
      }
    }
    if (!ready) queued.push(message);
    else channel.deliver(message as ModernMessage);
  };
  await wire.start();
}
