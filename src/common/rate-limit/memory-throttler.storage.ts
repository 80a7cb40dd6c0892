import type { ThrottlerStorage } from '@nestjs/throttler';
import type { PairCounter, PairHit } from './redis-throttler.storage.js';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

interface Window {
  hits: number;
  /** Epoch ms when this window ends. */
  endsAt: number;
}

/** How often idle windows are dropped (at most one pass per interval, on a hit; no timer). */
const SWEEP_EVERY_MS = 60_000;

/**
 * Throttler counters in this process's memory (no REDIS_URL): a fixed window per key, the same rule as
 * RedisThrottlerStorage, so a limit means the same with either backend.
 *
 * Written here rather than using @nestjs/throttler's ThrottlerStorageService, which keeps a sliding log of every
 * hit's expiry per key and copies that array (`filter`) on every hit: at a per-key limit of thousands per minute
 * each call allocated kilobytes that lived until the key's next call, so they were promoted to the old generation
 * and set off frequent major GCs under load (docs/perf/gateway.md). Here a hit is one counter update.
 */
export class MemoryThrottlerStorage implements ThrottlerStorage, PairCounter {
  private readonly windows = new Map<string, Window>();
  private nextSweepAt = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const now = this.now();
    if (now >= this.nextSweepAt) this.sweep(now);
    const id = `${throttlerName}:${key}`;
    let window = this.windows.get(id);
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + ttl };
      this.windows.set(id, window);
    }
    window.hits += 1;
    const secondsLeft = Math.max(1, Math.ceil((window.endsAt - now) / 1000));
    const blocked = window.hits > limit;
    return {
      totalHits: window.hits,
      timeToExpire: secondsLeft,
      isBlocked: blocked,
      timeToBlockExpire: blocked ? secondsLeft : 0,
    };
  }

  /** Two windows in one step, as RedisThrottlerStorage.incrementPair: the second counts only a hit the first allowed. */
  async incrementPair(
    first: { name: string; key: string; limit: number },
    second: { name: string; key: string },
    ttlMs: number,
  ): Promise<[PairHit, PairHit]> {
    const now = this.now();
    if (now >= this.nextSweepAt) this.sweep(now);
    const one = this.hit(`${first.name}:${first.key}`, ttlMs, now);
    if (one.hits > first.limit) return [one, { hits: 0, secondsLeft: 0 }];
    return [one, this.hit(`${second.name}:${second.key}`, ttlMs, now)];
  }

  private hit(id: string, ttl: number, now: number): PairHit {
    let window = this.windows.get(id);
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + ttl };
      this.windows.set(id, window);
    }
    window.hits += 1;
    return { hits: window.hits, secondsLeft: Math.max(1, Math.ceil((window.endsAt - now) / 1000)) };
  }

  /** Drops ended windows, so keys that stop calling (an IP, a revoked key) do not stay in memory. */
  private sweep(now: number): void {
    for (const [id, window] of this.windows) if (window.endsAt <= now) this.windows.delete(id);
    this.nextSweepAt = now + SWEEP_EVERY_MS;
  }

  /** Windows held now (for tests). */
  get size(): number {
    return this.windows.size;
  }
}
