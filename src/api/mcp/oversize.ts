/**
 * POST /mcp bodies over MCP_BODY_BYTES_MAX (issue 51): a `tools/call` with one oversize argument
 * (a 1 MiB `content`) used to end as HTTP 413, which MCP clients raise as a transport exception,
 * so the model never read which field to shorten; the stdio server answers the same call with a
 * tool error. `readMcpBody` reads a body of up to MCP_BODY_BYTES_MAX whole; past that
 * it streams the rest (up to MCP_OVERSIZE_BODY_BYTES_MAX) through `JsonScanner`, which keeps only
 * the JSON-RPC id, method, tool name and the byte size of each top-level argument — never the
 * body — so an oversize call costs no more memory than a normal one. `oversizeToolError` turns
 * that into the JSON-RPC result a tool error is (`isError: true`, a text naming the argument and
 * the limit).
 */
import type { IncomingMessage } from 'node:http';
import { MCP_BODY_BYTES_MAX, MCP_OVERSIZE_BODY_BYTES_MAX } from '../../constants.js';
import { continueWithheld, mediaType, parseJsonBody, streamBody } from '../../http/body.js';
import { payloadTooLarge, unsupportedMediaType } from '../../http/errors.js';

/** What an oversize body revealed: its JSON-RPC id, method, tool name and each argument's size in bytes. */
export interface OversizeCall {
  /** The request's id (a string or number); undefined when absent or not seen. */
  id?: string | number;
  method?: string;
  /** `params.name`. */
  tool?: string;
  /** `params.arguments.<name>` → the bytes of its JSON value. */
  argumentBytes: Map<string, number>;
}

/** Bytes of a key or short value kept while scanning (ids, method and tool names are short). */
const SHORT_BYTES_MAX = 256;

interface Frame {
  /** An object (keys and values) or an array (values only). */
  readonly object: boolean;
  /** The key whose value is being read in this object (null: none yet, or an array). */
  key: string | null;
  /** In an object: the next string is a key. */
  expectKey: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * A streaming scanner of one JSON-RPC message (bytes fed in chunks): tracks its structure, keeps
 * the root's `id`, `method` and `params.name` when they are short, and measures each
 * `params.arguments` value. Memory: the nesting stack and a few short strings. It assumes
 * well-formed JSON; on anything else it stops (`broken`) and the caller answers 413.
 */
export class JsonScanner {
  readonly call: OversizeCall = { argumentBytes: new Map() };
  broken = false;
  private readonly stack: Frame[] = [];
  private offset = 0;
  private inString = false;
  private escaped = false;
  /** Raw bytes of the string or literal being read, when it is kept (null: not kept). */
  private kept: number[] | null = null;
  private inLiteral = false;
  /** Where the current argument's value began (offset), or -1. */
  private argumentStart = -1;

  /** Scans the next bytes of the body. */
  feed(chunk: Buffer): void {
    for (let i = 0; i < chunk.length && !this.broken; i++, this.offset++) this.byte(chunk[i]!);
  }

  private byte(b: number): void {
    if (this.inString) {
      if (this.kept !== null && this.kept.length < SHORT_BYTES_MAX) this.kept.push(b);
      else if (this.kept !== null) this.kept = null;
      if (this.escaped) this.escaped = false;
      else if (b === BACKSLASH) this.escaped = true;
      else if (b === QUOTE) {
        this.inString = false;
        this.kept?.pop();
        this.endString();
      }
      return;
    }
    if (this.inLiteral) {
      if (isLiteralByte(b)) {
        if (this.kept !== null && this.kept.length < SHORT_BYTES_MAX) this.kept.push(b);
        return;
      }
      this.inLiteral = false;
      // The literal's last byte was the one before this one.
      this.valueEnd(this.kept === null ? undefined : Buffer.from(this.kept).toString('latin1'), false, this.offset);
    }
    switch (b) {
      case 0x20:
      case 0x09:
      case 0x0a:
      case 0x0d:
      case 0x3a: // ':'
        return;
      case 0x2c: {
        // ','
        const top = this.stack.at(-1);
        if (top?.object) {
          top.key = null;
          top.expectKey = true;
        }
        return;
      }
      case 0x7b: // '{'
      case 0x5b: // '['
        this.valueBegin();
        this.stack.push({ object: b === 0x7b, key: null, expectKey: b === 0x7b });
        return;
      case 0x7d: // '}'
      case 0x5d: // ']'
        if (this.stack.pop() === undefined) this.broken = true;
        else this.valueEnd(undefined, false, this.offset + 1);
        return;
      case QUOTE: {
        const top = this.stack.at(-1);
        const isKey = top?.object === true && top.expectKey;
        if (!isKey) this.valueBegin();
        this.inString = true;
        this.kept = isKey || this.wanted() ? [] : null;
        return;
      }
      default:
        if (!isLiteralByte(b) || this.stack.length === 0) {
          this.broken = true;
          return;
        }
        this.valueBegin();
        this.inLiteral = true;
        this.kept = this.wanted() ? [b] : null;
    }
  }

  /** The key being read at nesting depth `depth` (null: none, or an array). */
  private keyAt(depth: number): string | null {
    return this.stack[depth]?.key ?? null;
  }

  /** Whether the value starting now is one kept: the root's id or method, or params.name. */
  private wanted(): boolean {
    const d = this.stack.length;
    if (d === 1) return this.keyAt(0) === 'id' || this.keyAt(0) === 'method';
    return d === 2 && this.keyAt(0) === 'params' && this.keyAt(1) === 'name';
  }

  /** Whether the value being read now is a top-level argument (params.arguments.<key>). */
  private atArgument(): boolean {
    return this.stack.length === 3 && this.keyAt(0) === 'params' && this.keyAt(1) === 'arguments' && this.stack[2]!.object && this.keyAt(2) !== null;
  }

  private valueBegin(): void {
    if (this.atArgument()) this.argumentStart = this.offset;
  }

  private endString(): void {
    const top = this.stack.at(-1);
    const raw = this.kept === null ? undefined : Buffer.from(this.kept).toString('utf8');
    this.kept = null;
    if (top?.object === true && top.expectKey) {
      top.key = raw === undefined ? '' : decodeJsonString(raw);
      top.expectKey = false;
      return;
    }
    this.valueEnd(raw, true, this.offset + 1);
  }

  /**
   * A value ended at the current depth, its last byte before offset `end` (`raw`: a kept
   * string's raw text or a literal; `quoted`: a string).
   */
  private valueEnd(raw: string | undefined, quoted: boolean, end: number): void {
    if (this.atArgument() && this.argumentStart >= 0) {
      this.call.argumentBytes.set(this.keyAt(2)!, end - this.argumentStart);
      this.argumentStart = -1;
      return;
    }
    if (raw === undefined) return;
    const d = this.stack.length;
    if (d === 1 && this.keyAt(0) === 'id') this.call.id = quoted ? decodeJsonString(raw) : Number.isFinite(Number(raw)) ? Number(raw) : undefined;
    else if (d === 1 && this.keyAt(0) === 'method' && quoted) this.call.method = decodeJsonString(raw);
    else if (d === 2 && this.keyAt(0) === 'params' && this.keyAt(1) === 'name' && quoted) this.call.tool = decodeJsonString(raw);
  }
}

/** The bytes of a JSON number or literal (true, false, null). */
function isLiteralByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x7a) || b === 0x2d || b === 0x2b || b === 0x2e || (b >= 0x41 && b <= 0x5a);
}

/** A JSON string's raw text (between its quotes) decoded; the raw text when it does not decode. */
function decodeJsonString(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

/** A body read by `readMcpBody`: parsed whole, or only scanned (over MCP_BODY_BYTES_MAX). */
export type McpBody = { body: unknown } | { oversize: OversizeCall; bytes: number };

/**
 * Reads a POST /mcp body: `Content-Type: application/json` (415); up to MCP_BODY_BYTES_MAX it is
 * read whole and parsed as every JSON body is (400 MALFORMED_JSON); past that the rest streams
 * through a JsonScanner up to MCP_OVERSIZE_BODY_BYTES_MAX and only what it kept is returned.
 * Throws 413 BODY_TOO_LARGE (naming MCP_BODY_BYTES_MAX) for a body, or a declared
 * Content-Length, over MCP_OVERSIZE_BODY_BYTES_MAX; reading stops there and the server drains
 * or closes as for every 413.
 */
export async function readMcpBody(req: IncomingMessage): Promise<McpBody> {
  if (mediaType(req.headers['content-type']) !== 'application/json') throw unsupportedMediaType(['application/json']);
  const declared = Number(req.headers['content-length']);
  // Over the cap, or over the limit behind Expect: 100-continue (the server withheld its 100, so
  // the body is not coming): 413 from the declared length.
  if (Number.isFinite(declared) && (declared > MCP_OVERSIZE_BODY_BYTES_MAX || continueWithheld(req, MCP_BODY_BYTES_MAX))) throw payloadTooLarge(MCP_BODY_BYTES_MAX);
  let chunks: Buffer[] = [];
  let kept = 0;
  let scanner: JsonScanner | null = null;
  const size = await streamBody(
    req,
    MCP_OVERSIZE_BODY_BYTES_MAX,
    (chunk) => {
      if (scanner === null && kept + chunk.length <= MCP_BODY_BYTES_MAX) {
        chunks.push(chunk);
        kept += chunk.length;
        return;
      }
      if (scanner === null) {
        // Past the limit: what was kept is scanned and let go; from here nothing is kept.
        scanner = new JsonScanner();
        for (const c of chunks) scanner.feed(c);
        chunks = [];
      }
      scanner.feed(chunk);
    },
    MCP_BODY_BYTES_MAX,
  );
  if (scanner === null) return { body: parseJsonBody(chunks, size) };
  const { broken, call } = scanner as JsonScanner;
  return { oversize: broken ? { argumentBytes: new Map() } : call, bytes: size };
}

/**
 * The answer to an oversize body (issue 51): for a `tools/call` with an id and a tool name, the
 * JSON-RPC result of a tool error (`isError: true`) whose text names the largest argument, its
 * size and the limit, as the stdio server's tool error for an oversize argument does; null for
 * anything else (the caller answers 413 BODY_TOO_LARGE). `modern`: the request's
 * MCP-Protocol-Version header names a 2026-07-28-era revision, whose results carry
 * `resultType: "complete"` (the body is never parsed whole, so the header is what says so).
 */
export function oversizeToolError(call: OversizeCall, bytes: number, modern = false): string | null {
  if (call.method !== 'tools/call' || call.id === undefined || call.tool === undefined) return null;
  let field: string | null = null;
  let fieldBytes = 0;
  for (const [name, n] of call.argumentBytes) {
    if (n > fieldBytes) {
      field = name;
      fieldBytes = n;
    }
  }
  const what = field === null ? `its arguments` : `argument "${field}" (${fieldBytes} bytes of JSON)`;
  const text =
    `Invalid input (HTTP 413): this ${call.tool} call is ${bytes} bytes, over the ${MCP_BODY_BYTES_MAX}-byte limit of a tools/call over /mcp; ` +
    `${what} is what makes it too large [BODY_TOO_LARGE]. Shorten that field and call again.`;
  const result = { content: [{ type: 'text', text }], isError: true, ...(modern ? { resultType: 'complete' } : {}) };
  return JSON.stringify({ jsonrpc: '2.0', id: call.id, result });
}
