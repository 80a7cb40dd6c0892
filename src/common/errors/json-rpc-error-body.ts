import { AppException } from './app.exception.js';
import { renderError, type RenderedError } from './error-body.js';
import { ErrorCode } from './error-code.js';

/** JSON-RPC 2.0 error codes used at the MCP transport level. */
export const JSON_RPC_PARSE_ERROR = -32700;
export const JSON_RPC_INVALID_REQUEST = -32600;
/** Implementation-defined server error: authentication, origin, rate limit, anything else. */
export const JSON_RPC_SERVER_ERROR = -32000;

/**
 * A transport-level failure on the MCP endpoint (bad body, bad key, foreign Origin, rate limit) as a
 * JSON-RPC error object. HTTP status and headers (WWW-Authenticate, Retry-After) are those of the
 * Area A answer; `error.data` carries the Area A body so clients see the same code either way.
 * Tool failures never come here: they are `isError` tool results.
 */
export function renderJsonRpcError(
  raw: unknown,
  exception: AppException,
  body: unknown,
  traceId: string,
): RenderedError {
  const areaA = renderError(exception, 'tool-api', traceId);
  const parseFailed =
    typeof raw === 'object' && raw !== null && (raw as { type?: unknown }).type === 'entity.parse.failed';
  let code = JSON_RPC_SERVER_ERROR;
  let message = exception.message;
  if (parseFailed) {
    code = JSON_RPC_PARSE_ERROR;
    message = 'Parse error: the body is not valid JSON';
  } else if (
    [ErrorCode.InvalidRequest, ErrorCode.PayloadTooLarge, ErrorCode.UnsupportedMediaType].includes(exception.code)
  ) {
    code = JSON_RPC_INVALID_REQUEST;
  }
  return {
    status: areaA.status,
    headers: areaA.headers,
    body: { jsonrpc: '2.0', id: requestIdOf(body), error: { code, message, data: areaA.body } },
  };
}

/**
 * Echo the JSON-RPC id when the body was one readable request with a valid id (a string, or an integer as MCP
 * requires); null otherwise, as JSON-RPC asks when the id cannot be detected (a fractional or huge number included).
 */
function requestIdOf(body: unknown): string | number | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const id = (body as { id?: unknown }).id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)) ? id : null;
}
