import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

/**
 * DNS-rebinding protection for the MCP endpoint: a request that carries an `Origin` header (a browser)
 * must come from this server's own origin (PUBLIC_URL's) or one of MCP_ALLOWED_ORIGINS. Agents and
 * scripts send no Origin and pass. A page on another origin (including one reached through a rebound
 * DNS name) is refused before the key is checked, so it learns nothing about keys.
 */
@Injectable()
export class McpOriginGuard implements CanActivate {
  private readonly allowed: ReadonlySet<string>;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.allowed = new Set([new URL(config.publicUrl).origin, ...config.mcp.allowedOrigins]);
  }

  canActivate(context: ExecutionContext): boolean {
    const origin = context.switchToHttp().getRequest<Request>().headers.origin;
    if (origin === undefined || this.allowed.has(origin)) return true;
    throw new AppException(
      ErrorCode.Forbidden,
      `Origin ${origin} may not use the MCP endpoint (see MCP_ALLOWED_ORIGINS)`,
      { origin },
    );
  }
}
