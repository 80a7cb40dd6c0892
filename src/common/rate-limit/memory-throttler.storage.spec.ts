import { MemoryThrottlerStorage } from './memory-throttler.storage.js';

describe('MemoryThrottlerStorage (fixed window, as RedisThrottlerStorage)', () => {
  let clock: number;
  let storage: MemoryThrottlerStorage;
  beforeEach(() => {
    clock = 1_000_000;
    storage = new MemoryThrottlerStorage(() => clock);
  });

  it('counts hits per key and throttler name within the window, and blocks past the limit until it ends', async () => {
    for (let hit = 1; hit <= 3; hit += 1) {
      expect(await storage.increment('key-a', 60_000, 3, 60_000, 'api-key')).toEqual({
        totalHits: hit,
        timeToExpire: 60,
        isBlocked: false,
        timeToBlockExpire: 0,
      });
    }
    expect((await storage.increment('key-b', 60_000, 3, 60_000, 'api-key')).totalHits).toBe(1);
    expect((await storage.increment('key-a', 60_000, 3, 60_000, 'login')).totalHits).toBe(1);
    clock += 20_500;
    expect(await storage.increment('key-a', 60_000, 3, 60_000, 'api-key')).toEqual({
      totalHits: 4,
      timeToExpire: 40,
      isBlocked: true,
      timeToBlockExpire: 40,
    });
    clock += 39_500;
    expect(await storage.increment('key-a', 60_000, 3, 60_000, 'api-key')).toEqual({
      totalHits: 1,
      timeToExpire: 60,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
  });

  it('never reports less than one second left', async () => {
    await storage.increment('key', 1_000, 1, 1_000, 't');
    clock += 999;
    expect(await storage.increment('key', 1_000, 1, 1_000, 't')).toMatchObject({
      isBlocked: true,
      timeToExpire: 1,
      timeToBlockExpire: 1,
    });
  });

  it('drops ended windows, so callers that stop calling do not stay in memory', async () => {
    for (let ip = 0; ip < 100; ip += 1) await storage.increment(`ip:10.0.0.${ip}`, 60_000, 10, 60_000, 'backend');
    expect(storage.size).toBe(100);
    clock += 61_000;
    await storage.increment('ip:10.0.1.1', 60_000, 10, 60_000, 'backend');
    expect(storage.size).toBe(1);
  });

  it('counts a pair in one step; the second counter only counts what the first allowed', async () => {
    const pair = (key: string) =>
      storage.incrementPair({ name: 'api-key', key, limit: 2 }, { name: 'user-tools', key: 'user-1' }, 60_000);
    expect((await pair('key-a'))[1].hits).toBe(1);
    expect((await pair('key-a'))[1].hits).toBe(2);
    const [refusedByKey, untouched] = await pair('key-a');
    expect(refusedByKey.hits).toBe(3);
    expect(untouched.hits).toBe(0);
    const [otherKey, user] = await pair('key-b');
    expect(otherKey.hits).toBe(1);
    expect(user).toEqual({ hits: 3, secondsLeft: 60 });
  });
});
