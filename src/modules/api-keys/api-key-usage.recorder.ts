import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export interface ApiKeyUsageEntry {
  keyId: string;
  at: Date;
  /** Tool name (or `tools/list`); never argument values. */
  tool: string | null;
  status: number;
  durationMs: number;
}

const FLUSH_INTERVAL_MS = 200;
const FLUSH_AT_ENTRIES = 500;

/**
 * The usage log (tool, status, duration of each call), written behind in small batches because the
 * final status is only known once the answer is sent. The call count is not kept here: the key lookup
 * commits it before the call is answered (ApiKeyCallCounter), so it is exact across
 * instances and survives a crash. Flushed every 200 ms, at 500 entries, before a key's usage is read
 * on this instance, and on shutdown; a crash can lose at most the last 200 ms of log rows.
 */
@Injectable()
export class ApiKeyUsageRecorder implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ApiKeyUsage');
  private buffer: ApiKeyUsageEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }

  record(entry: ApiKeyUsageEntry): void {
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
      // Joined to api_keys so a key deleted meanwhile (its user removed) drops its rows instead of failing the batch.
      await this.dataSource.query(
        `INSERT INTO api_key_usage (api_key_id, at, tool, status, duration_ms)
         SELECT u.key_id, u.at, u.tool, u.status, u.duration_ms
         FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::int[], $5::int[]) AS u(key_id, at, tool, status, duration_ms)
         JOIN api_keys k ON k.id = u.key_id`,
        [
          batch.map((e) => e.keyId),
          batch.map((e) => e.at.toISOString()),
          batch.map((e) => e.tool),
          batch.map((e) => e.status),
          batch.map((e) => Math.round(e.durationMs)),
        ],
      );
    } catch (error) {
      // Put the batch back so a transient database error loses nothing; the next tick retries.
      this.buffer = batch.concat(this.buffer);
      this.logger.warn({ msg: 'Could not write API key usage; will retry', error: (error as Error).message });
    }
  }
}
