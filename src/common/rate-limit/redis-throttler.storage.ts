import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Redis } from 'ioredis';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

// Fixed window: the first hit sets the expiry; one round trip, atomic across instances.
const INCREMENT_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {hits, ttl}
`;

/** Throttler counters in Redis, so a limit holds across every instance. */
export class RedisThrottlerStorage implements ThrottlerStorage {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async increment(key: string, ttl: number, limit: number, _blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    const [hits, pttl] = (await this.redis.eval(INCREMENT_SCRIPT, 1, `${this.prefix}:rl:${throttlerName}:${key}`, ttl)) as [number, number];
    const secondsLeft = Math.max(1, Math.ceil(pttl / 1000));
    return { totalHits: hits, timeToExpire: secondsLeft, isBlocked: hits > limit, timeToBlockExpire: hits > limit ? secondsLeft : 0 };
  }
}
