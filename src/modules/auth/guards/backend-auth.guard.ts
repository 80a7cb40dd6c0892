import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AppException } from '../../../common/errors/app.exception.js';
import { ErrorCode } from '../../../common/errors/error-code.js';
import { apiAreaOf } from '../../../common/http/api-area.js';
import { ALLOW_PROJECT_TOKEN } from './allow-project-token.decorator.js';
import { IS_PUBLIC } from './public.decorator.js';

export function bearerToken(request: Pick<Request, 'headers'>): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * Global guard for Area B: every route needs a user access token unless marked @Public(); routes marked
 * @AllowProjectToken() also take a project session token (atp_…).
 * Area A routes are skipped here; their own guard checks API keys. A credential of the wrong kind
 * gets a 401 that names the credential the route expects.
 */
@Injectable()
export class BackendAuthGuard extends AuthGuard(['jwt', 'project-token']) {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const request = context.switchToHttp().getRequest<Request>();
    if (apiAreaOf(request) === 'tool-api') return true;
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const token = bearerToken(request);
    if (!token) {
      throw new AppException(ErrorCode.AuthRequired, 'This route needs a user access token: Authorization: Bearer <token> from POST /api/auth/login');
    }
    if (token.startsWith('atr_')) {
      throw new AppException(
        ErrorCode.AuthInvalid,
        'API keys (atr_…) work only on the tool API under /api/v1/public/mcp; this route expects a user access token from POST /api/auth/login',
      );
    }
    if (token.startsWith('ato_') || token.startsWith('atf_')) {
      throw new AppException(
        ErrorCode.AuthInvalid,
        'OAuth tokens (ato_…/atf_…) work only on the MCP endpoint under /api/v1/public/mcp; this route expects a user access token from POST /api/auth/login',
      );
    }
    if (token.startsWith('atp_')) {
      const allowed = this.reflector.getAllAndOverride<boolean>(ALLOW_PROJECT_TOKEN, [context.getHandler(), context.getClass()]);
      if (!allowed) {
        throw new AppException(
          ErrorCode.AuthInvalid,
          'Project session tokens (atp_…) work only on their project\'s document, RAG and agent routes; this route expects a user access token from POST /api/auth/login',
        );
      }
    }
    return super.canActivate(context) as Promise<boolean>;
  }

  override handleRequest<TUser>(error: unknown, user: TUser | false, _info?: unknown, context?: ExecutionContext): TUser {
    // A strategy that failed to look its credential up (the database is down) did not find the credential
    // bad: the error goes to the filter (503 DEPENDENCY_UNAVAILABLE), not a 401 that would log the user out.
    // A bad or expired token arrives as `info`, never as `error`.
    if (error) throw error;
    if (!user) {
      const token = context ? bearerToken(context.switchToHttp().getRequest<Request>()) : undefined;
      if (token?.startsWith('atp_')) {
        throw new AppException(ErrorCode.AuthInvalid, 'The project session token is invalid or has expired; ask a project owner or editor for a new one');
      }
      throw new AppException(ErrorCode.AuthInvalid, 'The access token is invalid or has expired; log in again');
    }
    return user;
  }
}
