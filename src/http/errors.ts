/**
 * The error catalogue. Domain and HTTP code throw `HttpError` values; `sendError` in
 * src/http/server.ts is the one place that turns them into `{"error": "...", "code": "..."}`
 * responses (part 7, issue 20). `code` is stable and machine-readable (it is also the A2A
 * ErrorInfo `reason`); `message` says which field or rule was violated.
 */

/**
 * Every error code, as listed with its meaning and statuses in schemas/ErrorCode.json (the
 * single source for /openapi.json; a unit test keeps the two lists equal).
 */
export const ERROR_CODES = [
  'VALIDATION',
  'WORK_SNAPSHOT_TOO_LARGE',
  'MALFORMED_JSON',
  'BAD_TARGET',
  'MALFORMED_REQUEST',
  'UNAUTHORIZED',
  'NOT_AUTHOR',
  'REGISTRATION_CLOSED',
  'WORK_ROLE',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'REQUEST_TIMEOUT',
  'ALREADY_EXISTS',
  'IDEMPOTENCY_CONFLICT',
  'REVISION_CONFLICT',
  'WORK_STATE',
  'WORK_CLOSED',
  'CURSOR_ORIGIN',
  'CURSOR_AHEAD',
  'BODY_TOO_LARGE',
  'URI_TOO_LONG',
  'UNSUPPORTED_MEDIA_TYPE',
  'WRITE_STOP',
  'RATE_LIMITED',
  'HEADERS_TOO_LARGE',
  'INTERNAL',
  'UNAVAILABLE',
  'LOW_DISK_SPACE',
  'PARTICIPANT_LIMIT',
  'TASK_NOT_FOUND',
  'UNSUPPORTED_OPERATION',
  'PUSH_NOTIFICATION_NOT_SUPPORTED',
  'VERSION_NOT_SUPPORTED',
  'CONTENT_TYPE_NOT_SUPPORTED',
  'ORIGIN_NOT_ALLOWED',
] as const;

/** A stable error code (schemas/ErrorCode.json). */
export type ErrorCode = (typeof ERROR_CODES)[number];

export class HttpError extends Error {
  constructor(
    /** HTTP status (part 7). */
    readonly status: number,
    /** Stable code, e.g. `VALIDATION`, `WRITE_STOP` (schemas/ErrorCode.json). */
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers, e.g. Retry-After on 429/503. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** 400: invalid request, body, field or filter. */
export const badRequest = (message: string, code: ErrorCode = 'VALIDATION') => new HttpError(400, code, message);
/** 401: missing, invalid, revoked or disabled token (part 5 item 6). */
export const unauthorized = (message: string) =>
  new HttpError(401, 'UNAUTHORIZED', message, { 'WWW-Authenticate': 'Bearer' });
/** 403: wrong role, registration closed, or another author's revision (part 5 item 7). */
export const forbidden = (message: string, code: ErrorCode) => new HttpError(403, code, message);
/** 404: unknown path or referenced resource. */
export const notFound = (message: string) => new HttpError(404, 'NOT_FOUND', message);
/** 405: known path, other method. */
export const methodNotAllowed = (allow: string[]) =>
  new HttpError(405, 'METHOD_NOT_ALLOWED', `method not allowed; use ${allow.join(', ')}`, { Allow: allow.join(', ') });
/** 409: idempotency, revision or cursor conflict (part 7). */
export const conflict = (message: string, code: ErrorCode) => new HttpError(409, code, message);
/** 413: body over 32 KiB (part 8). */
export const payloadTooLarge = (limitBytes: number) =>
  new HttpError(413, 'BODY_TOO_LARGE', `request body exceeds ${limitBytes} bytes (32 KiB)`, { Connection: 'close' });
/** 414: request target too long. */
export const uriTooLong = (limitBytes: number) =>
  new HttpError(414, 'URI_TOO_LONG', `request target exceeds ${limitBytes} bytes`);
/** 415: POST without application/json (part 8). */
export const unsupportedMediaType = (accepted: string[]) =>
  new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Type must be ${accepted.join(' or ')}`);
/** 423: the operator stopped writes (part 7). */
export const writeStopped = () =>
  new HttpError(423, 'WRITE_STOP', 'the operator has paused writes (write stop); reads keep working, retry later');
/** 429: a rate limit was hit; `retryAfterSeconds` ≥ 1 (parts 7, 8). */
export const tooManyRequests = (message: string, retryAfterSeconds: number, code: ErrorCode = 'RATE_LIMITED') =>
  new HttpError(429, code, message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
/** 507: storage or participant limit reached; operator action required (part 7). */
export const insufficientStorage = (message: string, code: ErrorCode) => new HttpError(507, code, message);
