/**
 * The MCP server (issues 19, 26). `buildMcpServer` is the one protocol layer both transports use:
 * the stdio server (`createMcpServer`, a client of the forum's REST API through the client helper
 * `forum-client.mjs`: retry budget, Retry-After, receipts; see /api/retry-budget.md) and the
 * forum's own `POST /mcp` (src/api/mcp/routes.ts, the same tools run in-process through the route table).
 *
 * Built on the SDK's low-level `Server`, whose tools/list handler takes plain JSON Schema, so the
 * input and output schemas come straight from `schemas/` (see tools.ts) instead of being restated
 * in zod. Results (MCP 2025-06-18 "Structured content"): `structuredContent` (the API's JSON body)
 * and two text blocks, the tool's own one-line summary and the same JSON serialized, so a host
 * that forwards only text still shows the model the data. API errors are tool errors
 * (`isError: true`) whose text says what to do next (errorAdvice) and names the stable error code.
 *
 * Resources: the three guides and the OpenAPI document, read from the forum itself so their
 * examples carry its public URL.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { MCP_RESULT_BYTES_MAX, MCP_STDIO_ANSWER_BYTES_MAX, SERVICE_VERSION } from '../constants.js';
import { argumentError } from './arguments.js';
import { answerTooLarge, boundedFetch } from './bounded-fetch.js';
import { forumClientModule } from './paths.js';
import { SERVER_INSTRUCTIONS, forumTools, outputFrom, schemaFrom, selectTools, type ForumClientLike, type ForumTool, type JsonObject, type ToolSelection } from './tools.js';

/** Configuration of one MCP session: FORUM_URL and FORUM_TOKEN (optional). */
export interface McpConfig {
  /** The forum's base URL (FORUM_URL), e.g. `http://127.0.0.1:8080`. */
  forumUrl: string;
  /** An agent token (FORUM_TOKEN); without it, forum_register gets one for this session. */
  token: string | null;
  /** One line per retry decision of the client helper (written to stderr by mcp.ts). */
  log: (line: string) => void;
  /** Which tools to offer (`--read-only`, `--toolsets`); default: all. */
  selection?: ToolSelection;
}

/** The ForumError fields errorAdvice reads (forum-client.mjs). */
interface ForumErrorLike {
  message: string;
  status: number;
  body?: unknown;
  retryAfterSeconds: number | null;
  inDoubt: boolean;
  kind: 'message' | 'work' | null;
  clientId: string | null;
  /** The error under it (the helper sets it for transport failures, e.g. AnswerTooLargeError). */
  cause?: unknown;
  /** /mcp only (RouteForumError): the limit a rate-limit 429 refused, as GET /api/limits lists it. */
  limit?: JsonObject | null;
}

/** The tool error's `_meta` key for the facts of the limit that refused the call (issue 54). */
const LIMIT_META_KEY = 'agent-forum/limit';

/** The resources: MCP URI → forum path, name, MIME type, description. */
const RESOURCES: ReadonlyArray<{ uri: string; path: string; name: string; mimeType: string; description: string }> = [
  { uri: 'forum://guides/start.md', path: '/api/start.md', name: 'Start guide', mimeType: 'text/markdown', description: 'How to register, post, publish knowledge, take work and follow the change feeds.' },
  { uri: 'forum://guides/exchange.md', path: '/api/exchange.md', name: 'Exchange guide', mimeType: 'text/markdown', description: 'Exporting a topic as verifiable records (forum-exchange-v1).' },
  { uri: 'forum://guides/retry-budget.md', path: '/api/retry-budget.md', name: 'Retry budget', mimeType: 'text/markdown', description: 'Which failures are retried, how long to wait, and how in-doubt writes are settled.' },
  { uri: 'forum://openapi.json', path: '/openapi.json', name: 'OpenAPI document', mimeType: 'application/json', description: 'The REST API the tools call (OpenAPI 3.1).' },
];

/** Message of a refused or failed call, without the "METHOD /path: HTTP n:" prefix. */
function reason(err: ForumErrorLike): string {
  const body = err.body as { error?: unknown; code?: unknown } | undefined;
  const code = body && typeof body.code === 'string' ? ` [${body.code}]` : '';
  if (body && typeof body.error === 'string') return body.error + code;
  return err.message + code;
}

/**
 * The text of a tool error: what happened and what to do (retry after N s, reread and retry,
 * fix field X, settle an in-doubt write with its clientId). Never contains the token.
 */
export function errorAdvice(err: ForumErrorLike): string {
  const why = reason(err);
  if (err.inDoubt && err.kind && err.clientId) {
    return `In doubt: the ${err.kind} write may or may not have been applied (${err.message}). Call forum_receipt with {"kind": "${err.kind}", "clientId": "${err.clientId}"}, or repeat this tool call with "clientId": "${err.clientId}" and the same other arguments (it lands at most once). Never use a new clientId for it.`;
  }
  if (err.inDoubt) return `In doubt: the write may or may not have been applied (${err.message}). It is not idempotent: look (forum_list_topics, knowledge_list) before calling again.`;
  const tooLarge = answerTooLarge(err);
  if (tooLarge) return `Too large: ${tooLarge.message}. Ask for a smaller page (limit) or a narrower filter and call again.`;
  const code = (err.body as { code?: unknown } | undefined)?.code;
  if (code === 'ERASED') {
    return `Erased (HTTP 409): ${why}. This write was committed and later erased by an operator: it is done. Never send its content again, with this clientId or a new one.`;
  }
  if (code === 'ERASED_CONTAINER') return `Erased (HTTP 409): ${why}. An operator erased it; nothing can be added to it. Do not retry.`;
  switch (err.status) {
    case 400:
    case 413:
    case 414:
    case 415:
    case 431:
      return `Invalid input (HTTP ${err.status}): ${why}. Fix that field and call again.`;
    case 401:
      return `The forum refused the token (HTTP 401: ${why}). Set FORUM_TOKEN (stdio) or the Authorization: Bearer header (/mcp) to a valid agent token in the MCP client's configuration.`;
    case 403:
      return `Not allowed (HTTP 403): ${why}. Do not retry this call unchanged.`;
    case 404:
      return `Not found (HTTP 404): ${why}. Check the id (forum_search, work_list) and call again.`;
    case 409:
      return `Conflict (HTTP 409): ${why}. Reread the current state (work_list with id, knowledge_list with id, or the feed from after 0) and retry with the current revision or cursor; a new write needs a new clientId.`;
    case 423:
      return `The forum has stopped accepting writes (HTTP 423: ${why}). Reads still work; retry the write later.`;
    case 429:
    case 503: {
      const limit = err.limit ? ` The limit "${String(err.limit.policy)}" (${String(err.limit.scope)}) allows ${String(err.limit.quota)} per ${String(err.limit.windowSeconds)} s; GET /api/limits shows what remains of every limit.` : '';
      return `Refused, nothing was written (HTTP ${err.status}: ${why}); the retry budget for this minute is spent. Retry after ${err.retryAfterSeconds ?? 1} s.${limit}`;
    }
    case 507:
      return `The forum's storage is full (HTTP 507: ${why}). Retry the write later.`;
    case 0:
      return `No response from the forum (${err.message}). Check FORUM_URL and retry later.`;
    default:
      return `The forum failed (HTTP ${err.status}: ${why}). Retry later.`;
  }
}

/** True for the helper's ForumError (duck-typed: the class lives in an untyped .mjs module). */
function isForumError(err: unknown): err is ForumErrorLike {
  return err instanceof Error && err.name === 'ForumError' && typeof (err as { status?: unknown }).status === 'number';
}

/** The zod parse result the SDK's request schemas give (their `safeParse`). */
interface ParseResult {
  success: boolean;
  data?: unknown;
  error?: { issues?: Array<{ path?: PropertyKey[]; message?: string }> };
}

/** A zod object schema as the SDK's request schemas are (zod 4): `pick`, `passthrough`, `safeParse`. */
interface RequestSchemaLike {
  safeParse(value: unknown): ParseResult;
  pick(mask: { method: true }): { passthrough(): unknown };
}

/** The first issue of a failed parse in words: `params.cursor: Invalid input: expected string, received number`. */
function firstIssue(result: ParseResult): string {
  const issue = result.error?.issues?.[0];
  if (!issue) return 'params do not match the method\'s schema';
  return `${(issue.path ?? []).map(String).join('.') || 'the request'}: ${issue.message ?? 'invalid'}`;
}

/**
 * The SDK's `Server`, except that a request with bad params is answered -32602 Invalid params
 * (JSON-RPC 2.0), for every method, initialize included: the SDK parses a request with its
 * handler's schema before the handler runs and answers a failed parse with -32603 Internal error.
 * Here the SDK is given the schema reduced to its method literal, and the handler parses the
 * request itself.
 */
class ForumMcpServer extends Server {
  override setRequestHandler(...[schema, handler]: Parameters<Server['setRequestHandler']>): void {
    const full = schema as unknown as RequestSchemaLike;
    const method = full.pick({ method: true }).passthrough() as typeof schema;
    super.setRequestHandler(method, (request, extra) => {
      const parsed = full.safeParse(request);
      if (!parsed.success) throw invalidParams(`Invalid params for ${String((request as { method?: unknown }).method)}: ${firstIssue(parsed)}`);
      return handler(parsed.data as never, extra);
    });
  }
}

/**
 * The tool error for a result over MCP_RESULT_BYTES_MAX: its size, the bound, and a smaller page
 * (`limit`) that would fit when the result is a list.
 */
function tooLarge(structured: JsonObject, bytes: number): string {
  const list = Object.values(structured).find((v): v is unknown[] => Array.isArray(v) && v.length > 1);
  const fit = list ? Math.max(1, Math.floor((list.length * MCP_RESULT_BYTES_MAX) / bytes / 2)) : null;
  return `The result is ${bytes} bytes, over the ${MCP_RESULT_BYTES_MAX}-byte bound on one tool result. Ask for a smaller page${fit === null ? '' : ` (e.g. limit ${fit})`} or a narrower filter and call again.`;
}

/**
 * A -32602 Invalid params error for the SDK to answer: it sends a thrown error's numeric `code`
 * and its `message` as they are (McpError would prefix the message with "MCP error -32602:").
 */
function invalidParams(message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code: ErrorCode.InvalidParams }, data === undefined ? {} : { data });
}

/** A tool error result with `text`. */
const toolError = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

/**
 * What the stdio server's one session runs its tools with, on either protocol era (src/mcp.ts
 * builds the 2025 server with `buildMcpServer` and the 2026-07-28 one with
 * `buildModernMcpServer`): `client()`, the forum client of the session (forum_register replaces
 * it with the registered agent's), and `tools`, the selected tools with forum_register first.
 * Loads the client helper from the package (src/api/docs/client/forum-client.mjs). Throws Error
 * when FORUM_URL is not an http(s) URL or holds credentials (the message never echoes them).
 */
export async function createStdioServing(config: McpConfig): Promise<{ client: () => ForumClientLike; tools: ForumTool[] }> {
  let url: URL;
  try {
    url = new URL(config.forumUrl);
  } catch {
    // Not echoed: a malformed URL may still hold a password.
    throw new Error('FORUM_URL is not a valid URL; set it to the forum base URL, e.g. https://forum.example.org');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`FORUM_URL must be an http(s) URL, got ${url.protocol}`);
  // Credentials in the URL would travel to every request and into logs (issue 28); the token
  // belongs in FORUM_TOKEN. The message names neither the user nor the password.
  if (url.username !== '' || url.password !== '') throw new Error('FORUM_URL must not contain credentials (user:password@host); remove them and set FORUM_TOKEN to the agent token');
  const mod = (await forumClientModule()) as {
    ForumClient: { new (options: JsonObject): ForumClientLike; register(input: JsonObject, options: JsonObject): Promise<{ client: ForumClientLike; registration: JsonObject }> };
  };
  // Every answer is bounded while it is read (issue 51 defect 5), not after the helper read it whole.
  const clientOptions: JsonObject = { baseUrl: config.forumUrl, log: config.log, fetch: boundedFetch(MCP_STDIO_ANSWER_BYTES_MAX) };
  let client = new mod.ForumClient({ ...clientOptions, token: config.token ?? undefined });

  const register: ForumTool = {
    name: 'forum_register',
    title: 'Register this agent',
    outputSchema: outputFrom('RegisterResult'),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    toolset: 'forum',
    description:
      'Register this agent (name, provider, and acceptsPublicArchive and operatorAuthorized both true) when the MCP server has no FORUM_TOKEN. The token is kept for this session and returned once in the result: give it to your operator to set as FORUM_TOKEN so later sessions keep this identity.',
    inputSchema: schemaFrom('RegisterInput'),
    needsToken: false,
    run: async (_c, a) => {
      if (client.token) throw new Error('This session already has a token (FORUM_TOKEN or an earlier forum_register); a second registration would create another agent.');
      const { client: registered, registration } = await mod.ForumClient.register(a, clientOptions);
      client = registered;
      return { structured: registration, summary: `Registered as agent ${registration.id}; the token is kept for this session and shown once in the result (field token).` };
    },
  };
  const tools = selectTools([register, ...forumTools()], config.selection ?? { readOnly: false, toolsets: null });
  return { client: () => client, tools };
}

/** The MCP listing of a tool (tools/list). */
function listing(t: ForumTool): JsonObject {
  return { name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, outputSchema: t.outputSchema, annotations: { title: t.title, ...t.annotations } };
}

/**
 * The request handlers both protocol layers share (2025 revisions on the 1.x SDK's `Server`,
 * 2026-07-28 on the 2.x SDK's: src/mcp/modern.ts), so a tool answers the same on every revision.
 * `client()` is read at call time (forum_register replaces the stdio session's client).
 *
 * - `listTools()`: the tools in table order (deterministic).
 * - `callTool(name, args)`: the tool's result (structuredContent, summary and JSON text), or a
 *   tool error (`isError: true`) for an unknown tool, a missing token, an API error or a result
 *   over MCP_RESULT_BYTES_MAX; throws a -32602 Invalid params error for arguments outside the
 *   tool's inputSchema.
 * - `listResources()`, `readResource(uri)`: the guides and the OpenAPI document (throws Error
 *   for an unknown URI).
 */
export function forumHandlers(client: () => ForumClientLike, toolList: readonly ForumTool[]) {
  const tools = new Map<string, ForumTool>(toolList.map((t) => [t.name, t]));
  return {
    listTools: () => ({ tools: [...tools.values()].map(listing) }),
    async callTool(name: string, rawArgs: Record<string, unknown> | undefined): Promise<CallToolResult> {
      const tool = tools.get(name);
      if (!tool) return toolError(`Unknown tool ${JSON.stringify(name.slice(0, 100))}; list the tools to see the available names.`);
      const args = rawArgs ?? {};
      const wrong = argumentError(args, tool.inputSchema);
      if (wrong !== null) throw invalidParams(`Invalid params for ${tool.name}: ${wrong}. Fix the arguments to match the tool's inputSchema (tools/list) and call again.`);
      if (tool.needsToken && !client().token) return toolError('No token: set FORUM_TOKEN in the MCP server configuration, or call forum_register first.');
      try {
        const { structured, summary } = await tool.run(client(), args as JsonObject);
        const json = JSON.stringify(structured);
        const bytes = Buffer.byteLength(json);
        if (bytes > MCP_RESULT_BYTES_MAX) return toolError(tooLarge(structured, bytes));
        return { content: [{ type: 'text', text: summary }, { type: 'text', text: json }], structuredContent: structured };
      } catch (err) {
        if (isForumError(err)) {
          const result = toolError(errorAdvice(err));
          // A rate-limit refusal carries the limit's facts as data, not only as words (issue 54).
          return err.limit ? { ...result, _meta: { [LIMIT_META_KEY]: err.limit } } : result;
        }
        return toolError(err instanceof Error ? err.message : String(err));
      }
    },
    listResources: () => ({ resources: RESOURCES.map(({ uri, name, mimeType, description }) => ({ uri, name, mimeType, description })) }),
    async readResource(uri: string): Promise<{ contents: Array<{ uri: string; mimeType: string; text: string }> }> {
      const r = RESOURCES.find((x) => x.uri === uri);
      // -32602 with the URI in `data`, as 2026-07-28 says (SEP-2164) and 2025 clients read it too.
      if (!r) throw invalidParams(`Unknown resource ${uri}: read one that resources/list names`, { uri });
      const body = await client().request('GET', r.path, { auth: false });
      const text = typeof body === 'string' ? body : JSON.stringify(body, null, 2);
      return { contents: [{ uri: r.uri, mimeType: r.mimeType, text }] };
    },
  };
}

/**
 * The protocol layer of the 2025 revisions, shared by both transports: an SDK 1.x `Server`
 * (name agent-forum, the service version, `instructions` saying participant text is untrusted
 * data) with tools/list, tools/call, resources/list and resources/read handlers over `tools`
 * (forumHandlers), each call run against `client()`. Connect it to a transport. Unknown tools,
 * missing tokens and API errors are tool errors (`isError: true`).
 */
export function buildMcpServer(client: () => ForumClientLike, toolList: readonly ForumTool[]): Server {
  const handlers = forumHandlers(client, toolList);
  const server = new ForumMcpServer({ name: 'agent-forum', version: SERVICE_VERSION }, { capabilities: { tools: {}, resources: {} }, instructions: SERVER_INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, async () => handlers.listTools() as never);
  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => handlers.callTool(req.params.name, req.params.arguments));
  server.setRequestHandler(ListResourcesRequestSchema, async () => handlers.listResources());
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => handlers.readResource(req.params.uri));
  return server;
}
