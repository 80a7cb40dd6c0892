import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { AuditEntry } from './audit-entry.js';
import { AuditLogRepository } from './audit-log.repository.js';

const FLUSH_INTERVAL_MS = 200;
const FLUSH_AT_ENTRIES = 500;
/** Past this many unwritten entries (the database is down), the oldest are dropped and counted in the log. */
const MAX_BUFFERED = 100_000;

/**
 * Entries of calls that changed nothing in the database (read tool calls, failed tool calls, tool calls whose change
 * is outside, such as a GitHub issue), written behind the answer in batches: one multi-row INSERT per flush, every
 * 200 ms, at 500 entries, before the log is read on this instance, and on shutdown. This keeps the read path (e.g.
 * list_tasks) free of an extra round trip; a crash can lose at most the last 200 ms of such entries.
 */
@Injectable()
export class AuditRecorder implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('AuditLog');
  private buffer: AuditEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly repository: AuditLogRepository) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }

  record(entry: AuditEntry): void {
    this.buffer.push(entry);
    if (this.buffer.length >= FLUSH_AT_ENTRIES) void this.flush();
  }

  /** Writes everything recorded so far; resolves once it is in the database (or was put back after a failure). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeBatch());
    return this.flushing;
  }

  private async writeBatch(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.slice(0, FLUSH_AT_ENTRIES);
      this.buffer = this.buffer.slice(batch.length);
      try {
        await this.repository.insert(batch);
      } catch (error) {
        // Put the batch back so a transient database error loses nothing; the next tick retries.
        this.buffer = batch.concat(this.buffer);
        const dropped = this.buffer.length - MAX_BUFFERED;
        if (dropped > 0) this.buffer = this.buffer.slice(dropped);
        this.logger.warn({ msg: 'Could not write audit entries; will retry', error: (error as Error).message, dropped: Math.max(0, dropped) });
        return;
      }
    }
  }
}
