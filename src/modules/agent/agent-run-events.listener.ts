import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { Client } from 'pg';
import { AgentRunEventsRepository } from './agent-run-events.repository.js';

/**
 * One LISTEN connection per process, shared by every open run stream here. The notification comes from the
 * database trigger at commit, so it reaches every instance whatever wrote the change; on the embedded engine
 * the wire server hands it to this connection as BullMQ's PostgreSQL backend relies on. A lost connection is
 * re-opened on the next subscription; streams also re-read on a slow timer, so nothing waits on it forever.
 */
@Injectable()
export class AgentRunEventsListener implements OnModuleDestroy {
  private readonly logger = new Logger(AgentRunEventsListener.name);
  private readonly subscribers = new Map<string, Set<() => void>>();
  private client?: Promise<Client | null>;
  private current?: Client;
  private closed = false;

  constructor(private readonly events: AgentRunEventsRepository) {}

  /** Calls `onChange` whenever the run's events may have grown; returns the unsubscribe function. */
  subscribe(runId: string, onChange: () => void): () => void {
    void this.connect();
    let set = this.subscribers.get(runId);
    if (!set) this.subscribers.set(runId, (set = new Set()));
    set.add(onChange);
    return () => {
      set.delete(onChange);
      if (set.size === 0) this.subscribers.delete(runId);
    };
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    const client = await this.client?.catch(() => null);
    await client?.end().catch(() => undefined);
  }

  private connect(): Promise<Client | null> {
    if (this.client || this.closed) return this.client ?? Promise.resolve(null);
    const client = this.events.listenerConnection();
    this.current = client;
    this.client = (async () => {
      try {
        client.on('notification', (message) => {
          for (const notify of this.subscribers.get(message.payload ?? '') ?? []) notify();
        });
        client.on('error', (error) => this.drop(client, error));
        client.on('end', () => this.drop(client));
        await this.events.listen(client);
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
    if (error) this.logger.warn({ msg: 'run event listener lost its connection; streams fall back to re-reading', error: error instanceof Error ? error.message : String(error) });
    this.client = undefined;
    client.end().catch(() => undefined);
  }
}
