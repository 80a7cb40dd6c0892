import { Inject, Injectable } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { AppException } from '../errors/app.exception.js';
import { ErrorCode } from '../errors/error-code.js';

export interface RateLimitOutcome {
  allowed: boolean;
  remaining: number;
  retryAfterSeconds: number;
}

/**
 * Counts hits per (bucket, key) in the throttler's storage (Redis when configured, else memory), for
 * limits that are not simply "per route": per API key, per login IP + email.
 */
@Injectable()
export class RateLimiterService {
  constructor(@Inject(ThrottlerStorage) private readonly storage: ThrottlerStorage) {}

  async consume(bucket: string, key: string, limit: number, windowMs: number): Promise<RateLimitOutcome> {
    const record = await this.storage.increment(key, windowMs, limit, windowMs, bucket);
    return {
      allowed: record.totalHits <= limit,
      remaining: Math.max(0, limit - record.totalHits),
      retryAfterSeconds: Math.max(1, record.isBlocked ? record.timeToBlockExpire : record.timeToExpire),
    };
  }

  /** Throws 429 (with Retry-After) when over the limit. */
  async enforce(bucket: string, key: string, limit: number, windowMs: number, message: string): Promise<RateLimitOutcome> {
    const outcome = await this.consume(bucket, key, limit, windowMs);
    if (!outcome.allowed) {
      throw new AppException(ErrorCode.RateLimited, message, { retry_after_seconds: outcome.retryAfterSeconds }, {
        'Retry-After': String(outcome.retryAfterSeconds),
      });
    }
    return outcome;
  }
}
