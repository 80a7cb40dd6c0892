import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

/** The shared Redis client, or `null` when REDIS_URL is not set (single-instance defaults apply). */
export const REDIS_CLIENT = Symbol('REDIS_CLIENT');

export function createRedisClient(url: string): Redis {
  return new Redis(url, {
    // Commands fail fast while Redis is down instead of queueing for ever behind a request.
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    connectTimeout: 3000,
    lazyConnect: false,
    // The per-key limit is one command per tool call: those issued in the same tick share one write (and
    // one read of the answers) instead of a syscall each.
    enableAutoPipelining: true,
  });
}

class RedisClientCloser implements OnApplicationShutdown {
  constructor(@Inject(REDIS_CLIENT) private readonly client: Redis | null) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.client && this.client.status !== 'end') await this.client.quit().catch(() => this.client?.disconnect());
  }
}

@Global()
@Module({
  providers: [
    {
      provide: REDIS_CLIENT,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): Redis | null => {
        if (!config.redis.url) return null;
        const client = createRedisClient(config.redis.url);
        // Errors surface through health checks and failing commands; without a listener ioredis
        // would print each reconnect attempt as an unhandled error event.
        client.on('error', () => undefined);
        return client;
      },
    },
    RedisClientCloser,
  ],
  exports: [REDIS_CLIENT],
})
export class RedisModule {}
