import { Injectable, Logger } from '@nestjs/common';
import { WriteBehindRecorder } from '../../common/batching/write-behind-recorder.js';
import type { AuditEntry } from './audit-entry.js';
import { AuditLogRepository } from './audit-log.repository.js';

const logger = new Logger('AuditLog');

/**
 * Entries of calls that changed nothing in the database (read tool calls, failed tool calls, tool calls whose change
 * is outside, such as a GitHub issue), written behind the answer in batches: one multi-row INSERT per flush, every
 * 200 ms, at 500 entries, before the log is read on this instance, and on shutdown. This keeps the read path (e.g.
 * list_tasks) free of an extra round trip; a crash can lose at most the last 200 ms of such entries.
 */
@Injectable()
export class AuditRecorder extends WriteBehindRecorder<AuditEntry> {
  constructor(repository: AuditLogRepository) {
    super({
      write: (batch) => repository.insert(batch),
      onError: (error, dropped) =>
        logger.warn({ msg: 'Could not write audit entries; will retry', error: (error as Error).message, dropped }),
      flushEveryMs: 200,
      batchSize: 500,
      maxBuffered: 100_000,
    });
  }
}
