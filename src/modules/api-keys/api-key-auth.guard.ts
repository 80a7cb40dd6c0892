import { ExecutionContext, Injectable } from '@nestjs/common';
import { AuthGuard } from '@nestjs/passport';
import type { Request, Response } from 'express';
import { performance } from 'node:perf_hooks';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { ApiKeyPrincipal } from './api-key.principal.js';
import { API_KEY_STRATEGY } from './api-key.strategy.js';
import { ApiKeyUsageRecorder } from './api-key-usage.recorder.js';

/** Set on the request by whoever learns which tool a call is for; read when the usage row is written. */
export const USAGE_TOOL = Symbol('atrium:usage-tool');
/** Set by a door that reports failures in-band (MCP `isError` results answer HTTP 200): the status to log. */
export const USAGE_STATUS = Symbol('atrium:usage-status');
type UsageRequest = Request & { [USAGE_TOOL]?: string; [USAGE_STATUS]?: number; user?: ApiKeyPrincipal };

export function setUsageTool(request: Request, tool: string): void {
  (request as UsageRequest)[USAGE_TOOL] = tool;
}

export function setUsageStatus(request: Request, status: number): void {
  (request as UsageRequest)[USAGE_STATUS] = status;
}

/**
 * Authenticates Area A with a personal API key. From here on every answer, errors included, carries
 * X-Api-Key-Expires-At (keys with an expiry) and lands in the key's usage log with its final status.
 */
@Injectable()
export class ApiKeyAuthGuard extends AuthGuard(API_KEY_STRATEGY) {
  constructor(private readonly usage: ApiKeyUsageRecorder) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const started = performance.now();
    await super.canActivate(context);
    const request = context.switchToHttp().getRequest<UsageRequest>();
    const response = context.switchToHttp().getResponse<Response>();
    const principal = request.user!;
    if (principal.expiresAt) response.setHeader('X-Api-Key-Expires-At', principal.expiresAt.toISOString());
    response.once('finish', () => {
      this.usage.record({
        keyId: principal.keyId,
        at: new Date(),
        tool: request[USAGE_TOOL] ?? null,
        status: request[USAGE_STATUS] ?? response.statusCode,
        durationMs: performance.now() - started,
      });
    });
    return true;
  }

  override handleRequest<TUser>(error: unknown, user: TUser | false): TUser {
    if (error) throw error;
    if (!user) throw new AppException(ErrorCode.InvalidApiKey, 'The API key is not valid');
    return user;
  }
}
