/**
 * Every failure the service can report. One exhaustive table maps each to its HTTP status, the Area A
 * (tool API, snake_case) code and the Area B (envelope, UPPER_CASE) code, so both doors agree.
 */
export enum ErrorCode {
  ValidationFailed = 'validation_failed',
  InvalidArgument = 'invalid_argument',
  MissingArgument = 'missing_argument',
  InvalidRequest = 'invalid_request',
  AuthRequired = 'auth_required',
  AuthInvalid = 'auth_invalid',
  MissingApiKey = 'missing_api_key',
  InvalidApiKey = 'invalid_api_key',
  ExpiredApiKey = 'expired_api_key',
  RevokedApiKey = 'revoked_api_key',
  InsufficientScope = 'insufficient_scope',
  Forbidden = 'forbidden',
  /** A tool outside the credential's tools allowlist or read-only choice, or outside the request's toolsets. */
  ToolNotAllowed = 'tool_not_allowed',
  /** An Area A call from a client address outside the admin policy's or the credential's allowedIps. */
  IpNotAllowed = 'ip_not_allowed',
  /** An OAuth grant of a client the admin policy no longer allows (allowedOAuthClients). */
  OAuthClientNotAllowed = 'oauth_client_not_allowed',
  /** A write tool of a "confirm writes" credential, on a door that cannot ask the user. */
  ConfirmationRequired = 'confirmation_required',
  /** The user declined to confirm a write tool call (MCP elicitation). */
  Declined = 'declined',
  UnknownTool = 'unknown_tool',
  NotFound = 'not_found',
  Conflict = 'conflict',
  StateConflict = 'state_conflict',
  IdempotencyConflict = 'idempotency_conflict',
  PayloadTooLarge = 'payload_too_large',
  UnsupportedMediaType = 'unsupported_media_type',
  MethodNotAllowed = 'method_not_allowed',
  RateLimited = 'rate_limited',
  UpstreamError = 'upstream_error',
  DependencyUnavailable = 'dependency_unavailable',
  Internal = 'internal',
}

export interface ErrorCodeMapping {
  status: number;
  /** Area A `error.code`. */
  toolApiCode: string;
  /** Area B `error.code`. */
  backendCode: string;
}

export const ERROR_CODE_MAPPING: Record<ErrorCode, ErrorCodeMapping> = {
  [ErrorCode.ValidationFailed]: { status: 400, toolApiCode: 'invalid_request', backendCode: 'VALIDATION_FAILED' },
  [ErrorCode.InvalidArgument]: { status: 400, toolApiCode: 'invalid_argument', backendCode: 'VALIDATION_FAILED' },
  [ErrorCode.MissingArgument]: { status: 400, toolApiCode: 'missing_argument', backendCode: 'VALIDATION_FAILED' },
  [ErrorCode.InvalidRequest]: { status: 400, toolApiCode: 'invalid_request', backendCode: 'VALIDATION_FAILED' },
  [ErrorCode.AuthRequired]: { status: 401, toolApiCode: 'missing_api_key', backendCode: 'AUTH_REQUIRED' },
  [ErrorCode.AuthInvalid]: { status: 401, toolApiCode: 'invalid_api_key', backendCode: 'AUTH_INVALID' },
  [ErrorCode.MissingApiKey]: { status: 401, toolApiCode: 'missing_api_key', backendCode: 'AUTH_REQUIRED' },
  [ErrorCode.InvalidApiKey]: { status: 401, toolApiCode: 'invalid_api_key', backendCode: 'AUTH_INVALID' },
  [ErrorCode.ExpiredApiKey]: { status: 401, toolApiCode: 'expired_api_key', backendCode: 'AUTH_INVALID' },
  [ErrorCode.RevokedApiKey]: { status: 401, toolApiCode: 'revoked_api_key', backendCode: 'AUTH_INVALID' },
  [ErrorCode.InsufficientScope]: { status: 403, toolApiCode: 'insufficient_scope', backendCode: 'FORBIDDEN' },
  [ErrorCode.Forbidden]: { status: 403, toolApiCode: 'forbidden', backendCode: 'FORBIDDEN' },
  [ErrorCode.ToolNotAllowed]: { status: 403, toolApiCode: 'tool_not_allowed', backendCode: 'FORBIDDEN' },
  [ErrorCode.IpNotAllowed]: { status: 403, toolApiCode: 'ip_not_allowed', backendCode: 'FORBIDDEN' },
  [ErrorCode.OAuthClientNotAllowed]: {
    status: 403,
    toolApiCode: 'oauth_client_not_allowed',
    backendCode: 'FORBIDDEN',
  },
  [ErrorCode.ConfirmationRequired]: { status: 403, toolApiCode: 'confirmation_required', backendCode: 'FORBIDDEN' },
  [ErrorCode.Declined]: { status: 403, toolApiCode: 'declined', backendCode: 'FORBIDDEN' },
  [ErrorCode.UnknownTool]: { status: 404, toolApiCode: 'unknown_tool', backendCode: 'NOT_FOUND' },
  [ErrorCode.NotFound]: { status: 404, toolApiCode: 'not_found', backendCode: 'NOT_FOUND' },
  [ErrorCode.Conflict]: { status: 409, toolApiCode: 'conflict', backendCode: 'CONFLICT' },
  [ErrorCode.StateConflict]: { status: 409, toolApiCode: 'state_conflict', backendCode: 'STATE_CONFLICT' },
  [ErrorCode.IdempotencyConflict]: { status: 409, toolApiCode: 'idempotency_conflict', backendCode: 'CONFLICT' },
  [ErrorCode.PayloadTooLarge]: { status: 413, toolApiCode: 'invalid_request', backendCode: 'PAYLOAD_TOO_LARGE' },
  [ErrorCode.UnsupportedMediaType]: {
    status: 415,
    toolApiCode: 'invalid_request',
    backendCode: 'UNSUPPORTED_MEDIA_TYPE',
  },
  [ErrorCode.MethodNotAllowed]: { status: 405, toolApiCode: 'invalid_request', backendCode: 'VALIDATION_FAILED' },
  [ErrorCode.RateLimited]: { status: 429, toolApiCode: 'rate_limited', backendCode: 'RATE_LIMITED' },
  [ErrorCode.UpstreamError]: { status: 502, toolApiCode: 'upstream_error', backendCode: 'DEPENDENCY_UNAVAILABLE' },
  [ErrorCode.DependencyUnavailable]: { status: 503, toolApiCode: 'internal', backendCode: 'DEPENDENCY_UNAVAILABLE' },
  [ErrorCode.Internal]: { status: 500, toolApiCode: 'internal', backendCode: 'INTERNAL' },
};
