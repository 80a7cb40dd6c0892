import type { ApiArea } from '../http/api-area.js';
import { AppException } from './app.exception.js';
import { ERROR_CODE_MAPPING } from './error-code.js';

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** The Area A error body or the Area B envelope for one AppException. No stack, no SQL, ever. */
export function renderError(exception: AppException, area: ApiArea, traceId: string): RenderedError {
  const mapping = ERROR_CODE_MAPPING[exception.code];
  const headers = { ...exception.headers };
  if (mapping.status === 401) headers['WWW-Authenticate'] ??= 'Bearer';
  if (area === 'tool-api') {
    return {
      status: mapping.status,
      headers,
      body: {
        error: { code: mapping.toolApiCode, message: exception.message, details: exception.details ?? {} },
        traceId,
      },
    };
  }
  return {
    status: mapping.status,
    headers,
    body: {
      success: false,
      data: null,
      error: {
        code: mapping.backendCode,
        message: exception.message,
        details: backendDetails(mapping.backendCode, exception),
      },
      traceId,
    },
  };
}

/**
 * Area B details: a VALIDATION_FAILED answer always lists what was wrong as `[{field, message}]` (API.md's
 * envelope), also when the error came from a shared rule that names its argument the Area A way
 * (`{argument}`, `{header}`). Other codes keep the shape API.md documents for them (`{existingId}`,
 * `{retryAfterSeconds}`, `{status}`).
 */
function backendDetails(backendCode: string, exception: AppException): unknown {
  const details = exception.details;
  if (details === undefined || details === null) return [];
  if (backendCode !== 'VALIDATION_FAILED' || Array.isArray(details) || typeof details !== 'object') return details;
  const named = details;
  const field = named.field ?? named.argument ?? named.header ?? named.parameter;
  return [{ ...(typeof field === 'string' ? { field } : {}), message: exception.message }];
}
