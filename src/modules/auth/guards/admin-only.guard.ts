import { CanActivate, ExecutionContext, mixin, Type } from '@nestjs/common';
import type { Request } from 'express';
import { callerOf } from '../../../common/auth/caller.js';
import { AppException } from '../../../common/errors/app.exception.js';

/**
 * The one "admin only" rule: after the global auth guard, only a caller its credential kind made an admin gets through
 * (a signed-in admin user; never a project token or an API key). `may` completes the 403's message: "Only an admin may …".
 */
export function AdminOnly(may: string): Type<CanActivate> {
  class AdminOnlyGuard implements CanActivate {
    canActivate(context: ExecutionContext): boolean {
      if (callerOf(context.switchToHttp().getRequest<Request>())?.admin === true) return true;
      throw AppException.forbidden(`Only an admin may ${may}`);
    }
  }
  return mixin(AdminOnlyGuard);
}
