import { Inject, Injectable } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { AppException } from '../errors/app.exception.js';
import { ErrorCode } from '../errors/error-code.js';
import type { ApiArea } from '../http/api-area.js';
import { rateLimitedTotal } from '../metrics/metrics.registry.js';
import type { PairCounter } from './redis-throttler.storage.js';

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

  /**
   * Two limits on one call in one step (one Redis round trip, or two in-memory counters): the first (e.g. a key's
   * own budget), then, only if it allowed the call, the second (e.g. its owner's across every key). Throws 429 with
   * the message of the limit that refused.
   */
  async enforcePair(
    area: ApiArea,
    first: { bucket: string; key: string; limit: number; message: string },
    second: { bucket: string; key: string; limit: number; message: string },
    windowMs: number,
  ): Promise<void> {
    const storage = this.storage as Partial<PairCounter>;
    if (typeof storage.incrementPair !== 'function') {
      await this.enforce(area, first.bucket, first.key, first.limit, windowMs, first.message);
      await this.enforce(area, second.bucket, second.key, second.limit, windowMs, second.message);
      return;
    }
    const [one, two] = await storage.incrementPair(
      { name: first.bucket, key: first.key, limit: first.limit },
      { name: second.bucket, key: second.key },
      windowMs,
    );
    if (one.hits > first.limit) throw rateLimited(area, first.message, one.secondsLeft);
    if (two.hits > second.limit) throw rateLimited(area, second.message, two.secondsLeft);
  }

  /** Throws 429 (with Retry-After) when over the limit; the details in the casing of the area that answers. */
  async enforce(
    area: ApiArea,
    bucket: string,
    key: string,
    limit: number,
    windowMs: number,
    message: string,
  ): Promise<RateLimitOutcome> {
    const outcome = await this.consume(bucket, key, limit, windowMs);
    if (!outcome.allowed) throw rateLimited(area, message, outcome.retryAfterSeconds);
    return outcome;
  }
}

/**
 * 429 with Retry-After. Area A details are snake_case (`retry_after_seconds`), Area B camelCase. Every limit of
 * Atrium's own refuses through here (also an MCP tools/call answered in-band), so atrium_rate_limited_total counts here.
 */
export function rateLimited(area: ApiArea, message: string, retryAfterSeconds: number): AppException {
  rateLimitedTotal.inc({ area });
  const details = area === 'tool-api' ? { retry_after_seconds: retryAfterSeconds } : { retryAfterSeconds };
  return new AppException(ErrorCode.RateLimited, message, details, { 'Retry-After': String(retryAfterSeconds) });
}
