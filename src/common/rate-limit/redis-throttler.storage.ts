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

/** The script as a client command: ioredis sends EVALSHA (the script's text only once, after a NOSCRIPT). */
const INCREMENT_COMMAND = 'atriumRateLimitIncrement';

type WithIncrement = Redis & { [INCREMENT_COMMAND](key: string, ttlMs: number): Promise<[number, number]> };

/** Throttler counters in Redis, so a limit holds across every instance. */
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly redis: WithIncrement;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    // EVAL sent the script's text (and made Redis hash it) on every call; EVALSHA sends its 40-char digest.
    if (!(INCREMENT_COMMAND in redis)) redis.defineCommand(INCREMENT_COMMAND, { numberOfKeys: 1, lua: INCREMENT_SCRIPT });
    this.redis = redis as WithIncrement;
  }

  async increment(key: string, ttl: number, limit: number, _blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    const [hits, pttl] = await this.redis[INCREMENT_COMMAND](`${this.prefix}:rl:${throttlerName}:${key}`, ttl);
    const secondsLeft = Math.max(1, Math.ceil(pttl / 1000));
    return { totalHits: hits, timeToExpire: secondsLeft, isBlocked: hits > limit, timeToBlockExpire: hits > limit ? secondsLeft : 0 };
  }
}
