import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ToolCredentialKind } from './api-key.principal.js';

export interface ApiKeyUsageEntry {
  credential: ToolCredentialKind;
  /** The API key's or the OAuth grant's id. */
  keyId: string;
  at: Date;
  /** Tool name (or `tools/list`); never argument values. */
  tool: string | null;
  status: number;
  durationMs: number;
}

const FLUSH_INTERVAL_MS = 200;
const FLUSH_AT_ENTRIES = 500;

/** Each credential kind's usage table and the table its id refers to. */
const USAGE_TABLES: Record<ToolCredentialKind, { usage: string; idColumn: string; owner: string }> = {
  'api-key': { usage: 'api_key_usage', idColumn: 'api_key_id', owner: 'api_keys' },
  'oauth-grant': { usage: 'oauth_grant_usage', idColumn: 'grant_id', owner: 'oauth_grants' },
};

/**
 * The usage log of API keys and OAuth grants (tool, status, duration of each call), written behind in small batches because the
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
      // One transaction: a retry after a failure must not write one kind's rows twice.
      await this.dataSource.transaction(async (manager) => {
        for (const [credential, tables] of Object.entries(USAGE_TABLES) as [ToolCredentialKind, (typeof USAGE_TABLES)[ToolCredentialKind]][]) {
          const entries = batch.filter((e) => e.credential === credential);
          if (entries.length === 0) continue;
          // Joined to the owning table so a key or grant deleted meanwhile drops its rows instead of failing the batch.
          await manager.query(
            `INSERT INTO ${tables.usage} (${tables.idColumn}, at, tool, status, duration_ms)
             SELECT u.key_id, u.at, u.tool, u.status, u.duration_ms
             FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::int[], $5::int[]) AS u(key_id, at, tool, status, duration_ms)
             JOIN ${tables.owner} k ON k.id = u.key_id`,
            [
              entries.map((e) => e.keyId),
              entries.map((e) => e.at.toISOString()),
              entries.map((e) => e.tool),
              entries.map((e) => e.status),
              entries.map((e) => Math.round(e.durationMs)),
            ],
          );
        }
      });
    } catch (error) {
      // Put the batch back so a transient database error loses nothing; the next tick retries.
      this.buffer = batch.concat(this.buffer);
      this.logger.warn({ msg: 'Could not write API key usage; will retry', error: (error as Error).message });
    }
  }
}
