import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { AppException } from '../../../common/errors/app.exception.js';
import type { Principal } from '../../auth/principal.js';

/** Admin routes: after the global auth guard, only a signed-in user whose role is admin gets through. */
@Injectable()
export class AdminOnlyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const principal = context.switchToHttp().getRequest<{ user?: Principal }>().user;
    if (principal?.kind === 'user' && principal.role === 'admin') return true;
    throw AppException.forbidden('Only an admin may manage the shared GitHub repositories');
  }
}
