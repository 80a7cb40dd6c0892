import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

/**
 * DNS-rebinding protection for the MCP endpoint: a request that carries an `Origin` header (a browser)
 * must come from one of MCP_ALLOWED_ORIGINS (none by default). Agents and scripts send no Origin and
 * pass. Runs before the key is checked, so a foreign page learns nothing about keys.
 */
@Injectable()
export class McpOriginGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const origin = context.switchToHttp().getRequest<Request>().headers.origin;
    if (origin === undefined || this.config.mcp.allowedOrigins.includes(origin)) return true;
    throw new AppException(ErrorCode.Forbidden, `Origin ${origin} may not use the MCP endpoint (see MCP_ALLOWED_ORIGINS)`, { origin });
  }
}
