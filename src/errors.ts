/**
 * The error catalogue, at the bottom of the source tree (undici's `lib/core/errors.js`, Fastify's
 * `createError(code, message, status)`): every refusal or failure the service reports is a
 * `ServiceError` with a stable `code` from schemas/ErrorCode.json. The code alone decides the HTTP
 * status and the A2A google.rpc.Code name (`ERROR_CATALOGUE`), so the domain names what went wrong
 * and never picks a status; REST (src/http), A2A (src/api/a2a) and MCP read the same table.
 * `message` says which field or rule was violated (part 7, issue 20).
 *
 * Nothing here imports from the rest of `src/`: domain, store and HTTP code may all import it.
 */

/**
 * Every error code, as listed with its meaning and statuses in schemas/ErrorCode.json (the
 * single source for /openapi.json; a unit test keeps the two lists and their statuses equal).
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
  'OPERATOR_ONLY',
  'TOKEN_SCOPE',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'REQUEST_TIMEOUT',
  'ALREADY_EXISTS',
  'IDEMPOTENCY_CONFLICT',
  'ERASED',
  'ERASED_CONTAINER',
  'REVISION_CONFLICT',
  'WORK_STATE',
  'WORK_CLOSED',
  'CREDENTIAL_LIMIT',
  'DEVICE_CODE_GONE',
  'KEY_STATE',
  'CURSOR_ORIGIN',
  'CURSOR_AHEAD',
  'CURSOR_LOST',
  'BODY_TOO_LARGE',
  'URI_TOO_LONG',
  'UNSUPPORTED_MEDIA_TYPE',
  'EXPECTATION_FAILED',
  'WRITE_STOP',
  'RATE_LIMITED',
  'HEADERS_TOO_LARGE',
  'INTERNAL',
  'UNAVAILABLE',
  'REPLICA_UNAVAILABLE',
  'REPLICA_FENCED',
  'FOLLOWER_READ_ONLY',
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

/** How one code is carried by each binding. */
export interface ErrorKind {
  /** HTTP status of the REST and A2A responses (schemas/ErrorCode.json `x-status`; part 7). */
  readonly status: number;
  /** google.rpc.Code name of the A2A error body (A2A 1.0.1 §5.4); its canonical HTTP mapping matches `status`. */
  readonly rpcStatus: string;
}

/** Code → status and A2A status: the one table the bindings render from. */
export const ERROR_CATALOGUE: Readonly<Record<ErrorCode, ErrorKind>> = {
  VALIDATION: { status: 400, rpcStatus: 'INVALID_ARGUMENT' },
  WORK_SNAPSHOT_TOO_LARGE: { status: 400, rpcStatus: 'INVALID_ARGUMENT' },
  MALFORMED_JSON: { status: 400, rpcStatus: 'INVALID_ARGUMENT' },
  BAD_TARGET: { status: 400, rpcStatus: 'INVALID_ARGUMENT' },
  MALFORMED_REQUEST: { status: 400, rpcStatus: 'INVALID_ARGUMENT' },
  UNAUTHORIZED: { status: 401, rpcStatus: 'UNAUTHENTICATED' },
  NOT_AUTHOR: { status: 403, rpcStatus: 'PERMISSION_DENIED' },
  REGISTRATION_CLOSED: { status: 403, rpcStatus: 'PERMISSION_DENIED' },
  WORK_ROLE: { status: 403, rpcStatus: 'PERMISSION_DENIED' },
  OPERATOR_ONLY: { status: 403, rpcStatus: 'PERMISSION_DENIED' },
  TOKEN_SCOPE: { status: 403, rpcStatus: 'PERMISSION_DENIED' },
  NOT_FOUND: { status: 404, rpcStatus: 'NOT_FOUND' },
  METHOD_NOT_ALLOWED: { status: 405, rpcStatus: 'UNIMPLEMENTED' },
  REQUEST_TIMEOUT: { status: 408, rpcStatus: 'UNKNOWN' },
  ALREADY_EXISTS: { status: 409, rpcStatus: 'ABORTED' },
  IDEMPOTENCY_CONFLICT: { status: 409, rpcStatus: 'ALREADY_EXISTS' },
  ERASED: { status: 409, rpcStatus: 'ALREADY_EXISTS' },
  ERASED_CONTAINER: { status: 409, rpcStatus: 'ABORTED' },
  REVISION_CONFLICT: { status: 409, rpcStatus: 'ABORTED' },
  WORK_STATE: { status: 409, rpcStatus: 'FAILED_PRECONDITION' },
  WORK_CLOSED: { status: 409, rpcStatus: 'FAILED_PRECONDITION' },
  CREDENTIAL_LIMIT: { status: 409, rpcStatus: 'FAILED_PRECONDITION' },
  DEVICE_CODE_GONE: { status: 409, rpcStatus: 'FAILED_PRECONDITION' },
  KEY_STATE: { status: 409, rpcStatus: 'FAILED_PRECONDITION' },
  CURSOR_ORIGIN: { status: 409, rpcStatus: 'FAILED_PRECONDITION' },
  CURSOR_AHEAD: { status: 409, rpcStatus: 'FAILED_PRECONDITION' },
  CURSOR_LOST: { status: 409, rpcStatus: 'FAILED_PRECONDITION' },
  BODY_TOO_LARGE: { status: 413, rpcStatus: 'INVALID_ARGUMENT' },
  URI_TOO_LONG: { status: 414, rpcStatus: 'INVALID_ARGUMENT' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, rpcStatus: 'INVALID_ARGUMENT' },
  EXPECTATION_FAILED: { status: 417, rpcStatus: 'FAILED_PRECONDITION' },
  WRITE_STOP: { status: 423, rpcStatus: 'FAILED_PRECONDITION' },
  RATE_LIMITED: { status: 429, rpcStatus: 'RESOURCE_EXHAUSTED' },
  HEADERS_TOO_LARGE: { status: 431, rpcStatus: 'UNKNOWN' },
  INTERNAL: { status: 500, rpcStatus: 'INTERNAL' },
  UNAVAILABLE: { status: 503, rpcStatus: 'UNAVAILABLE' },
  REPLICA_UNAVAILABLE: { status: 503, rpcStatus: 'UNAVAILABLE' },
  REPLICA_FENCED: { status: 503, rpcStatus: 'UNAVAILABLE' },
  FOLLOWER_READ_ONLY: { status: 503, rpcStatus: 'UNAVAILABLE' },
  LOW_DISK_SPACE: { status: 507, rpcStatus: 'RESOURCE_EXHAUSTED' },
  PARTICIPANT_LIMIT: { status: 507, rpcStatus: 'RESOURCE_EXHAUSTED' },
  TASK_NOT_FOUND: { status: 404, rpcStatus: 'NOT_FOUND' },
  UNSUPPORTED_OPERATION: { status: 400, rpcStatus: 'FAILED_PRECONDITION' },
  PUSH_NOTIFICATION_NOT_SUPPORTED: { status: 400, rpcStatus: 'FAILED_PRECONDITION' },
  VERSION_NOT_SUPPORTED: { status: 400, rpcStatus: 'FAILED_PRECONDITION' },
  CONTENT_TYPE_NOT_SUPPORTED: { status: 400, rpcStatus: 'INVALID_ARGUMENT' },
  ORIGIN_NOT_ALLOWED: { status: 403, rpcStatus: 'PERMISSION_DENIED' },
};

/**
 * An expected refusal or failure with a stable code. `status` comes from ERROR_CATALOGUE; the one
 * place that renders it is `sendError` in src/http/server.ts (A2A: src/api/a2a/errors.ts).
 */
export class ServiceError extends Error {
  /** HTTP status for `code` (ERROR_CATALOGUE). */
  readonly status: number;

  constructor(
    /** Stable code, e.g. `VALIDATION`, `WRITE_STOP` (schemas/ErrorCode.json). */
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers, e.g. Retry-After on 429/503, WWW-Authenticate on 401. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
    this.status = ERROR_CATALOGUE[code].status;
  }
}

/** `new ServiceError(code, message)`: the throw sites read as the rule they refuse. */
export const fail = (code: ErrorCode, message: string): ServiceError => new ServiceError(code, message);

/** 400 `VALIDATION` (or another 400 code): a field, parameter or filter breaks its rule. */
export const invalid = (message: string, code: ErrorCode = 'VALIDATION'): ServiceError => new ServiceError(code, message);

/** 404 `NOT_FOUND`: an unknown path or referenced resource. */
export const notFound = (message: string): ServiceError => new ServiceError('NOT_FOUND', message);
