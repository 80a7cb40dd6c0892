import { Global, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import type { Redis } from 'ioredis';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { REDIS_CLIENT } from '../redis/redis.module.js';
import { MemoryThrottlerStorage } from './memory-throttler.storage.js';
import { RateLimiterService } from './rate-limiter.service.js';
import { RedisThrottlerStorage } from './redis-throttler.storage.js';

@Global()
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG, REDIS_CLIENT],
      useFactory: (config: AppConfig, redis: Redis | null) => ({
        throttlers: [{ name: 'backend', limit: config.limits.areaBCallsPerMinute, ttl: 60_000 }],
        storage: redis ? new RedisThrottlerStorage(redis, config.redis.prefix) : new MemoryThrottlerStorage(),
      }),
    }),
  ],
  providers: [RateLimiterService],
  exports: [RateLimiterService, ThrottlerModule],
})
export class RateLimitModule {}
