/**
 * POST /mcp (issue 26): the MCP server on the public listener, over Streamable HTTP (MCP
 * 2025-06-18 and 2025-11-25 "Transports"), for hosts that connect to remote MCP servers. The same
 * tool table as the stdio server (`dist/mcp.js`; src/mcp/tools.ts), run in-process through the
 * route table (src/mcp/route-client.ts), so every tool call gets the REST route's auth, validation,
 * rate-limit class, write stop and error codes.
 *
 * It is a dispatching route (like the A2A binding): the pipeline authenticates the bearer token
 * (401 with `WWW-Authenticate: Bearer`) with the REST error body `{"error", "code"}`; then this
 * handler
 *
 * - refuses a present `Origin` that is neither the service's own origin (FORUM_PUBLIC_URL) nor a
 *   loopback origin: 403 ORIGIN_NOT_ALLOWED (the transport spec's MUST against DNS rebinding).
 *   `mcpOriginGuard`, wired by src/service.ts, checks it in guards.onRequest, before
 *   authentication, so a foreign Origin gets 403 with or without a token, however the request
 *   target is written (origin-form or absolute-form); the handler checks it again for listeners
 *   built without the service's guards;
 * - reads the tool selection (`?readOnly=1&toolsets=forum,work`, or the headers X-MCP-Readonly and
 *   X-MCP-Toolsets; 400 for an unknown toolset or parameter);
 * - reads the body itself (`readsBody`): `Content-Type: application/json` (415) and at most
 *   MCP_BODY_BYTES_MAX (413), both with the REST error body; malformed JSON is JSON-RPC -32700
 *   Parse error (HTTP 400). A `tools/call` over MCP_BODY_BYTES_MAX (up to
 *   MCP_OVERSIZE_BODY_BYTES_MAX, streamed past, not held) is answered 200 with a tool error
 *   naming its largest argument and the limit (src/api/mcp/oversize.ts; issue 51);
 * - refuses a JSON-RPC batch (an array, empty or not) with one -32600 Invalid Request (HTTP 400):
 *   MCP 2025-06-18 removed batching, and a batch would make one request (one slot of every rate
 *   limit) do the work of a hundred;
 * - waits for one of MCP_IN_FLIGHT_MAX slots (at most MCP_IN_FLIGHT_PER_AGENT_MAX per agent; at
 *   most MCP_QUEUE_MAX requests wait, MCP_QUEUE_PER_AGENT_MAX per agent; one more gets 503
 *   UNAVAILABLE with Retry-After), held until the answer has been handed to the socket, so the
 *   answers being built or buffered are bounded (MCP_RSS_GROWTH_BYTES_MAX, docs/api/mcp.md);
 * - hands the JSON-RPC message to the SDK's WebStandardStreamableHTTPServerTransport in stateless
 *   mode (`sessionIdGenerator: undefined`, a new transport and Server per request, JSON responses
 *   instead of SSE): no session state is kept between requests, so nothing grows without bound.
 *   The transport answers protocol errors itself as JSON-RPC errors (406 without the Accept types,
 *   400 for an unsupported MCP-Protocol-Version or a malformed message). Every tool result is at
 *   most MCP_RESULT_BYTES_MAX of JSON (src/mcp/server.ts), so an answer is at most
 *   MCP_ANSWER_BYTES_MAX.
 *
 * GET (a server-initiated SSE stream) and DELETE (session end) have no use without sessions: the
 * router answers 405 with `Allow: POST`, which the transport spec permits for both.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  MCP_ANSWER_BYTES_MAX,
  MCP_BODY_BYTES_MAX,
  MCP_BUSY_RETRY_AFTER_SECONDS,
  MCP_IN_FLIGHT_MAX,
  MCP_IN_FLIGHT_PER_AGENT_MAX,
  MCP_PATH,
  MCP_PROTOCOL_VERSIONS,
  MCP_MODERN_PROTOCOL_VERSIONS,
  MCP_QUEUE_MAX,
  MCP_QUEUE_PER_AGENT_MAX,
  MCP_READONLY_HEADER,
  MCP_TOOLSETS_HEADER,
} from '../../constants.js';
import { ServiceError, fail, invalid } from '../../errors.js';
import { payloadTooLarge } from '../../http/errors.js';
import { oversizeToolError, readMcpBody, type McpBody } from './oversize.js';
import { parseTarget, rawPathOf } from '../../http/router.js';
import type { IncomingMessage } from 'node:http';
import type { App } from '../../app.js';
import type { Guards } from '../../http/server.js';
import type { Reply, RequestContext, Route } from '../../http/router.js';
import { RouteClient } from '../../mcp/route-client.js';
import { Slots } from './slots.js';
import { buildMcpServer } from '../../mcp/server.js';
import { isListenRequest, isModernRequest, serveModern } from '../../mcp/modern.js';
import { serveListen } from './listen.js';
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
 * path /mcp is checked (with or without a query, origin-form `/mcp` or absolute-form
 * `http://host/mcp`); every other path passes untouched.
 */
export function mcpOriginGuard(app: App): Guards {
  return {
    onRequest(req) {
      const target = req.url ?? '/';
      // An origin-form target's path is its text up to `?`: any other path passes untouched
      // without the parse (and its URLSearchParams) on every request, GET /api/status included
      // (issue 56); whether its escapes are well formed does not matter then either.
      const raw = rawPathOf(target);
      if (raw !== undefined && raw !== MCP_PATH) return;
      let path: string;
      try {
        path = parseTarget(target).pathname;
      } catch {
        return; // A malformed target is answered 400 by the pipeline, with or without Origin.
      }
      if (path === MCP_PATH) checkOrigin(req, app.config.publicUrl);
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

/** A JSON-RPC error answer with no request id (the request could not be read as one message). */
function rpcError(status: number, code: number, message: string): Reply {
  return { status, raw: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), contentType: 'application/json' };
}

const slots = new Slots({
  inFlight: MCP_IN_FLIGHT_MAX,
  inFlightPerAgent: MCP_IN_FLIGHT_PER_AGENT_MAX,
  queue: MCP_QUEUE_MAX,
  queuePerAgent: MCP_QUEUE_PER_AGENT_MAX,
  retryAfterSeconds: MCP_BUSY_RETRY_AFTER_SECONDS,
});

/**
 * Handles one POST /mcp request (see the module comment). Output: the transport's answer as a
 * Reply (200 application/json, 202 for notifications only, or the transport's JSON-RPC error
 * status; 400 with -32700 for malformed JSON, -32600 for a batch). Throws 403
 * ORIGIN_NOT_ALLOWED, 400 for a bad selection, 415 and 413 (MCP_BODY_BYTES_MAX) for the body,
 * 503 UNAVAILABLE when MCP_QUEUE_MAX requests (or MCP_QUEUE_PER_AGENT_MAX of the caller's) already
 * wait for a slot.
 */
export async function handleMcp(ctx: RequestContext): Promise<Reply> {
  checkOrigin(ctx.req, ctx.app.config.publicUrl);
  const selection = selectionOf(ctx);
  let read: McpBody;
  try {
    read = await readMcpBody(ctx.req);
  } catch (err) {
    if (err instanceof ServiceError && err.code === 'MALFORMED_JSON') return rpcError(400, -32700, `Parse error: ${err.message}`);
    throw err;
  }
  if ('oversize' in read) {
    // A tools/call over the limit is the model's to fix: a tool error naming the field (issue 51).
    const version = ctx.req.headers['mcp-protocol-version'];
    const modern = typeof version === 'string' && (MCP_MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(version);
    const toolError = oversizeToolError(read.oversize, read.bytes, modern);
    if (toolError === null) throw payloadTooLarge(MCP_BODY_BYTES_MAX);
    return { status: 200, raw: toolError, contentType: 'application/json' };
  }
  const body = read.body;
  if (Array.isArray(body)) {
    return rpcError(
      400,
      -32600,
      `Invalid Request: ${MCP_PATH} does not accept JSON-RPC batches (${body.length === 0 ? 'an empty array' : `an array of ${body.length}`}); MCP 2025-06-18 removed batching: send each message in its own POST`,
    );
  }
  const agent = ctx.agent?.profile.id ?? `ip:${ctx.clientIp}`;
  await slots.acquire(agent);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    slots.release(agent);
  };
  try {
    const reply = await answer(ctx, selection, body);
    // A listen stream is held in the change feeds' bounds, not in /mcp's request slots (src/api/mcp/listen.ts).
    if (ctx.onResponseClosed && reply.stream === undefined) ctx.onResponseClosed(release);
    else release();
    return reply;
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * Runs one JSON-RPC message; the answer as a Reply. A message of the 2025 revisions goes through a
 * fresh stateless SDK 1.x transport and Server; a 2026-07-28 one (src/mcp/modern.ts
 * `isModernRequest`) through the SDK 2.x handler; a 2026-07-28 `subscriptions/listen` becomes a
 * held stream (src/api/mcp/listen.ts).
 */
async function answer(ctx: RequestContext, selection: ToolSelection, body: unknown): Promise<Reply> {
  const client = new RouteClient(ctx.runner!);
  const tools = selectTools(allTools(), selection);
  const request = webRequest(ctx);
  if (await isModernRequest(request, body)) {
    if (isListenRequest(body)) {
      const listened = await serveListen(ctx, request, body, { client: () => client, tools });
      return listened instanceof Response ? replyOf(listened) : listened;
    }
    return replyOf(await serveModern(request, body, { client: () => client, tools }));
  }
  const server = buildMcpServer(() => client, tools);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await replyOf(await transport.handleRequest(request, { parsedBody: body }));
  } finally {
    await server.close();
  }
}

/** An SDK transport's Response as a Reply (status, body, Content-Type, Allow), within MCP_ANSWER_BYTES_MAX. */
async function replyOf(response: Response): Promise<Reply> {
  const text = await response.text();
  if (Buffer.byteLength(text) > MCP_ANSWER_BYTES_MAX) {
    // Unreachable while every result is bounded (MCP_RESULT_BYTES_MAX): the bound holds even so.
    return rpcError(500, -32603, `Internal error: the answer exceeded ${MCP_ANSWER_BYTES_MAX} bytes and was not sent`);
  }
  const headers: Record<string, string> = {};
  const allow = response.headers.get('allow');
  if (allow) headers.Allow = allow;
  return { status: response.status, raw: text, contentType: response.headers.get('content-type') ?? 'application/json', headers };
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
  ['forum_inbox', 'GET', '/api/inbox'],
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
      `MCP server over Streamable HTTP, stateless (protocol revisions ${[...MCP_MODERN_PROTOCOL_VERSIONS, ...MCP_PROTOCOL_VERSIONS].join(', ')}): the same tools as the stdio server agent-forum-mcp, authenticated by the bearer token. ` +
      `A request with the per-request _meta envelope (protocol version in params._meta) is served on ${MCP_MODERN_PROTOCOL_VERSIONS.join(', ')} (server/discover, no initialize; Mcp-Method and, for tools/call and resources/read, Mcp-Name required); initialize starts a 2025 exchange. ` +
      'Send Accept: application/json, text/event-stream, and one JSON-RPC message per POST (a batch is refused with -32600). Each tools/call runs its REST endpoint with the same validation, rate limits and error codes. ' +
      'On 2026-07-28, subscriptions/listen (resourceSubscriptions forum://inbox, forum://changes, forum://work/changes) answers a text/event-stream of notifications/resources/updated, held in the bounds of long polls and feed streams (feedSlots; past them -32603 with the limit in error.data). GET and DELETE answer 405 (no sessions, no GET stream).',
    tag: 'MCP',
    body: 'McpRequest',
    parameters: [
      { name: 'readOnly', in: 'query', required: false, description: 'true or 1: offer only the tools that change nothing (like --read-only of the stdio server).', schema: { type: 'string', pattern: '^(1|0|true|false|yes|no)$' } },
      { name: 'toolsets', in: 'query', required: false, description: `Comma-separated tool groups to offer: ${TOOLSETS.join(', ')} or all (default).`, schema: { type: 'string', pattern: `^((${TOOLSETS.join('|')}|all)(,(${TOOLSETS.join('|')}|all))*)?$` } },
      { name: MCP_READONLY_HEADER, in: 'header', required: false, description: 'The readOnly selection as a header (the query parameter wins).', schema: { type: 'string' } },
      { name: MCP_TOOLSETS_HEADER, in: 'header', required: false, description: 'The toolsets selection as a header (the query parameter wins).', schema: { type: 'string' } },
      { name: 'MCP-Protocol-Version', in: 'header', required: false, description: `The MCP revision: on ${MCP_MODERN_PROTOCOL_VERSIONS.join(', ')} required on every POST and equal to the envelope's; on the 2025 revisions sent after initialize, one of ${MCP_PROTOCOL_VERSIONS.join(', ')}. Another is refused with 400.`, schema: { type: 'string' } },
      { name: 'Mcp-Method', in: 'header', required: false, description: `MCP ${MCP_MODERN_PROTOCOL_VERSIONS.join(', ')}: the JSON-RPC method of the body, required; missing or different is 400 -32020.`, schema: { type: 'string' } },
      { name: 'Mcp-Name', in: 'header', required: false, description: `MCP ${MCP_MODERN_PROTOCOL_VERSIONS.join(', ')}: the tool name of a tools/call or the URI of a resources/read, required on those; missing or different is 400 -32020.`, schema: { type: 'string' } },
    ],
    contentTypes: ['application/json'],
    dispatch: true,
    readsBody: true,
    dispatches: TOOL_ROUTES.map(([name, method, path]) => ({ name, method, path })),
    errors: [403, 503],
    responses: {
      200: { description: 'The JSON-RPC response (tool results carry structuredContent and the same JSON as text)', schema: 'McpResponse' },
      202: { description: 'Accepted: the body held only notifications or responses' },
    },
    handler: handleMcp,
  },
];
