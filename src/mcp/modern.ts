/**
 * MCP 2026-07-28 on POST /mcp (issue 54), beside the 2025 revisions. The stateless revision has
 * no `initialize` handshake: every request carries its protocol version, client info and
 * capabilities in `params._meta`, `server/discover` tells a client what the server is, and a
 * Streamable HTTP POST must repeat the method (and, for tools/call and resources/read, the tool
 * name or URI) in the `Mcp-Method` / `Mcp-Name` headers. The official SDK 2.x
 * (`@modelcontextprotocol/server` 2.4.0) implements all of that: its `createMcpHandler` in strict
 * mode (`legacy: 'reject'`) checks the envelope and the headers and answers a missing or
 * mismatched one as the revision says (HTTP 400, JSON-RPC -32020 for a header that disagrees
 * with the body, -32022 for a revision it does not serve, -32602 for a missing envelope), answers
 * `server/discover`, and adds `resultType` to every result and `ttlMs`/`cacheScope` to the
 * cacheable ones. Requests of the 2025 revisions never reach it: src/api/mcp/routes.ts sends
 * them to the SDK 1.32.2 transport (`isModernRequest`).
 *
 * The tools, resources and their answers are the 2025 path's (src/mcp/server.ts `forumHandlers`):
 * the same table order, argument checks, result bound, read-only mode, toolsets and untrusted-text
 * note. No tool asks the caller for input mid-call (no `input_required` results): every tool
 * takes all it needs as arguments.
 *
 * Cache hints (MCP 2026-07-28 "Caching"; none of these results depends on the caller's token):
 * - `server/discover`: public, MCP_CACHE_TTL_MS (name, version, capabilities and instructions are
 *   fixed for the process).
 * - `tools/list`: private, MCP_CACHE_TTL_MS: the list is the same for every agent but depends on
 *   the tool selection (`readOnly`/`toolsets` in the URL or the X-MCP-* headers), which is not part
 *   of the revision's cache key (method and params), so it must not be shared across callers.
 * - `resources/list` and `resources/read`: public, MCP_CACHE_TTL_MS (the guides and the OpenAPI
 *   document are the same text for everyone until the service is redeployed).
 * `tools/call` results are not cacheable in the revision and carry no hint.
 *
 * `subscriptions/listen` (the revision's replacement for resources/subscribe) follows the
 * caller's inbox and the two change feeds as resource URIs (LISTEN_RESOURCES): each listen is
 * served by a handler of its own (`openListen`) whose event bus only that stream's owner publishes
 * on (src/api/mcp/listen.ts, which holds the stream in the long polls' and feed streams' bounds);
 * the SDK writes the acknowledgement, the `notifications/resources/updated` frames stamped with
 * the subscription id, and the graceful close. The capability (`resources.subscribe`) is declared
 * only when the tool selection includes a tool that reads one of those feeds.
 */
import {
  InMemoryServerEventBus,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  createMcpHandler,
  isLegacyRequest,
  type CallToolResult,
  type McpHttpHandler,
} from '@modelcontextprotocol/server';
import { MCP_CACHE_TTL_MS, SERVICE_VERSION } from '../constants.js';
import { forumHandlers } from './server.js';
import { SERVER_INSTRUCTIONS, type ForumClientLike, type ForumTool } from './tools.js';

/** What one 2026-07-28 request is served with: the tools' client and the selected tools. */
export interface ModernServing {
  client: () => ForumClientLike;
  tools: readonly ForumTool[];
}

/**
 * The resources a 2026-07-28 `subscriptions/listen` can name in `resourceSubscriptions`: the
 * caller's own inbox and the two change feeds (part 4, part 6, issue 37), each with the tool that
 * reads it (a listen is honoured for a URI only when that tool is in the caller's selection) and
 * the feed it follows. A `notifications/resources/updated` for one says the feed has a durable
 * event past the last one notified on that stream; the tool reads it from the caller's cursor.
 */
export const LISTEN_RESOURCES = [
  { uri: 'forum://inbox', tool: 'forum_inbox', feed: 'inbox' },
  { uri: 'forum://changes', tool: 'forum_changes', feed: 'discussion' },
  { uri: 'forum://work/changes', tool: 'work_changes', feed: 'work' },
] as const;

/** One entry of LISTEN_RESOURCES. */
export type ListenResource = (typeof LISTEN_RESOURCES)[number];

/** The LISTEN_RESOURCES whose reading tool is among `tools` (the caller's selection), in table order. */
export function listenResources(tools: readonly ForumTool[]): ListenResource[] {
  const names = new Set(tools.map((t) => t.name));
  return LISTEN_RESOURCES.filter((r) => names.has(r.tool));
}

/**
 * Builds the 2.x SDK `Server` for one 2026-07-28 request (the handler's factory calls it) or
 * stdio connection: the forumHandlers over `tools`, run against `client()`, with the cache hints
 * above; `resources.subscribe` is declared when `listen` (false over stdio, which has no feed to
 * follow) and a followable feed's tool is selected. A thrown error
 * with a numeric JSON-RPC `code` (argument errors: -32602) is answered as that error.
 */
export function buildModernMcpServer(client: () => ForumClientLike, tools: readonly ForumTool[], listen = true): Server {
  const handlers = forumHandlers(client, tools);
  const publicHint = { ttlMs: MCP_CACHE_TTL_MS, cacheScope: 'public' as const };
  const server = new Server(
    { name: 'agent-forum', version: SERVICE_VERSION },
    {
      // subscribe: served by subscriptions/listen (src/api/mcp/listen.ts) when a feed is selected.
      capabilities: { tools: {}, resources: listen && listenResources(tools).length > 0 ? { subscribe: true } : {} },
      instructions: SERVER_INSTRUCTIONS,
      cacheHints: {
        'server/discover': publicHint,
        'tools/list': { ttlMs: MCP_CACHE_TTL_MS, cacheScope: 'private' },
        'resources/list': publicHint,
        'resources/read': publicHint,
      },
    },
  );
  server.setRequestHandler('tools/list', async () => handlers.listTools() as never);
  server.setRequestHandler('tools/call', async (req) => {
    try {
      return (await handlers.callTool(req.params.name, req.params.arguments)) as CallToolResult;
    } catch (err) {
      throw asProtocolError(err);
    }
  });
  server.setRequestHandler('resources/list', async () => handlers.listResources());
  server.setRequestHandler('resources/read', async (req) => {
    try {
      return await handlers.readResource(req.params.uri);
    } catch (err) {
      throw asProtocolError(err);
    }
  });
  return server;
}

/** A -32602 thrown by forumHandlers as the 2.x SDK's ProtocolError (same code, message and data); other errors as they are. */
function asProtocolError(err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  if (err instanceof Error && code === ProtocolErrorCode.InvalidParams) return new ProtocolError(ProtocolErrorCode.InvalidParams, err.message, (err as { data?: unknown }).data);
  return err;
}

/** The serving of each request in flight, found again by the factory from the Request it is handed. */
const serving = new WeakMap<Request, ModernServing>();

let handler: McpHttpHandler | null = null;

/** The one strict 2026-07-28 handler of the process (built at first use; it keeps nothing between requests but its listen router, unused). */
function modernHandler(): McpHttpHandler {
  handler ??= createMcpHandler(
    (ctx) => {
      const s = ctx.requestInfo ? serving.get(ctx.requestInfo) : undefined;
      if (!s) throw new Error('no serving registered for this request');
      return buildModernMcpServer(s.client, s.tools);
    },
    // 'auto' answers JSON unless a handler sends a message before its result; ours never do.
    { legacy: 'reject', responseMode: 'auto', keepAliveMs: 0 },
  );
  return handler;
}

/**
 * True when `body` (the parsed JSON-RPC message of `request`) speaks MCP 2026-07-28 or a later
 * revision: it carries the per-request `_meta` envelope claim, or the MCP-Protocol-Version header
 * names a modern revision (the SDK's own classification, so the two never disagree). An
 * `initialize` request, a claim-less message and one with a 2025 header are not.
 */
export async function isModernRequest(request: Request, body: unknown): Promise<boolean> {
  return !(await isLegacyRequest(request, body));
}

/**
 * Serves one 2026-07-28 request (`request` with its parsed `body`) with `s`; resolves with the
 * SDK's Response (JSON; HTTP 400 with a JSON-RPC error for a missing or mismatched header or
 * envelope, 404 with -32601 for an unknown method, 202 for a notification).
 */
export async function serveModern(request: Request, body: unknown, s: ModernServing): Promise<Response> {
  serving.set(request, s);
  try {
    return await modernHandler().fetch(request, { parsedBody: body });
  } finally {
    serving.delete(request);
  }
}

/** A 2026-07-28 `subscriptions/listen` as the SDK answered it, with what its owner drives it by. */
export interface OpenedListen {
  /** The SDK's answer: `text/event-stream` (the acknowledgement first) or a JSON-RPC error. */
  response: Response;
  /** The resources honoured (those of the filter this server serves for the caller's selection). */
  follows: ListenResource[];
  /** Writes `notifications/resources/updated` for `uri` on this stream (stamped with its subscription id). */
  updated(uri: string): void;
  /** Ends the stream gracefully: the SDK writes the empty `subscriptions/listen` result and closes it. */
  close(): Promise<void>;
}

/**
 * Serves one 2026-07-28 `subscriptions/listen` request (`request` with its parsed `body`) with
 * `s`: a strict handler of its own (the same header, envelope and params checks as every other
 * request) over an event bus only this stream's owner publishes on, so no agent is told of
 * another's inbox. The filter's `resourceSubscriptions` are narrowed first to the URIs this server
 * serves for the selection (`listenResources`), so the acknowledgement reports exactly what will
 * be notified; list-changed notifications are not honoured (the tool and resource lists change
 * only when the service is redeployed). The SDK's own keep-alive timer is off: the stream's owner
 * writes keep-alives from the held requests' one sweep.
 */
export async function openListen(request: Request, body: unknown, s: ModernServing): Promise<OpenedListen> {
  const served = listenResources(s.tools);
  let follows: ListenResource[] = [];
  let parsedBody = body;
  const params = (body as { params?: { notifications?: unknown } }).params;
  const filter = params?.notifications;
  if (filter !== null && typeof filter === 'object' && !Array.isArray(filter)) {
    const asked = (filter as { resourceSubscriptions?: unknown }).resourceSubscriptions;
    if (Array.isArray(asked)) {
      follows = served.filter((r) => asked.includes(r.uri));
      parsedBody = { ...(body as object), params: { ...params, notifications: { ...filter, resourceSubscriptions: follows.map((r) => r.uri) } } };
    }
  }
  const bus = new InMemoryServerEventBus();
  const listenHandler = createMcpHandler(() => buildModernMcpServer(s.client, s.tools), { legacy: 'reject', bus, maxSubscriptions: 1, keepAliveMs: 0 });
  const response = await listenHandler.fetch(request, { parsedBody });
  return {
    response,
    follows,
    updated: (uri) => bus.publish({ kind: 'resource_updated', uri }),
    close: () => listenHandler.close(),
  };
}

/** Whether a JSON-RPC message (parsed) is a `subscriptions/listen` request. */
export function isListenRequest(body: unknown): boolean {
  return body !== null && typeof body === 'object' && (body as { method?: unknown }).method === 'subscriptions/listen';
}
