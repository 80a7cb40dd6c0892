import type { NextFunction, Request, Response } from 'express';

/** Width of one bucket of the busy-time window. */
const BUCKET_MS = 100;
/** Buckets in the window: busyShare() covers the last BUCKET_MS × BUCKETS milliseconds. */
const BUCKETS = 10;

/**
 * How busy this process's HTTP side has been lately: the share of the last second spent serving requests (the
 * summed time of requests that ended in it, plus the time so far of those in flight, at most 1). Background work
 * in the same process (the indexing worker under APP_ROLE=all) reads it to work at full speed while nobody is
 * served and to pace itself while requests are, since every core it takes then is one a request waits for.
 */
export class HttpActivity {
  private readonly slots = new Array<number>(BUCKETS).fill(-1);
  private readonly busy = new Array<number>(BUCKETS).fill(0);
  private inFlight = 0;
  private inFlightStartSum = 0;
  /** True once this process serves HTTP requests through the app's middleware (not in APP_ROLE=worker). */
  serving = false;

  /** Counts one request from now until `end` is called (once). */
  begin(now = performance.now()): (endedAt?: number) => void {
    this.inFlight += 1;
    this.inFlightStartSum += now;
    let ended = false;
    return (endedAt = performance.now()) => {
      if (ended) return;
      ended = true;
      this.inFlight -= 1;
      this.inFlightStartSum -= now;
      this.add(endedAt, endedAt - now);
    };
  }

  /** Share (0..1) of the last second spent serving requests, counting those still in flight. */
  busyShare(now = performance.now()): number {
    const current = Math.floor(now / BUCKET_MS);
    let total = this.inFlight * now - this.inFlightStartSum;
    for (let i = 0; i < BUCKETS; i++) if (this.slots[i] > current - BUCKETS) total += this.busy[i];
    return Math.min(1, total / (BUCKET_MS * BUCKETS));
  }

  private add(at: number, ms: number): void {
    const slot = Math.floor(at / BUCKET_MS);
    const i = slot % BUCKETS;
    if (this.slots[i] !== slot) {
      this.slots[i] = slot;
      this.busy[i] = 0;
    }
    this.busy[i] += ms;
  }
}

/** The process's one HTTP activity gauge (the app's middleware writes it, background work reads it). */
export const httpActivity = new HttpActivity();

/** Counts each request in httpActivity from its arrival until its answer is sent or its connection closes. */
export function httpActivityMiddleware(req: Request, res: Response, next: NextFunction): void {
  const end = httpActivity.begin();
  res.once('finish', () => end());
  res.once('close', () => end());
  next();
}
