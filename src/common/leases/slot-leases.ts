import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { REDIS_CLIENT } from '../redis/redis.module.js';
import { SlotLeasesRepository } from './slot-leases.repository.js';

// A key's holders as a sorted set of members scored by lease expiry: expired leases (an instance that died holding
// them) are dropped before counting, so a crash frees its slots within one lease.
const ACQUIRE_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`;
const ACQUIRE_COMMAND = 'atriumSlotLeaseAcquire';
type WithAcquire = Redis & {
  [ACQUIRE_COMMAND](
    key: string,
    now: number,
    limit: number,
    expiresAt: number,
    member: string,
    ttlMs: number,
  ): Promise<number>;
};

/** One held slot: renewed while the work lives, released when it ends (both never throw). */
export interface SlotLease {
  renew(): Promise<void>;
  release(): Promise<void>;
}

export interface SlotLeaseOptions {
  /** Most holders of the key at once. */
  limit: number;
  /** A holder that neither renews nor releases (its instance died) loses its slot after this long. */
  leaseMs: number;
  /**
   * Without Redis: `database` keeps the leases in PostgreSQL, so the count holds across instances; `process` counts in
   * this process only (no statement per acquire). On the embedded engine, one process by construction, it is always `process`.
   */
  withoutRedis: 'database' | 'process';
}

const NO_LEASE: SlotLease = { renew: () => Promise.resolve(), release: () => Promise.resolve() };

/**
 * Counted leases: at most `limit` holders of a key at once (a user's open streams, a user's webhook deliveries under
 * way). With REDIS_URL the count holds across every instance (one Lua script per acquire); without it, in
 * PostgreSQL or per process (SlotLeaseOptions.withoutRedis). A store that is down does not stop the work: the
 * limit is then not applied.
 */
@Injectable()
export class SlotLeases {
  private readonly logger = new Logger(SlotLeases.name);
  private readonly local = new Map<string, number>();

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: Redis | null,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: SlotLeasesRepository,
  ) {
    if (redis && !(ACQUIRE_COMMAND in redis))
      redis.defineCommand(ACQUIRE_COMMAND, { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
  }

  /** A slot of `key`, or null when `limit` holders have one already. */
  async acquire(key: string, options: SlotLeaseOptions): Promise<SlotLease | null> {
    if (this.redis) return this.acquireInRedis(this.redis as WithAcquire, key, options);
    if (options.withoutRedis === 'database' && this.config.database.url) return this.acquireInDatabase(key, options);
    return this.acquireLocally(key, options.limit);
  }

  private async acquireInRedis(
    redis: WithAcquire,
    key: string,
    { limit, leaseMs }: SlotLeaseOptions,
  ): Promise<SlotLease | null> {
    const redisKey = `${this.config.redis.prefix}:${key}`;
    const member = randomUUID();
    try {
      const now = Date.now();
      if ((await redis[ACQUIRE_COMMAND](redisKey, now, limit, now + leaseMs, member, leaseMs * 2)) === 0) return null;
    } catch (error) {
      return this.notApplied(key, error);
    }
    return {
      renew: () =>
        redis.zadd(redisKey, 'XX', Date.now() + leaseMs, member).then(
          () => undefined,
          () => undefined,
        ),
      release: () =>
        redis.zrem(redisKey, member).then(
          () => undefined,
          () => undefined,
        ),
    };
  }

  private async acquireInDatabase(key: string, { limit, leaseMs }: SlotLeaseOptions): Promise<SlotLease | null> {
    const member = randomUUID();
    try {
      if (!(await this.repository.acquire(key, member, limit, leaseMs))) return null;
    } catch (error) {
      return this.notApplied(key, error);
    }
    return {
      renew: () => this.repository.renew(key, member, leaseMs).catch(() => undefined),
      release: () => this.repository.release(key, member).catch(() => undefined),
    };
  }

  private acquireLocally(key: string, limit: number): SlotLease | null {
    const held = this.local.get(key) ?? 0;
    if (held >= limit) return null;
    this.local.set(key, held + 1);
    let released = false;
    return {
      renew: () => Promise.resolve(),
      release: () => {
        if (!released) {
          released = true;
          const left = (this.local.get(key) ?? 1) - 1;
          if (left > 0) this.local.set(key, left);
          else this.local.delete(key);
        }
        return Promise.resolve();
      },
    };
  }

  private notApplied(key: string, error: unknown): SlotLease {
    this.logger.warn({
      msg: 'slot limit not applied: its store is unavailable',
      key: key.split(':')[0],
      error: error instanceof Error ? error.message : String(error),
    });
    return NO_LEASE;
  }
}
