import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { performance } from 'node:perf_hooks';
import { AppException } from '../../common/errors/app.exception.js';
import { ERROR_CODE_MAPPING } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { bearerToken } from '../auth/guards/backend-auth.guard.js';
import type { Authenticated } from '../credentials/credential-kind.js';
import { CredentialRegistry } from '../credentials/credential-registry.js';
import { callerOf } from '../../common/auth/caller.js';
import { attachKeyCaller } from './key-caller.js';
import { ToolRegistry } from '../tool-kit/tool-registry.js';
import { narrowRestriction, requestNarrowing } from '../tool-kit/tool-restriction.js';

/** Set on the request by whoever learns which tool a call is for; read when the usage row is written. */
export const USAGE_TOOL = Symbol('atrium:usage-tool');
/** Set by a door that reports failures in-band (MCP `isError` results answer HTTP 200): the status to log. */
export const USAGE_STATUS = Symbol('atrium:usage-status');
type UsageRequest = Request & { [USAGE_TOOL]?: string; [USAGE_STATUS]?: number; user?: object };

export function setUsageTool(request: Request, tool: string): void {
  (request as UsageRequest)[USAGE_TOOL] = tool;
}

export function setUsageStatus(request: Request, status: number): void {
  (request as UsageRequest)[USAGE_STATUS] = status;
}

/** RFC 9728 §5.1: where an MCP client finds how to get a token for Area A. */
export function protectedResourceMetadataUrl(config: AppConfig): string {
  return `${config.publicUrl}/.well-known/oauth-protected-resource/api/v1/public/mcp`;
}

/** The `WWW-Authenticate` of an Area A 401 (RFC 6750 §3): `invalid_token` only when a credential was sent. */
export function bearerChallenge(config: AppConfig, credentialSent: boolean): string {
  return `Bearer ${credentialSent ? 'error="invalid_token", ' : ''}resource_metadata="${protectedResourceMetadataUrl(config)}"`;
}

/**
 * Authenticates Area A with any credential kind that opens the tool doors (a personal API key, an OAuth access
 * token, …): the credential registry finds the kind by the bearer's prefix and its plug-in looks it up. From here on
 * every answer, errors included, carries X-Api-Key-Expires-At (a caller with an expiry to report) and lands in the
 * kind's usage log with its final status. Every 401 names the protected-resource metadata, so OAuth clients
 * know where to sign in and key users see the key error (not an OAuth prompt: `invalid_token`).
 * A credential that passes becomes the call's caller (`@Caller()`: attachKeyCaller), narrowed by the request's
 * X-MCP-Toolsets / X-MCP-Readonly headers and toolset URL (tool-restriction.ts; 400 for an unknown toolset).
 */
@Injectable()
export class ApiKeyAuthGuard implements CanActivate {
  constructor(
    private readonly credentials: CredentialRegistry,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly registry: ToolRegistry,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const started = performance.now();
    const request = context.switchToHttp().getRequest<UsageRequest>();
    let authenticated: Authenticated;
    try {
      authenticated = await this.credentials.authenticateTool(bearerToken(request), { ip: request.ip });
    } catch (error) {
      if (error instanceof AppException && ERROR_CODE_MAPPING[error.code].status === 401) {
        const sent = bearerToken(request) !== undefined;
        throw new AppException(error.code, error.message, error.details, {
          ...error.headers,
          'WWW-Authenticate': bearerChallenge(this.config, sent),
        });
      }
      throw error;
    }
    request.user = authenticated.user;
    const caller = attachKeyCaller(request, authenticated.caller);
    const response = context.switchToHttp().getResponse<Response>();
    if (caller.expiresAt) response.setHeader('X-Api-Key-Expires-At', caller.expiresAt.toISOString());
    response.once('finish', () => {
      // The caller as the request ends: the MCP door names its client after authentication.
      this.credentials.recordUsage(callerOf(request) ?? caller, {
        tool: request[USAGE_TOOL] ?? null,
        status: request[USAGE_STATUS] ?? response.statusCode,
        durationMs: performance.now() - started,
      });
    });
    // The request may narrow its credential's tools further (toolset headers and URLs), never widen them; a refusal
    // (an unknown toolset) is on the usage log like any other answer.
    const restriction = narrowRestriction(
      caller.restriction,
      requestNarrowing(request.path, request.headers, this.registry.toolsets()),
    );
    if (restriction !== caller.restriction) attachKeyCaller(request, { ...caller, restriction });
    return true;
  }
}
