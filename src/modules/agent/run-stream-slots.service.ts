import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { REDIS_CLIENT } from '../../common/redis/redis.module.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

// A user's open streams as a sorted set of stream ids scored by lease expiry: expired leases (an instance that died
// with streams open) are dropped before counting, so a crash frees its slots within one lease.
const ACQUIRE_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`;
const ACQUIRE_COMMAND = 'atriumStreamSlotAcquire';
type WithAcquire = Redis & { [ACQUIRE_COMMAND](key: string, now: number, limit: number, expiresAt: number, member: string, ttlMs: number): Promise<number> };

/** One open stream's slot: renewed while the stream lives, released when it ends. */
export interface StreamSlot {
  renew(): void;
  release(): void;
}

/**
 * The per-user cap on open run streams (AGENT_MAX_STREAMS_PER_USER). With REDIS_URL the count holds across every
 * instance (leases in Redis, renewed with the stream's keep-alive); without it, per process. Redis being down does
 * not close the door on streams: the cap is then not applied.
 */
@Injectable()
export class RunStreamSlots {
  private readonly logger = new Logger(RunStreamSlots.name);
  private readonly local = new Map<string, number>();
  private readonly leaseMs: number;

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: Redis | null,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.leaseMs = Math.max(30_000, 3 * config.agent.streamHeartbeatMs);
    if (redis && !(ACQUIRE_COMMAND in redis)) redis.defineCommand(ACQUIRE_COMMAND, { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
  }

  /** A slot for one more stream of the user, or null when the user has AGENT_MAX_STREAMS_PER_USER open already. */
  async acquire(userId: string): Promise<StreamSlot | null> {
    const limit = this.config.agent.maxStreamsPerUser;
    if (!this.redis) {
      const open = this.local.get(userId) ?? 0;
      if (open >= limit) return null;
      this.local.set(userId, open + 1);
      let released = false;
      return {
        renew: () => undefined,
        release: () => {
          if (released) return;
          released = true;
          const left = (this.local.get(userId) ?? 1) - 1;
          if (left > 0) this.local.set(userId, left);
          else this.local.delete(userId);
        },
      };
    }
    const redis = this.redis as WithAcquire;
    const key = `${this.config.redis.prefix}:streams:${userId}`;
    const member = randomUUID();
    try {
      const now = Date.now();
      if ((await redis[ACQUIRE_COMMAND](key, now, limit, now + this.leaseMs, member, this.leaseMs * 2)) === 0) return null;
    } catch (error) {
      this.logger.warn({ msg: 'stream cap not applied: Redis unavailable', error: error instanceof Error ? error.message : String(error) });
      return { renew: () => undefined, release: () => undefined };
    }
    return {
      renew: () => void redis.zadd(key, 'XX', Date.now() + this.leaseMs, member).catch(() => undefined),
      release: () => void redis.zrem(key, member).catch(() => undefined),
    };
  }
}
