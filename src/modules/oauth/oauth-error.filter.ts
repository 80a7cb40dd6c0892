import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import {
  CustomOAuthError,
  OAuthError,
  ServerError,
  TooManyRequestsError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Request, Response } from 'express';
import { toAppException } from '../../common/errors/to-app-exception.js';
import { ERROR_CODE_MAPPING } from '../../common/errors/error-code.js';
import { renderOAuthError } from '../../common/errors/oauth-error-body.js';

/**
 * Errors of the OAuth endpoints (/oauth/*, /.well-known/*) as RFC 6749 §5.2 bodies
 * `{error, error_description}`: `invalid_client` 401 (with a Basic challenge when the client tried the
 * Authorization header), rate limits 429, server faults 500 (logged, never described), the rest 400.
 * Every answer is `no-store`: some of these endpoints hand out secrets.
 */
@Catch()
export class OAuthErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('OAuth');

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<Request>();
    const response = host.switchToHttp().getResponse<Response>();
    const { status, error, headers } = this.toOAuthError(exception, request);
    if (response.headersSent) {
      response.end();
      return;
    }
    response.status(status).setHeader('Cache-Control', 'no-store').setHeader('Pragma', 'no-cache');
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    response.json(error.toResponseObject());
  }

  private toOAuthError(
    exception: unknown,
    request: Request,
  ): { status: number; error: OAuthError; headers: Record<string, string> } {
    if (exception instanceof OAuthError) {
      if (exception.errorCode === 'invalid_client') {
        const triedBasic = /^Basic\s/i.test(request.headers.authorization ?? '');
        return {
          status: 401,
          error: exception,
          headers: triedBasic ? { 'WWW-Authenticate': 'Basic realm="atrium"' } : {},
        };
      }
      if (exception instanceof ServerError) return { status: 500, error: exception, headers: {} };
      if (exception instanceof TooManyRequestsError) return { status: 429, error: exception, headers: {} };
      return { status: 400, error: exception, headers: {} };
    }
    const app = toAppException(exception);
    if (app && ERROR_CODE_MAPPING[app.code].status < 500) {
      const rendered = renderOAuthError(app);
      const body = rendered.body as { error: string; error_description: string };
      return {
        status: rendered.status,
        error: new CustomOAuthError(body.error, body.error_description),
        headers: app.headers,
      };
    }
    this.logger.error(
      { msg: 'OAuth endpoint failed', path: request.path },
      exception instanceof Error ? exception : undefined,
    );
    return { status: 500, error: new ServerError('Internal server error'), headers: {} };
  }
}
