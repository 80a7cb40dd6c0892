import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { callerOf } from '../../common/auth/caller.js';
import { CredentialRegistry } from '../credentials/credential-registry.js';

/** The per-credential limit on the JSON door: the caller's kind spends its budget. Runs after ApiKeyAuthGuard. */
@Injectable()
export class KeyRateLimitGuard implements CanActivate {
  constructor(private readonly credentials: CredentialRegistry) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const caller = callerOf(context.switchToHttp().getRequest<Request>());
    if (!caller) throw new Error('KeyRateLimitGuard used on a route without ApiKeyAuthGuard');
    await this.credentials.spend(caller);
    return true;
  }
}
