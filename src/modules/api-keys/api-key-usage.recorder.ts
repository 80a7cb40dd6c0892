import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { ToolCredentialsRepository, type ToolCredentialUsage } from './tool-credentials.repository.js';

const FLUSH_INTERVAL_MS = 200;
const FLUSH_AT_ENTRIES = 500;

/**
 * The usage log of API keys and OAuth grants (tool, status, duration of each call), written behind in small batches because the
 * final status is only known once the answer is sent. The call count is not kept here: the key lookup
 * commits it before the call is answered (ApiKeyCallCounterService), so it is exact across
 * instances and survives a crash. Flushed every 200 ms, at 500 entries, before a key's usage is read
 * on this instance, and on shutdown; a crash can lose at most the last 200 ms of log rows.
 */
@Injectable()
export class ApiKeyUsageRecorder implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ApiKeyUsage');
  private buffer: ToolCredentialUsage[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    @InjectDb() private readonly db: Db,
    private readonly credentials: ToolCredentialsRepository,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }

  record(entry: ToolCredentialUsage): void {
    this.buffer.push(entry);
    if (this.buffer.length >= FLUSH_AT_ENTRIES) void this.flush();
  }

  /** Writes everything recorded so far; resolves once it is in the database. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeBatch());
    return this.flushing;
  }

  private async writeBatch(): Promise<void> {
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    try {
      // One transaction: a retry after a failure must not write one kind's rows twice.
      await this.db.transaction().execute((trx) => this.credentials.insertUsage(batch, trx));
    } catch (error) {
      // Put the batch back so a transient database error loses nothing; the next tick retries.
      this.buffer = batch.concat(this.buffer);
      this.logger.warn({ msg: 'Could not write API key usage; will retry', error: (error as Error).message });
    }
  }
}
