import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { RateLimiterService } from '../../common/rate-limit/rate-limiter.service.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import type { ApiKeyPrincipal } from './api-key.principal.js';

/** Per-key limit (RATE_LIMIT_KEY_PER_MIN), shared across instances through Redis when configured. Runs after ApiKeyAuthGuard. */
@Injectable()
export class KeyRateLimitGuard implements CanActivate {
  constructor(
    private readonly limiter: RateLimiterService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const principal = context.switchToHttp().getRequest<Request & { user: ApiKeyPrincipal }>().user;
    await this.enforce(principal.keyId);
    return true;
  }

  /** Counts one call; throws 429 rate_limited (details.retry_after_seconds, Retry-After) when over the limit. */
  async enforce(keyId: string): Promise<void> {
    await this.limiter.enforce('tool-api', 'api-key', keyId, this.config.limits.keyCallsPerMinute, 60_000, 'This API key has exceeded its call limit; retry after the time in Retry-After');
  }
}
