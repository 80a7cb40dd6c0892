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
      error: { code: mapping.backendCode, message: exception.message, details: exception.details ?? [] },
      traceId,
    },
  };
}
