import { AppException } from './app.exception.js';
import type { RenderedError } from './error-body.js';
import { ERROR_CODE_MAPPING, ErrorCode } from './error-code.js';

/**
 * An AppException on an OAuth endpoint (/oauth/*, /.well-known/oauth-*) as an RFC 6749 §5.2 body:
 * body-parser and guard failures that happen before the OAuth routes' own filter still answer in the
 * shape OAuth clients parse. 404/405/413/415 keep their status; other client errors are 400.
 */
export function renderOAuthError(exception: AppException): RenderedError {
  const status = ERROR_CODE_MAPPING[exception.code].status;
  const headers = { ...exception.headers, 'Cache-Control': 'no-store' };
  if (exception.code === ErrorCode.RateLimited)
    return { status: 429, headers, body: { error: 'too_many_requests', error_description: exception.message } };
  if (status >= 500)
    return { status: 500, headers, body: { error: 'server_error', error_description: 'Internal server error' } };
  return {
    status: [404, 405, 413, 415].includes(status) ? status : 400,
    headers,
    body: { error: 'invalid_request', error_description: exception.message },
  };
}
