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
 * Throws 415 (wrong Content-Type), 413 (over `limitBytes`; stops reading), 400 (invalid UTF-8
 * or malformed JSON, with the parser's reason).
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
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`malformed JSON: ${(err as Error).message}`);
  }
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
