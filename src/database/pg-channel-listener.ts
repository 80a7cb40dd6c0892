import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import type { DatabasePool } from './database-pool.js';

/**
 * One LISTEN connection per process and channel, shared by every waiter of that process; a notification's
 * payload names what changed (a run id, a request id) and wakes only that key's subscribers. The notification
 * comes from the database at commit, so it reaches every instance whatever wrote the change; on the embedded
 * engine the wire server hands it to this connection as BullMQ's PostgreSQL backend relies on. A lost
 * connection is re-opened on the next subscription; waiters must also re-read on a slow timer, so nothing waits
 * on a notification forever (it is a wake-up, never the data: the data is in the row it points at).
 */
export abstract class PgChannelListener {
  private readonly logger: Logger;
  private readonly subscribers = new Map<string, Set<() => void>>();
  private client?: Promise<Client | null>;
  private current?: Client;
  private closed = false;

  protected constructor(
    private readonly database: DatabasePool,
    /** A constant identifier (it is spliced into `LISTEN`). */
    private readonly channel: string,
  ) {
    this.logger = new Logger(new.target.name);
  }

  /** Calls `onChange` whenever a notification with this payload arrives; returns the unsubscribe function. */
  subscribe(key: string, onChange: () => void): () => void {
    void this.connect();
    let set = this.subscribers.get(key);
    if (!set) this.subscribers.set(key, (set = new Set()));
    set.add(onChange);
    return () => {
      set.delete(onChange);
      if (set.size === 0) this.subscribers.delete(key);
    };
  }

  /** Resolves once the LISTEN is in place (or failed): lets a waiter subscribe before it writes what it waits on. */
  async ready(): Promise<void> {
    await this.connect();
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    const client = await this.client?.catch(() => null);
    await client?.end().catch(() => undefined);
  }

  private connect(): Promise<Client | null> {
    if (this.client || this.closed) return this.client ?? Promise.resolve(null);
    const client = new Client({ connectionString: this.database.url });
    this.current = client;
    this.client = (async () => {
      try {
        client.on('notification', (message) => {
          for (const notify of this.subscribers.get(message.payload ?? '') ?? []) notify();
        });
        client.on('error', (error) => this.drop(client, error));
        client.on('end', () => this.drop(client));
        await client.connect();
        await client.query(`LISTEN ${this.channel}`);
        return client;
      } catch (error) {
        this.drop(client, error);
        return null;
      }
    })();
    return this.client;
  }

  private drop(client: Client, error?: unknown): void {
    if (this.closed || this.current !== client) return;
    this.current = undefined;
    if (error)
      this.logger.warn({
        msg: `${this.channel} listener lost its connection; waiters fall back to re-reading`,
        error: error instanceof Error ? error.message : String(error),
      });
    this.client = undefined;
    client.end().catch(() => undefined);
  }
}
