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

// Two fixed windows in one round trip: the second counts only a hit the first allowed (a key over its own limit
// does not spend its owner's budget).
const INCREMENT_PAIR_SCRIPT = `
local function hit(key, ttl)
  local hits = redis.call('INCR', key)
  if hits == 1 then redis.call('PEXPIRE', key, ttl) end
  local left = redis.call('PTTL', key)
  if left < 0 then redis.call('PEXPIRE', key, ttl); left = tonumber(ttl) end
  return hits, left
end
local h1, t1 = hit(KEYS[1], ARGV[1])
if h1 > tonumber(ARGV[2]) then return {h1, t1, 0, 0} end
local h2, t2 = hit(KEYS[2], ARGV[1])
return {h1, t1, h2, t2}
`;
const INCREMENT_PAIR_COMMAND = 'atriumRateLimitIncrementPair';

/** The script as a client command: ioredis sends EVALSHA (the script's text only once, after a NOSCRIPT). */
const INCREMENT_COMMAND = 'atriumRateLimitIncrement';

type WithIncrement = Redis & {
  [INCREMENT_COMMAND](key: string, ttlMs: number): Promise<[number, number]>;
  [INCREMENT_PAIR_COMMAND](
    first: string,
    second: string,
    ttlMs: number,
    firstLimit: number,
  ): Promise<[number, number, number, number]>;
};

/** One counter of a pair: hits in its window and the seconds left of that window (hits 0: not counted). */
export interface PairHit {
  hits: number;
  secondsLeft: number;
}

/** A storage that counts two windows in one step (RateLimiterService.consumePair). */
export interface PairCounter {
  incrementPair(
    first: { name: string; key: string; limit: number },
    second: { name: string; key: string },
    ttlMs: number,
  ): Promise<[PairHit, PairHit]>;
}

/** Throttler counters in Redis, so a limit holds across every instance. */
export class RedisThrottlerStorage implements ThrottlerStorage, PairCounter {
  private readonly redis: WithIncrement;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    // EVAL sent the script's text (and made Redis hash it) on every call; EVALSHA sends its 40-char digest.
    if (!(INCREMENT_COMMAND in redis))
      redis.defineCommand(INCREMENT_COMMAND, { numberOfKeys: 1, lua: INCREMENT_SCRIPT });
    if (!(INCREMENT_PAIR_COMMAND in redis))
      redis.defineCommand(INCREMENT_PAIR_COMMAND, { numberOfKeys: 2, lua: INCREMENT_PAIR_SCRIPT });
    this.redis = redis as WithIncrement;
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const [hits, pttl] = await this.redis[INCREMENT_COMMAND](`${this.prefix}:rl:${throttlerName}:${key}`, ttl);
    const secondsLeft = Math.max(1, Math.ceil(pttl / 1000));
    return {
      totalHits: hits,
      timeToExpire: secondsLeft,
      isBlocked: hits > limit,
      timeToBlockExpire: hits > limit ? secondsLeft : 0,
    };
  }

  async incrementPair(
    first: { name: string; key: string; limit: number },
    second: { name: string; key: string },
    ttlMs: number,
  ): Promise<[PairHit, PairHit]> {
    const [h1, t1, h2, t2] = await this.redis[INCREMENT_PAIR_COMMAND](
      `${this.prefix}:rl:${first.name}:${first.key}`,
      `${this.prefix}:rl:${second.name}:${second.key}`,
      ttlMs,
      first.limit,
    );
    return [
      { hits: h1, secondsLeft: Math.max(1, Math.ceil(t1 / 1000)) },
      { hits: h2, secondsLeft: Math.max(1, Math.ceil(t2 / 1000)) },
    ];
  }
}
