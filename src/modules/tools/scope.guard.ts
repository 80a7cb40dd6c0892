import { CanActivate, ExecutionContext, Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { callerOf } from '../../common/auth/caller.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { protectedResourceMetadataUrl, setUsageTool } from '../api-keys/api-key-auth.guard.js';
import { parseToolCallBody } from './tool-call-body.js';
import { countRefusedToolCall } from './tool-call-telemetry.js';
import { ToolsService } from './tools.service.js';

export type ScopeRule = { kind: 'tool-in-body' } | { kind: 'any-scope'; usageLabel: string };
const SCOPE_RULE = 'atrium:scope-rule';

/** The route calls the tool named in the body: that tool's scope must be on the key. */
export const RequiresToolScope = () => SetMetadata(SCOPE_RULE, { kind: 'tool-in-body' } satisfies ScopeRule);
/** The route is fine for any valid key (e.g. listing the tools its scopes allow). */
export const AnyKeyScope = (usageLabel: string) =>
  SetMetadata(SCOPE_RULE, { kind: 'any-scope', usageLabel } satisfies ScopeRule);

/**
 * Deny by default: an Area A route without a scope rule answers 403. For tool calls the body is read
 * here (400 invalid_request, 404 unknown_tool, 403 insufficient_scope, 403 tool_not_allowed, in that order). A 403
 * insufficient_scope carries the RFC 6750 challenge naming the scope, so an OAuth client can step up.
 */
@Injectable()
export class ScopeGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tools: ToolsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    try {
      return this.check(context);
    } catch (error) {
      // A tool call refused here, before it reaches the tool, is still one of the JSON door's calls: counted, and on
      // the audit log like the MCP door's refusals (with the request's credential, which the request context holds).
      if (this.reflector.get<ScopeRule | undefined>(SCOPE_RULE, context.getHandler())?.kind === 'tool-in-body') {
        const request = context.switchToHttp().getRequest<Request>();
        const name: unknown = (request.body as { name?: unknown } | undefined)?.name;
        countRefusedToolCall('json', typeof name === 'string' ? this.tools.find(name) : undefined, error);
        const caller = callerOf(request);
        if (typeof name === 'string' && caller) this.tools.recordRefused(name, caller.actor, error);
      }
      throw error;
    }
  }

  private check(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    const rule = this.reflector.get<ScopeRule | undefined>(SCOPE_RULE, context.getHandler());
    const caller = callerOf(request);
    const scopes = caller?.scopes ?? [];
    if (rule?.kind === 'any-scope' && scopes.length > 0) {
      setUsageTool(request, rule.usageLabel);
      return true;
    }
    if (rule?.kind === 'tool-in-body') {
      const body = parseToolCallBody(request.body);
      setUsageTool(request, body.name);
      const tool = this.tools.require(body.name);
      try {
        this.tools.assertScope(tool, caller ?? { scopes });
      } catch (error) {
        // Only a missing scope is one an OAuth client can step up to; a restriction refusal is final.
        if (!(error instanceof AppException) || error.code !== ErrorCode.InsufficientScope) throw error;
        const challenge = `Bearer error="insufficient_scope", scope="${tool.definition.scope}", resource_metadata="${protectedResourceMetadataUrl(this.config)}"`;
        throw new AppException(error.code, error.message, error.details, {
          ...error.headers,
          'WWW-Authenticate': challenge,
        });
      }
      return true;
    }
    throw new AppException(ErrorCode.InsufficientScope, 'This key may not use this route', { required_scope: null });
  }
}
