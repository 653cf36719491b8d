/**
 * Request body reading: content type check (415), size limit (413, reading stops at the limit),
 * strict UTF-8 and JSON parsing (400). Part 8 "Request body" and "Content type".
 */
import type { IncomingMessage } from 'node:http';
import { BODY_BYTES_MAX } from '../constants.js';
import { badRequest, payloadTooLarge, unsupportedMediaType } from './errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(header: string | undefined): string {
  return (header ?? '').split(';', 1)[0]!.trim().toLowerCase();
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
  let text: string;
  try {
    text = utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
  } catch {
    throw badRequest('request body is not valid UTF-8');
  }
  if (text.trim() === '') throw badRequest('request body is empty; send a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`malformed JSON: ${(err as Error).message}`);
  }
  // Strict UTF-8 decoding already refused encoded surrogates; a lone one can only come from a
  // \uD800-\uDFFF escape, so the (rare) walk runs only when the text has such an escape.
  if (SURROGATE_ESCAPE.test(text)) {
    const where = loneSurrogateAt(value, '');
    if (where !== null) {
      throw badRequest(`${where || 'the body'} holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape); text must be valid Unicode (I-JSON, RFC 7493)`);
    }
  }
  return value;
}

/** A `\u` escape of a UTF-16 surrogate (D800-DFFF), any case. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
/** A high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The JSON path (`field "a.b[2]"`) of the first string or key in `value` that holds a lone
 * surrogate, or null. Such text cannot be encoded as UTF-8, so it could be neither stored as
 * canonical JSON (RFC 8785 assumes I-JSON) nor hashed in an export.
 */
function loneSurrogateAt(value: unknown, path: string): string | null {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? `field "${path}"` : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = loneSurrogateAt(value[i], `${path}[${i}]`);
      if (hit !== null) return hit;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const at = path ? `${path}.${k}` : k;
      if (LONE_SURROGATE.test(k)) return `key "${at}"`;
      const hit = loneSurrogateAt(v, at);
      if (hit !== null) return hit;
    }
  }
  return null;
}

/**
 * Collects the body, stopping at the limit: on overflow the stream is paused (not destroyed) so
 * the 413 response can still be written; the server then closes the connection.
 */
function collect(req: IncomingMessage, limitBytes: number): Promise<{ chunks: Buffer[]; size: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
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
        reject(payloadTooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ chunks, size });
    };
    const onError = (err: Error) => {
      cleanup();
      reject(badRequest(`request body could not be read: ${err.message}`));
    };
    const onAborted = () => onError(new Error('client aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
