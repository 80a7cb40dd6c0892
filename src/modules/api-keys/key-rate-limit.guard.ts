import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { ApiKeyPrincipal } from './api-key.principal.js';
import { KeyCallLimiterService } from './key-call-limiter.service.js';

/** The per-key limit on the JSON door (KeyCallLimiterService). Runs after ApiKeyAuthGuard. */
@Injectable()
export class KeyRateLimitGuard implements CanActivate {
  constructor(private readonly limiter: KeyCallLimiterService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const principal = context.switchToHttp().getRequest<Request & { user: ApiKeyPrincipal }>().user;
    await this.limiter.enforce(principal.keyId, principal.userId);
    return true;
  }
}
