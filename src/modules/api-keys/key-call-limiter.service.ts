import { Inject, Injectable } from '@nestjs/common';
import { RateLimiterService } from '../../common/rate-limit/rate-limiter.service.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

/**
 * The per-credential call limit (RATE_LIMIT_KEY_PER_MIN), shared across instances through Redis when configured.
 * The JSON door applies it as a guard (KeyRateLimitGuard); the MCP door calls it itself, because a limited
 * `tools/call` is answered in-band (an isError result) rather than as HTTP 429.
 */
@Injectable()
export class KeyCallLimiterService {
  constructor(
    private readonly limiter: RateLimiterService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Counts one call; throws 429 rate_limited (details.retry_after_seconds, Retry-After) when over the limit. */
  async enforce(keyId: string): Promise<void> {
    await this.limiter.enforce('tool-api', 'api-key', keyId, this.config.limits.keyCallsPerMinute, 60_000, 'This API key has exceeded its call limit; retry after the time in Retry-After');
  }
}
