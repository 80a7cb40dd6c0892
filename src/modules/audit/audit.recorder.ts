import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { WriteBehindBuffer } from '../../common/batching/write-behind-buffer.js';
import type { AuditEntry } from './audit-entry.js';
import { AuditLogRepository } from './audit-log.repository.js';

/**
 * Entries of calls that changed nothing in the database (read tool calls, failed tool calls, tool calls whose change
 * is outside, such as a GitHub issue), written behind the answer in batches: one multi-row INSERT per flush, every
 * 200 ms, at 500 entries, before the log is read on this instance, and on shutdown. This keeps the read path (e.g.
 * list_tasks) free of an extra round trip; a crash can lose at most the last 200 ms of such entries.
 */
@Injectable()
export class AuditRecorder implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('AuditLog');
  private readonly buffer: WriteBehindBuffer<AuditEntry>;

  constructor(repository: AuditLogRepository) {
    this.buffer = new WriteBehindBuffer<AuditEntry>({
      write: (batch) => repository.insert(batch),
      onError: (error, dropped) => this.logger.warn({ msg: 'Could not write audit entries; will retry', error: (error as Error).message, dropped }),
      flushEveryMs: 200,
      batchSize: 500,
      maxBuffered: 100_000,
    });
  }

  onModuleInit(): void {
    this.buffer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.buffer.stop();
  }

  record(entry: AuditEntry): void {
    this.buffer.add(entry);
  }

  /** Writes everything recorded so far; resolves once it is in the database (or was kept after a failure). */
  flush(): Promise<void> {
    return this.buffer.flush();
  }
}
