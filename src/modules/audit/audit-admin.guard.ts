import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { AppException } from '../../common/errors/app.exception.js';
import type { Principal } from '../auth/principal.js';

/** Admin audit routes: after the global auth guard, only a signed-in user whose role is admin (never a project token). */
@Injectable()
export class AuditAdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const principal = context.switchToHttp().getRequest<{ user?: Principal }>().user;
    if (principal?.kind === 'user' && principal.role === 'admin') return true;
    throw AppException.forbidden("Only an admin may read everyone's audit entries");
  }
}
