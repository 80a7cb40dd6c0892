import { Inject, Injectable } from '@nestjs/common';
import { RateLimiterService } from '../../common/rate-limit/rate-limiter.service.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

const KEY_SPENT = 'This API key has exceeded its call limit; retry after the time in Retry-After';
const USER_SPENT =
  'Your account has exceeded its call limit across all your keys and grants; retry after the time in Retry-After';

/**
 * The per-credential call limit (RATE_LIMIT_KEY_PER_MIN), shared across instances through Redis when configured.
 * The API key and OAuth grant kinds spend it (their `spend`); the doors reach it only through the credential
 * registry, in ToolCallPipeline's limit step.
 */
@Injectable()
export class KeyCallLimiterService {
  constructor(
    private readonly limiter: RateLimiterService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Counts one call against the credential's own budget and its owner's budget across every key and grant
   * (RATE_LIMIT_USER_TOOLS_PER_MIN), in one step; throws 429 rate_limited (details.retry_after_seconds, Retry-After)
   * when either is spent.
   */
  async enforce(keyId: string, userId: string): Promise<void> {
    await this.limiter.enforcePair(
      'tool-api',
      { bucket: 'api-key', key: keyId, limit: this.config.limits.keyCallsPerMinute, message: KEY_SPENT },
      { bucket: 'user-tools', key: userId, limit: this.config.limits.userToolCallsPerMinute, message: USER_SPENT },
      60_000,
    );
  }
}
