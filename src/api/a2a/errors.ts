/**
 * Errors of the A2A binding (part 4 "A2A binding"; A2A 1.0.1 §3.3.2, §5.4, §11.6): every error
 * on /a2a/* is a google.rpc.Status JSON body
 *
 *   {"error": {"code": <HTTP status>, "status": "<google.rpc.Code name>", "message": "...",
 *              "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
 *                           "reason": "...", "domain": "...", "metadata": {...}}]}}
 *
 * with the HTTP status and headers (Retry-After, WWW-Authenticate, Allow) the REST endpoint gives.
 * The ErrorInfo of an error A2A defines (TaskNotFound, UnsupportedOperation, ...) carries A2A's
 * reason and domain `a2a-protocol.org`, so A2A SDKs map it to their typed errors; every other error
 * carries our stable HttpError code as reason and the service's host as domain.
 */
import type { App } from '../../app.js';
import { A2A_ERROR_DOMAIN } from '../../constants.js';
import { HttpError, type ErrorCode } from '../../http/errors.js';
import type { ErrorFormat } from '../../http/router.js';

/** An error defined by A2A itself; `code` is its ErrorInfo reason (UPPER_SNAKE_CASE). */
export class A2AProtocolError extends HttpError {
  constructor(
    status: number,
    reason: ErrorCode,
    /** google.rpc.Code name prescribed for it (A2A 1.0.1 §5.4). */
    readonly rpcStatus: string,
    message: string,
    /** ErrorInfo metadata (string values). */
    readonly metadata: Record<string, string> = {},
  ) {
    super(status, reason, message);
    this.name = 'A2AProtocolError';
  }
}

/** 404 TaskNotFound: work items are application records, not A2A tasks, so no task id exists. */
export const taskNotFound = (taskId: string) =>
  new A2AProtocolError(
    404,
    'TASK_NOT_FOUND',
    'NOT_FOUND',
    `no A2A task with id ${JSON.stringify(taskId)}: this agent answers synchronously and creates no A2A tasks (work items are application records; use the work.* actions)`,
    { taskId },
  );

/** 400 UnsupportedOperation: the operation exists in A2A but this agent does not offer it. */
export const unsupportedOperation = (message: string) =>
  new A2AProtocolError(400, 'UNSUPPORTED_OPERATION', 'FAILED_PRECONDITION', message);

/** 400 PushNotificationNotSupported (capabilities.pushNotifications is false). */
export const pushNotificationNotSupported = () =>
  new A2AProtocolError(
    400,
    'PUSH_NOTIFICATION_NOT_SUPPORTED',
    'FAILED_PRECONDITION',
    'push notifications are not supported (capabilities.pushNotifications is false); poll the change feeds (actions "changes" and "work.changes") instead',
  );

/** 400 VersionNotSupported, naming the header to send. */
export const versionNotSupported = (message: string, supported: string) =>
  new A2AProtocolError(400, 'VERSION_NOT_SUPPORTED', 'FAILED_PRECONDITION', message, { supportedVersions: supported });

/** 400 ContentTypeNotSupported: a message part of a media type this agent does not accept. */
export const contentTypeNotSupported = (message: string) =>
  new A2AProtocolError(400, 'CONTENT_TYPE_NOT_SUPPORTED', 'INVALID_ARGUMENT', message);

/** google.rpc.Code names for our 409 codes; other 409s are ABORTED (a concurrency conflict). */
const CONFLICT_STATUS: Readonly<Record<string, string>> = {
  IDEMPOTENCY_CONFLICT: 'ALREADY_EXISTS',
  CURSOR_ORIGIN: 'FAILED_PRECONDITION',
  CURSOR_AHEAD: 'FAILED_PRECONDITION',
  WORK_STATE: 'FAILED_PRECONDITION',
  WORK_CLOSED: 'FAILED_PRECONDITION',
};

/** The google.rpc.Code name for an error (its canonical HTTP mapping matches the status). */
export function rpcStatusOf(err: HttpError): string {
  if (err instanceof A2AProtocolError) return err.rpcStatus;
  switch (err.status) {
    case 400:
    case 413:
    case 414:
    case 415:
      return 'INVALID_ARGUMENT';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 405:
      return 'UNIMPLEMENTED';
    case 409:
      return CONFLICT_STATUS[err.code] ?? 'ABORTED';
    case 423:
      return 'FAILED_PRECONDITION';
    case 429:
    case 507:
      return 'RESOURCE_EXHAUSTED';
    case 503:
      return 'UNAVAILABLE';
    default:
      return err.status >= 500 ? 'INTERNAL' : 'UNKNOWN';
  }
}

/** The host of FORUM_PUBLIC_URL: the ErrorInfo domain of our own reasons. */
export function serviceDomain(app: App): string {
  return new URL(app.config.publicUrl).hostname;
}

/**
 * Renders an error as a google.rpc.Status JSON body (see the module comment).
 * ErrorInfo metadata: A2A errors' own (e.g. taskId), plus `retryAfterSeconds` and `allow` when
 * the response carries Retry-After or Allow.
 */
export function renderA2AError(err: HttpError, app: App): string {
  const metadata: Record<string, string> = err instanceof A2AProtocolError ? { ...err.metadata } : {};
  if (err.headers['Retry-After'] !== undefined) metadata.retryAfterSeconds = err.headers['Retry-After'];
  if (err.headers.Allow !== undefined) metadata.allow = err.headers.Allow;
  return JSON.stringify({
    error: {
      code: err.status,
      status: rpcStatusOf(err),
      message: err.message,
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: err.code,
          domain: err instanceof A2AProtocolError ? A2A_ERROR_DOMAIN : serviceDomain(app),
          metadata,
        },
      ],
    },
  });
}

/** The error format of every /a2a/* route (schemas/A2AError.json). */
export const A2A_ERROR_FORMAT: ErrorFormat = { schema: 'A2AError', render: renderA2AError };
