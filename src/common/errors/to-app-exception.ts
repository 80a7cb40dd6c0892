import { HttpException } from '@nestjs/common';
import { isConnectionFailure } from '../../database/pg-errors.js';
import { isRedisUnavailable } from '../redis/redis-errors.js';
import { AppException } from './app.exception.js';
import { ErrorCode } from './error-code.js';

const STATUS_TO_CODE: Record<number, ErrorCode> = {
  400: ErrorCode.ValidationFailed,
  401: ErrorCode.AuthRequired,
  403: ErrorCode.Forbidden,
  404: ErrorCode.NotFound,
  405: ErrorCode.MethodNotAllowed,
  409: ErrorCode.Conflict,
  413: ErrorCode.PayloadTooLarge,
  415: ErrorCode.UnsupportedMediaType,
  429: ErrorCode.RateLimited,
  503: ErrorCode.DependencyUnavailable,
};

/** Errors raised by body-parser / multer carry a `type` or `code` and a status, not an HttpException. */
interface MiddlewareError {
  status?: number;
  statusCode?: number;
  type?: string;
  code?: string;
  expose?: boolean;
}

/**
 * An error raised by a client of an outside service (e.g. EmbeddingError) carries `upstream` = that
 * service's name, so it is reported as upstream_error without the common layer knowing each client.
 */
export interface UpstreamFailure {
  upstream: string;
  status?: number;
}

function isUpstreamFailure(error: unknown): error is Error & UpstreamFailure {
  return error instanceof Error && typeof (error as Partial<UpstreamFailure>).upstream === 'string';
}

/**
 * Normalises anything thrown into an AppException. Returns `undefined` for unknown errors so the
 * caller logs the cause and answers a generic 500. A dependency outage (PostgreSQL or Redis
 * unreachable) is 503 DEPENDENCY_UNAVAILABLE, wherever it surfaced; an outside service that failed or
 * did not answer in time is upstream_error. Messages never carry hosts, URLs or driver text.
 */
export function toAppException(error: unknown): AppException | undefined {
  if (error instanceof AppException) return error;
  if (error instanceof HttpException) return fromHttpException(error);
  if (isConnectionFailure(error)) {
    return new AppException(ErrorCode.DependencyUnavailable, 'The database is unavailable; retry shortly', {
      dependency: 'database',
    });
  }
  if (isRedisUnavailable(error)) {
    return new AppException(
      ErrorCode.DependencyUnavailable,
      'A required service (Redis) is unavailable; retry shortly',
      { dependency: 'redis' },
    );
  }
  if (isUpstreamFailure(error)) {
    const details = { upstream: error.upstream, ...(error.status !== undefined ? { status: error.status } : {}) };
    return new AppException(
      ErrorCode.UpstreamError,
      `The ${error.upstream} service failed or did not answer in time; retry later`,
      details,
    );
  }
  if (typeof error === 'object' && error !== null) return fromMiddlewareError(error);
  return undefined;
}

function fromHttpException(error: HttpException): AppException {
  const status = error.getStatus();
  const response = error.getResponse();
  if (error.name === 'ThrottlerException') {
    return new AppException(ErrorCode.RateLimited, 'Too many requests; slow down and retry later');
  }
  const code = STATUS_TO_CODE[status] ?? (status >= 500 ? ErrorCode.Internal : ErrorCode.ValidationFailed);
  if (
    status === 404 &&
    typeof response === 'object' &&
    /^Cannot (GET|POST|PUT|PATCH|DELETE)/.test(String((response as { message?: unknown }).message))
  ) {
    return new AppException(ErrorCode.NotFound, 'No such route');
  }
  const message = typeof response === 'string' ? response : (response as { message?: unknown }).message;
  if (Array.isArray(message)) {
    // class-validator messages from the ValidationPipe.
    return new AppException(
      code,
      'Request validation failed',
      message.map((m) => ({ message: String(m) })),
    );
  }
  return new AppException(code, typeof message === 'string' ? message : error.message);
}

function fromMiddlewareError(error: MiddlewareError): AppException | undefined {
  const status = error.status ?? error.statusCode;
  switch (error.type) {
    case 'entity.too.large':
      return new AppException(ErrorCode.PayloadTooLarge, 'Request body is too large');
    case 'entity.parse.failed':
      return new AppException(ErrorCode.InvalidRequest, 'Request body is not valid JSON');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppException(ErrorCode.UnsupportedMediaType, 'Unsupported request body encoding');
    case 'request.aborted':
      return new AppException(ErrorCode.InvalidRequest, 'Request was aborted by the client');
  }
  if (error.code === 'LIMIT_FILE_SIZE')
    return new AppException(ErrorCode.PayloadTooLarge, 'Uploaded file is too large');
  if (typeof error.code === 'string' && error.code.startsWith('LIMIT_')) {
    return new AppException(ErrorCode.ValidationFailed, 'Malformed multipart upload');
  }
  if (typeof status === 'number' && status >= 400 && status < 500 && error.expose) {
    return new AppException(STATUS_TO_CODE[status] ?? ErrorCode.ValidationFailed, 'Malformed request');
  }
  return undefined;
}
