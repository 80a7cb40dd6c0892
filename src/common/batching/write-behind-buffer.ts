/** How a {@link WriteBehindBuffer} writes and when. */
export interface WriteBehindOptions<T> {
  /** Writes one batch (one statement or transaction); a throw puts the batch back for the next flush. */
  write(batch: T[]): Promise<void>;
  /** Told of a failed write (the batch is kept) and of how many of the oldest entries were dropped, if any. */
  onError(error: unknown, dropped: number): void;
  flushEveryMs: number;
  /** A flush starts once this many are waiting; a flush writes at most this many per batch. */
  batchSize: number;
  /** Past this many unwritten entries (the database is down), the oldest are dropped. */
  maxBuffered: number;
}

/**
 * Rows written behind the answer in batches (e.g. a log whose rows are only known once a call is answered):
 * one write per batch, on a timer, at a batch size, on demand (`flush()`, e.g. before the rows are read) and at
 * stop. Flushes run one after another, so a retried batch is never written twice.
 */
export class WriteBehindBuffer<T> {
  private buffer: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly options: WriteBehindOptions<T>) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.options.flushEveryMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }

  add(entry: T): void {
    this.buffer.push(entry);
    if (this.buffer.length >= this.options.batchSize) void this.flush();
  }

  /** Writes everything added so far; resolves once it is written (or was kept after a failure). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeAll());
    return this.flushing;
  }

  private async writeAll(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.slice(0, this.options.batchSize);
      this.buffer = this.buffer.slice(batch.length);
      try {
        await this.options.write(batch);
      } catch (error) {
        // Put the batch back so a transient database error loses nothing; the next tick retries.
        this.buffer = batch.concat(this.buffer);
        const dropped = Math.max(0, this.buffer.length - this.options.maxBuffered);
        if (dropped > 0) this.buffer = this.buffer.slice(dropped);
        this.options.onError(error, dropped);
        return;
      }
    }
  }
}
