import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { apiAreaOf, isMcpEndpoint, isOAuthEndpoint } from '../http/api-area.js';
import { RequestContext } from '../request-context/request-context.js';
import { AppException } from './app.exception.js';
import { renderError } from './error-body.js';
import { renderJsonRpcError } from './json-rpc-error-body.js';
import { renderOAuthError } from './oauth-error-body.js';
import { ErrorCode } from './error-code.js';
import { toAppException } from './to-app-exception.js';

/** The one place an error becomes an HTTP answer, for both doors. */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    const http = host.switchToHttp();
    sendError(exception, http.getRequest<Request>(), http.getResponse<Response>(), this.logger);
  }
}

/** Shared by the Nest filter and the trailing Express error handler (errors thrown by middleware). */
export function sendError(exception: unknown, req: Request, res: Response, logger: Logger): void {
  let appException = toAppException(exception);
  if (!appException) {
    logger.error(
      { msg: 'Unhandled error', method: req.method, path: req.path },
      exception instanceof Error ? exception : undefined,
    );
    appException = new AppException(ErrorCode.Internal, 'Internal server error; quote the traceId when reporting it');
  } else if (isPlannedDrain(appException)) {
    // Readiness during a planned shutdown: expected, so the access line stays at info (accessLogMiddleware).
    res.locals.plannedDrain = true;
  } else if (appException.code === ErrorCode.DependencyUnavailable || appException.code === ErrorCode.UpstreamError) {
    logger.warn({ msg: appException.message, code: appException.code, path: req.path });
  }
  const traceId = RequestContext.requestId() ?? String(res.getHeader('X-Request-Id') ?? '');
  const rendered = isMcpEndpoint(req)
    ? renderJsonRpcError(exception, appException, req.body, traceId)
    : isOAuthEndpoint(req)
      ? renderOAuthError(appException)
      : renderError(appException, apiAreaOf(req), traceId);
  if (res.headersSent) {
    res.end();
    return;
  }
  res.status(rendered.status);
  for (const [name, value] of Object.entries(rendered.headers)) res.setHeader(name, value);
  res.json(rendered.body);
}

/** The 503 of a readiness probe while the process drains (HealthController.ready): not a failure. */
function isPlannedDrain(exception: AppException): boolean {
  const details = exception.details;
  return (
    exception.code === ErrorCode.DependencyUnavailable &&
    !!details &&
    !Array.isArray(details) &&
    details.draining === true
  );
}
