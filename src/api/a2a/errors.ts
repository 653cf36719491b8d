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
 * carries our stable ServiceError code as reason and the service's host as domain.
 */
import type { App } from '../../app.js';
import { A2A_ERROR_DOMAIN } from '../../constants.js';
import { ERROR_CATALOGUE, ServiceError, type ErrorCode } from '../../errors.js';
import { limitFromHeaders } from '../../http/rate-limit.js';
import type { ErrorFormat } from '../../http/router.js';
import { A2A_RESPONSE_MEDIA_TYPES, a2aContentType } from './media.js';

/** An error defined by A2A itself; `code` is its ErrorInfo reason (UPPER_SNAKE_CASE). */
export class A2AProtocolError extends ServiceError {
  constructor(
    /** ErrorInfo reason; its status and google.rpc.Code name come from ERROR_CATALOGUE (A2A 1.0.1 §5.4). */
    reason: ErrorCode,
    message: string,
    /** ErrorInfo metadata (string values). */
    readonly metadata: Record<string, string> = {},
  ) {
    super(reason, message);
    this.name = 'A2AProtocolError';
  }
}

/** 404 TaskNotFound: work items are application records, not A2A tasks, so no task id exists. */
export const taskNotFound = (taskId: string) =>
  new A2AProtocolError('TASK_NOT_FOUND', `no A2A task with id ${JSON.stringify(taskId)}: this agent answers synchronously and creates no A2A tasks (work items are application records; use the work.* actions)`,
    { taskId },
  );

/** 400 UnsupportedOperation: the operation exists in A2A but this agent does not offer it. */
export const unsupportedOperation = (message: string) =>
  new A2AProtocolError('UNSUPPORTED_OPERATION', message);

/** 400 PushNotificationNotSupported (capabilities.pushNotifications is false). */
export const pushNotificationNotSupported = () =>
  new A2AProtocolError('PUSH_NOTIFICATION_NOT_SUPPORTED', 'push notifications are not supported (capabilities.pushNotifications is false); poll the change feeds (actions "changes" and "work.changes") instead',
  );

/** 400 VersionNotSupported, naming the header to send. */
export const versionNotSupported = (message: string, supported: string) =>
  new A2AProtocolError('VERSION_NOT_SUPPORTED', message, { supportedVersions: supported });

/** 400 ContentTypeNotSupported: a message part of a media type this agent does not accept. */
export const contentTypeNotSupported = (message: string) =>
  new A2AProtocolError('CONTENT_TYPE_NOT_SUPPORTED', message);

/** The google.rpc.Code name for an error (ERROR_CATALOGUE; its canonical HTTP mapping matches the status). */
export function rpcStatusOf(err: ServiceError): string {
  return ERROR_CATALOGUE[err.code].rpcStatus;
}

/** The host of FORUM_PUBLIC_URL: the ErrorInfo domain of our own reasons. */
export function serviceDomain(app: App): string {
  return new URL(app.config.publicUrl).hostname;
}

/**
 * Renders an error as a google.rpc.Status JSON body (see the module comment).
 * ErrorInfo metadata: A2A errors' own (e.g. taskId), plus `retryAfterSeconds` and `allow` when
 * the response carries Retry-After or Allow, and on a rate-limit 429 the limit's facts
 * (`limitPolicy`, `limitScope`, `limitUnit`, `limitQuota`, `limitWindowSeconds`,
 * `limitRemaining`, `limitResetSeconds`: schemas/LimitState.json as strings).
 */
export function renderA2AError(err: ServiceError, app: App): string {
  const metadata: Record<string, string> = err instanceof A2AProtocolError ? { ...err.metadata } : {};
  if (err.headers['Retry-After'] !== undefined) metadata.retryAfterSeconds = err.headers['Retry-After'];
  if (err.headers.Allow !== undefined) metadata.allow = err.headers.Allow;
  // A rate-limit refusal carries the limit's facts (issue 54), as GET /api/limits lists them:
  // limitPolicy, limitScope, limitUnit, limitQuota, limitWindowSeconds, limitRemaining, limitResetSeconds.
  const limit = err.status === 429 ? limitFromHeaders(err.headers) : null;
  if (limit !== null) for (const [k, v] of Object.entries(limit)) metadata[`limit${k[0]!.toUpperCase()}${k.slice(1)}`] = String(v);
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

/**
 * The error format of every /a2a/* route (schemas/A2AError.json), sent as application/json or
 * application/a2a+json as the client prefers (./media.ts; A2A 1.0.1 §11.1).
 */
export const A2A_ERROR_FORMAT: ErrorFormat = { schema: 'A2AError', render: renderA2AError, contentType: a2aContentType, contentTypes: A2A_RESPONSE_MEDIA_TYPES };
