import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { callerOf } from '../../common/auth/caller.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { setUsageTool } from '../api-keys/api-key-auth.guard.js';

export type ScopeRule = { kind: 'tool-call' } | { kind: 'any-scope'; usageLabel: string };
const SCOPE_RULE = 'atrium:scope-rule';

/** The route calls a tool: ToolCallPipeline checks that tool's scope for the caller (its authorise step). */
export const ScopeInPipeline = () => SetMetadata(SCOPE_RULE, { kind: 'tool-call' } satisfies ScopeRule);
/** The route is fine for any valid key (e.g. listing the tools its scopes allow). */
export const AnyKeyScope = (usageLabel: string) =>
  SetMetadata(SCOPE_RULE, { kind: 'any-scope', usageLabel } satisfies ScopeRule);

/**
 * Deny by default: an Area A route without a scope rule answers 403. A route that calls a tool leaves the scope to the
 * pipeline, which knows the tool once the body is read; every other route needs a credential with some scope.
 */
@Injectable()
export class ScopeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    const rule = this.reflector.get<ScopeRule | undefined>(SCOPE_RULE, context.getHandler());
    if (rule?.kind === 'tool-call') return true;
    if (rule?.kind === 'any-scope' && (callerOf(request)?.scopes.length ?? 0) > 0) {
      setUsageTool(request, rule.usageLabel);
      return true;
    }
    throw new AppException(ErrorCode.InsufficientScope, 'This key may not use this route', { required_scope: null });
  }
}
