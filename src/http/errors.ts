/**
 * The refusals only the HTTP layer makes (authentication, methods, body and target limits, write
 * stop, rate limits), as `ServiceError` values of the catalogue in src/errors.ts, with the headers
 * each status needs. `sendError` in src/http/reply.ts is the one place that renders them as
 * `{"error": "...", "code": "..."}` (part 7, issue 20).
 */
import { ServiceError, type ErrorCode } from '../errors.js';

/** 401 `UNAUTHORIZED`: missing, invalid, revoked or disabled token (part 5 item 6). */
export const unauthorized = (message: string) => new ServiceError('UNAUTHORIZED', message, { 'WWW-Authenticate': 'Bearer' });
/** 405 `METHOD_NOT_ALLOWED`: known path, other method; `allow` lists the methods it takes. */
export const methodNotAllowed = (allow: string[]) =>
  new ServiceError('METHOD_NOT_ALLOWED', `method not allowed; use ${allow.join(', ')}`, { Allow: allow.join(', ') });
/** 413 `BODY_TOO_LARGE`: body over `limitBytes` (part 8); the connection is closed after the answer. */
export const payloadTooLarge = (limitBytes: number) =>
  new ServiceError('BODY_TOO_LARGE', `request body exceeds ${limitBytes} bytes (${limitBytes / 1024} KiB)`, { Connection: 'close' });
/** 414 `URI_TOO_LONG`: request target over `limitBytes`. */
export const uriTooLong = (limitBytes: number) => new ServiceError('URI_TOO_LONG', `request target exceeds ${limitBytes} bytes`);
/** 415 `UNSUPPORTED_MEDIA_TYPE`: POST without one of the `accepted` types (part 8). */
export const unsupportedMediaType = (accepted: string[]) =>
  new ServiceError('UNSUPPORTED_MEDIA_TYPE', `Content-Type must be ${accepted.join(' or ')}`);
/**
 * 423 `WRITE_STOP`: the operator stopped writes (part 7). The message carries the operator's
 * reason and the time writes resume by themselves, when given (issue 38): the error body's
 * `error` is the one place of the spec's shapes that has room for them.
 */
export const writeStopped = (stop: { reason?: string; untilMs?: number | null } = {}) =>
  new ServiceError(
    'WRITE_STOP',
    'the operator has paused writes (write stop)' +
      (stop.reason ? `: ${stop.reason}` : '') +
      '; reads keep working; ' +
      (stop.untilMs !== undefined && stop.untilMs !== null ? `writes resume at ${new Date(stop.untilMs).toISOString()}, retry then` : 'retry later'),
  );
/** 429 (`RATE_LIMITED` unless given): a rate limit was hit; Retry-After is `retryAfterSeconds` rounded up, ≥ 1 (parts 7, 8). */
export const tooManyRequests = (message: string, retryAfterSeconds: number, code: ErrorCode = 'RATE_LIMITED') =>
  new ServiceError(code, message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
