import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { attachCaller } from '../../../common/auth/caller.js';
import { AppException } from '../../../common/errors/app.exception.js';
import { ErrorCode } from '../../../common/errors/error-code.js';
import { apiAreaOf } from '../../../common/http/api-area.js';
import { CredentialRegistry } from '../../credentials/credential-registry.js';
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
 * @AllowProjectToken() also take a project session token (atp_…). Area A routes are skipped here; their own guard
 * checks tool credentials. Which kind a bearer is, whether it opens this route and who it names is the credential
 * registry's answer (each kind's plug-in); a credential of the wrong kind gets a 401 that names the credential the
 * route expects. The caller is put on the request for the audit log and the limits (attachCaller), which handlers receive with @CurrentCaller().
 */
@Injectable()
export class BackendAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly credentials: CredentialRegistry,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const request = context.switchToHttp().getRequest<Request & { user?: object }>();
    if (apiAreaOf(request) === 'tool-api') return true;
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const token = bearerToken(request);
    if (!token) {
      throw new AppException(
        ErrorCode.AuthRequired,
        'This route needs a user access token: Authorization: Bearer <token> from POST /api/auth/login',
      );
    }
    const optedIn =
      this.reflector.getAllAndOverride<boolean>(ALLOW_PROJECT_TOKEN, [context.getHandler(), context.getClass()]) ===
      true;
    const { caller, user } = await this.credentials.authenticateBackend(token, optedIn);
    request.user = user;
    attachCaller(request, caller);
    return true;
  }
}
