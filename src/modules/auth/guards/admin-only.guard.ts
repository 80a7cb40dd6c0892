import { CanActivate, ExecutionContext, mixin, Type } from '@nestjs/common';
import { AppException } from '../../../common/errors/app.exception.js';
import type { Principal } from '../principal.js';

/**
 * The one "admin only" rule: after the global auth guard, only a signed-in user whose role is admin gets through
 * (never a project token or an API key). `may` completes the 403's message: "Only an admin may …".
 */
export function AdminOnly(may: string): Type<CanActivate> {
  class AdminOnlyGuard implements CanActivate {
    canActivate(context: ExecutionContext): boolean {
      const principal = context.switchToHttp().getRequest<{ user?: Principal }>().user;
      if (principal?.kind === 'user' && principal.role === 'admin') return true;
      throw AppException.forbidden(`Only an admin may ${may}`);
    }
  }
  return mixin(AdminOnlyGuard);
}
