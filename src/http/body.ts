/**
 * Request body reading: content type check (415), size limit (413, reading stops at the limit),
 * strict UTF-8 and JSON parsing (400). Part 8 "Request body" and "Content type".
 */
import type { IncomingMessage } from 'node:http';
import { BODY_BYTES_MAX, SURROGATE_PATH_CHARS_MAX } from '../constants.js';
import { fail } from '../errors.js';
import { payloadTooLarge, unsupportedMediaType } from './errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(header: string | undefined): string {
  return (header ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

/**
 * True when the request asks `Expect: 100-continue` for a body whose declared Content-Length is
 * over `limitBytes` (default BODY_BYTES_MAX, part 8): the server answers it at once with 413
 * instead of `100 Continue` (RFC 9110 section 10.1.1: a server that will refuse the body should
 * say so before the client sends it), and closes the connection after the answer, since the body
 * was never read.
 */
export function continueWithheld(req: IncomingMessage, limitBytes: number = BODY_BYTES_MAX): boolean {
  const expect = req.headers.expect;
  if (typeof expect !== 'string' || expect.trim().toLowerCase() !== '100-continue') return false;
  const declared = Number(req.headers['content-length']);
  return Number.isFinite(declared) && declared > limitBytes;
}

/**
 * Reads and parses a JSON body.
 * Input: the request; `accepted` media types (default application/json); the byte limit.
 * Output: the parsed JSON value.
 * Throws 415 (wrong Content-Type), 413 (over `limitBytes`; stops reading), 400 (invalid UTF-8,
 * malformed JSON with the parser's reason, or a lone surrogate escape, naming where).
 */
export async function readJsonBody(
  req: IncomingMessage,
  accepted: readonly string[] = ['application/json'],
  limitBytes: number = BODY_BYTES_MAX,
): Promise<unknown> {
  if (!accepted.includes(mediaType(req.headers['content-type']))) {
    throw unsupportedMediaType([...accepted]);
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) throw payloadTooLarge(limitBytes);
  const { chunks, size } = await collect(req, limitBytes);
  return parseJsonBody(chunks, size);
}

/**
 * Parses a body read whole (`chunks`, `size` bytes in all) as `readJsonBody` does: strict UTF-8,
 * JSON, no lone surrogate escape. Output: the parsed JSON value. Throws 400 MALFORMED_JSON naming
 * the reason.
 */
export function parseJsonBody(chunks: readonly Buffer[], size: number): unknown {
  let text: string;
  try {
    text = utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat([...chunks], size));
  } catch {
    throw fail('MALFORMED_JSON', 'request body is not valid UTF-8');
  }
  if (text.trim() === '') throw fail('MALFORMED_JSON', 'request body is empty; send a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw fail('MALFORMED_JSON', `malformed JSON: ${(err as Error).message}`);
  }
  // Strict UTF-8 decoding already refused encoded surrogates; a lone one can only come from a
  // \uD800-\uDFFF escape, so the (rare) walk runs only when the text has such an escape.
  if (SURROGATE_ESCAPE.test(text)) {
    const where = loneSurrogateAt(value);
    if (where !== null) {
      throw fail('MALFORMED_JSON', `${where || 'the body'} holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape); text must be valid Unicode (I-JSON, RFC 7493)`);
    }
  }
  return value;
}

/** A `\u` escape of a UTF-16 surrogate (D800-DFFF), any case. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
/** A high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** One value still to check in `loneSurrogateAt`: its parent frame and its step from there. */
interface WalkFrame {
  readonly value: unknown;
  readonly parent: WalkFrame | null;
  /** `[i]` for an array element, `.key` (or `key` at the top) for a property; '' for the root. */
  readonly step: string;
}

/** The path of `frame` from the root (`a.b[2]`), cut to SURROGATE_PATH_CHARS_MAX characters. */
function pathOf(frame: WalkFrame): string {
  const steps: string[] = [];
  for (let f: WalkFrame | null = frame; f !== null; f = f.parent) steps.push(f.step);
  const path = steps.reverse().join('');
  return path.length > SURROGATE_PATH_CHARS_MAX ? `${path.slice(0, SURROGATE_PATH_CHARS_MAX)}…` : path;
}

/**
 * The JSON path (`field "a.b[2]"`) of the first string or key in `value` that holds a lone
 * surrogate, or null. Such text cannot be encoded as UTF-8, so it could be neither stored as
 * canonical JSON (RFC 8785 assumes I-JSON) nor hashed in an export.
 *
 * The walk is iterative with an explicit stack: JSON.parse accepts any nesting depth a 32 KiB
 * body can hold (16 000 levels), which a recursive walk would turn into a stack overflow and a
 * 500. Paths are built only for the hit, from parent links, so the walk stays linear in the body
 * size. Children are pushed in reverse so the first hit is the first in document order.
 */
function loneSurrogateAt(root: unknown): string | null {
  const stack: WalkFrame[] = [{ value: root, parent: null, step: '' }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { value } = frame;
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) return `field "${pathOf(frame)}"`;
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], parent: frame, step: `[${i}]` });
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      const children: WalkFrame[] = [];
      for (const [k, v] of entries) {
        const child: WalkFrame = { value: v, parent: frame, step: frame.parent === null ? k : `.${k}` };
        // A key is checked before any value, as a recursive walk over entries would meet it.
        if (LONE_SURROGATE.test(k)) return `key "${pathOf(child)}"`;
        children.push(child);
      }
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    }
  }
  return null;
}

/**
 * Collects the body, stopping at the limit: on overflow the stream is paused (not destroyed) so
 * the 413 response can still be written; the server then closes the connection.
 */
async function collect(req: IncomingMessage, limitBytes: number): Promise<{ chunks: Buffer[]; size: number }> {
  const chunks: Buffer[] = [];
  const size = await streamBody(req, limitBytes, (chunk) => chunks.push(chunk));
  return { chunks, size };
}

/**
 * Hands each chunk of the body to `onChunk` as it arrives and resolves to its size in bytes once
 * it ends. Rejects with 413 BODY_TOO_LARGE naming `refusedAs` (default `limitBytes`) past
 * `limitBytes`: the stream is paused (not destroyed) so the 413 response can still be written;
 * the server then drains or closes the connection. 400 MALFORMED_REQUEST when it cannot be read.
 */
export function streamBody(req: IncomingMessage, limitBytes: number, onChunk: (chunk: Buffer) => void, refusedAs: number = limitBytes): Promise<number> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        req.pause();
        reject(payloadTooLarge(refusedAs));
        return;
      }
      onChunk(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(size);
    };
    const onError = (err: Error) => {
      cleanup();
      reject(fail('MALFORMED_REQUEST', `request body could not be read: ${err.message}`));
    };
    const onAborted = () => onError(new Error('client aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
