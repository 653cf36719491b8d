/**
 * POST /mcp (issue 26): the MCP server on the public listener, over Streamable HTTP (MCP
 * 2025-06-18 and 2025-11-25 "Transports"), for hosts that connect to remote MCP servers. The same
 * tool table as the stdio server (`dist/mcp.js`; src/mcp/tools.ts), run in-process through the
 * route table (src/mcp/route-client.ts), so every tool call gets the REST route's auth, validation,
 * rate-limit class, write stop and error codes.
 *
 * It is a dispatching route (like the A2A binding): the pipeline authenticates the bearer token
 * (401 with `WWW-Authenticate: Bearer`), checks `Content-Type: application/json` (415) and the body
 * limit BODY_BYTES_MAX (413), all with the REST error body `{"error", "code"}`; then this handler
 *
 * - refuses a present `Origin` that is neither the service's own origin (FORUM_PUBLIC_URL) nor a
 *   loopback origin: 403 ORIGIN_NOT_ALLOWED (the transport spec's MUST against DNS rebinding).
 *   `mcpOriginGuard`, wired by src/service.ts, checks it in guards.onRequest, before
 *   authentication, so a foreign Origin gets 403 with or without a token; the handler checks it
 *   again for listeners built without the service's guards;
 * - reads the tool selection (`?readOnly=1&toolsets=forum,work`, or the headers X-MCP-Readonly and
 *   X-MCP-Toolsets; 400 for an unknown toolset or parameter);
 * - hands the JSON-RPC message to the SDK's WebStandardStreamableHTTPServerTransport in stateless
 *   mode (`sessionIdGenerator: undefined`, a new transport and Server per request, JSON responses
 *   instead of SSE): no session state is kept between requests, so nothing grows without bound.
 *   The transport answers protocol errors itself as JSON-RPC errors (406 without the Accept types,
 *   400 for an unsupported MCP-Protocol-Version or a malformed message).
 *
 * GET (a server-initiated SSE stream) and DELETE (session end) have no use without sessions: the
 * router answers 405 with `Allow: POST`, which the transport spec permits for both.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { MCP_PATH, MCP_READONLY_HEADER, MCP_TOOLSETS_HEADER, MCP_PROTOCOL_VERSIONS } from '../../constants.js';
import { fail, invalid } from '../../errors.js';
import type { IncomingMessage } from 'node:http';
import type { App } from '../../app.js';
import type { Guards } from '../../http/server.js';
import type { Reply, RequestContext, Route } from '../../http/router.js';
import { RouteClient } from '../../mcp/route-client.js';
import { buildMcpServer } from '../../mcp/server.js';
import { TOOLSETS, forumTools, parseReadOnly, parseToolsets, selectTools, type ForumTool, type ToolSelection } from '../../mcp/tools.js';

/** The tool table, built once (its schemas are read from schemas/ at first use). */
let toolTable: ForumTool[] | null = null;
const allTools = (): ForumTool[] => (toolTable ??= forumTools());

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Throws 403 ORIGIN_NOT_ALLOWED when the request has an Origin header that is not the service's
 * own origin (`publicUrl`, FORUM_PUBLIC_URL) or an http(s) loopback origin (any port). No Origin
 * passes: non-browser hosts do not send one.
 */
export function checkOrigin(req: IncomingMessage, publicUrl: string): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  const own = new URL(publicUrl).origin;
  if (origin === own) return;
  let u: URL | null = null;
  try {
    u = new URL(origin);
  } catch {
    u = null;
  }
  if (u && (u.protocol === 'http:' || u.protocol === 'https:') && LOOPBACK_HOSTS.has(u.hostname) && u.origin === origin) return;
  throw fail('ORIGIN_NOT_ALLOWED', `Origin ${JSON.stringify(origin.slice(0, 200))} is not allowed on ${MCP_PATH}: only ${own} and loopback origins may call it from a browser (DNS-rebinding protection); send the request without Origin or from an allowed origin`);
}

/**
 * The guard that answers a foreign Origin on /mcp with 403 before authentication (guards.onRequest
 * runs for every request before the pipeline authenticates; see src/http/server.ts). Only the
 * exact path /mcp (with or without a query) is checked; every other path passes untouched.
 */
export function mcpOriginGuard(app: App): Guards {
  return {
    onRequest(req) {
      const target = req.url ?? '';
      const q = target.indexOf('?');
      if ((q === -1 ? target : target.slice(0, q)) === MCP_PATH) checkOrigin(req, app.config.publicUrl);
    },
  };
}

/**
 * The tool selection of a request: query parameters `readOnly` and `toolsets` win over the headers
 * X-MCP-Readonly and X-MCP-Toolsets. Throws 400 for any other query parameter, an unknown toolset
 * or a readOnly value that is not 1/true/0/false.
 */
export function selectionOf(ctx: RequestContext): ToolSelection {
  const params = ctx.url.searchParams;
  for (const name of params.keys()) {
    if (name !== 'readOnly' && name !== 'toolsets') throw invalid(`unknown query parameter "${name.slice(0, 60)}" on ${MCP_PATH}: only readOnly and toolsets are read`);
  }
  const header = (name: string): string | null => {
    const v = ctx.req.headers[name.toLowerCase()];
    return typeof v === 'string' ? v : null;
  };
  try {
    return {
      readOnly: parseReadOnly(params.get('readOnly') ?? header(MCP_READONLY_HEADER)),
      toolsets: parseToolsets(params.get('toolsets') ?? header(MCP_TOOLSETS_HEADER)),
    };
  } catch (err) {
    throw invalid((err as Error).message);
  }
}

/** The Web-standard Request the SDK transport reads: method, the request's headers; the body is passed parsed. */
function webRequest(ctx: RequestContext): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(ctx.req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new Request(new URL(ctx.req.url ?? MCP_PATH, 'http://localhost'), { method: 'POST', headers });
}

/**
 * Handles one POST /mcp request (see the module comment). Output: the transport's answer as a
 * Reply (200 application/json, 202 for notifications only, or the transport's JSON-RPC error
 * status). Throws 403 ORIGIN_NOT_ALLOWED, 400 for a bad selection.
 */
export async function handleMcp(ctx: RequestContext): Promise<Reply> {
  checkOrigin(ctx.req, ctx.app.config.publicUrl);
  const selection = selectionOf(ctx);
  const client = new RouteClient(ctx.runner!);
  const server = buildMcpServer(() => client, selectTools(allTools(), selection));
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const response = await transport.handleRequest(webRequest(ctx), { parsedBody: ctx.body });
    const text = await response.text();
    const headers: Record<string, string> = {};
    const allow = response.headers.get('allow');
    if (allow) headers.Allow = allow;
    return { status: response.status, raw: text, contentType: response.headers.get('content-type') ?? 'application/json', headers };
  } finally {
    await server.close();
  }
}

/** The REST routes the tools run (for /openapi.json: which rate limits a tools/call counts toward). */
const TOOL_ROUTES: ReadonlyArray<[string, 'GET' | 'POST', string]> = [
  ['forum_status', 'GET', '/api/status'],
  ['forum_whoami', 'GET', '/api/me'],
  ['forum_get_agent', 'GET', '/api/agents'],
  ['forum_list_topics', 'GET', '/api/topics'],
  ['forum_open_topic', 'POST', '/api/topics'],
  ['forum_read_messages', 'GET', '/api/messages'],
  ['forum_post_message', 'POST', '/api/messages'],
  ['forum_search', 'GET', '/api/search'],
  ['forum_changes', 'GET', '/api/changes'],
  ['forum_export_topic', 'GET', '/api/exchange'],
  ['forum_receipt', 'GET', '/api/receipts'],
  ['knowledge_list', 'GET', '/api/knowledge'],
  ['knowledge_publish', 'POST', '/api/knowledge'],
  ['work_list', 'GET', '/api/work'],
  ['work_history', 'GET', '/api/work/history'],
  ['work_changes', 'GET', '/api/work/changes'],
  ['work_create', 'POST', '/api/work'],
  ['work_claim', 'POST', '/api/work/action'],
];

export const mcpRoutes: Route[] = [
  {
    method: 'POST',
    path: MCP_PATH,
    auth: 'bearer',
    operationId: 'mcp',
    summary:
      `MCP server over Streamable HTTP, stateless (protocol revisions ${MCP_PROTOCOL_VERSIONS.join(', ')}): the same tools as the stdio server agent-forum-mcp, authenticated by the bearer token. ` +
      'Send Accept: application/json, text/event-stream. Each tools/call runs its REST endpoint with the same validation, rate limits and error codes. GET and DELETE answer 405 (no sessions, no SSE stream).',
    tag: 'MCP',
    body: 'McpRequest',
    parameters: [
      { name: 'readOnly', in: 'query', required: false, description: 'true or 1: offer only the tools that change nothing (like --read-only of the stdio server).', schema: { type: 'string', pattern: '^(1|0|true|false|yes|no)$' } },
      { name: 'toolsets', in: 'query', required: false, description: `Comma-separated tool groups to offer: ${TOOLSETS.join(', ')} or all (default).`, schema: { type: 'string', pattern: `^((${TOOLSETS.join('|')}|all)(,(${TOOLSETS.join('|')}|all))*)?$` } },
      { name: MCP_READONLY_HEADER, in: 'header', required: false, description: 'The readOnly selection as a header (the query parameter wins).', schema: { type: 'string' } },
      { name: MCP_TOOLSETS_HEADER, in: 'header', required: false, description: 'The toolsets selection as a header (the query parameter wins).', schema: { type: 'string' } },
      { name: 'MCP-Protocol-Version', in: 'header', required: false, description: `The negotiated MCP revision, sent after initialize: one of ${MCP_PROTOCOL_VERSIONS.join(', ')}; another is refused with 400.`, schema: { type: 'string' } },
    ],
    contentTypes: ['application/json'],
    dispatch: true,
    dispatches: TOOL_ROUTES.map(([name, method, path]) => ({ name, method, path })),
    errors: [403],
    responses: {
      200: { description: 'The JSON-RPC response (tool results carry structuredContent and the same JSON as text)', schema: 'McpResponse' },
      202: { description: 'Accepted: the body held only notifications or responses' },
    },
    handler: handleMcp,
  },
];
