import { ErrorCode } from './error-code.js';

export type ErrorDetails = Record<string, unknown> | unknown[];

/**
 * The one domain exception. Services throw it with a code; the exception filter renders it for
 * whichever door the request came through. `headers` carries e.g. Retry-After or WWW-Authenticate.
 */
export class AppException extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppException';
  }

  static notFound(what: string): AppException {
    return new AppException(ErrorCode.NotFound, `${what} not found`);
  }

  static forbidden(message: string): AppException {
    return new AppException(ErrorCode.Forbidden, message);
  }

  static validation(message: string, details?: ErrorDetails): AppException {
    return new AppException(ErrorCode.ValidationFailed, message, details);
  }
}
