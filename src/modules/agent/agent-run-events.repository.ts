import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import type { AgentRunStatus, StoredStep } from './agent-run.types.js';

/** The channel the `agent_run_events_record` trigger notifies (payload: the run id) when a run's events grow. */
const CHANNEL = 'agent_run_events';

/** One entry of a run's event log, written by the `agent_run_events_record` trigger (never by the app). */
export type AgentRunEvent = { seq: number; type: 'step'; data: StoredStep } | { seq: number; type: 'status'; data: { status: AgentRunStatus } };

/**
 * The `agent_run_events` table: read-only for the app; a database trigger appends to it and notifies
 * {@link CHANNEL}, which a dedicated connection (not a pooled one: LISTEN belongs to one session) hears.
 */
@Injectable()
export class AgentRunEventsRepository {
  constructor(
    @InjectDb() private readonly db: Db,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** A new, unconnected connection for {@link listen}; the caller attaches its handlers first and ends it. */
  listenerConnection(): Client {
    return new Client({ connectionString: (this.dataSource.options as { url?: string }).url });
  }

  /** Connects it and listens: its `notification` events then carry the id of a run whose events grew. */
  async listen(client: Client): Promise<void> {
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
  }

  /** The run's events after `afterSeq`, in order, at most `limit`. */
  async after(runId: string, afterSeq: number, limit: number): Promise<AgentRunEvent[]> {
    const rows = await this.db
      .selectFrom('agent_run_events')
      .select(['seq', 'type', 'data'])
      .where('run_id', '=', runId)
      .where('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ seq: row.seq, type: row.type, data: row.data }) as unknown as AgentRunEvent);
  }
}
