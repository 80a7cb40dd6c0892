import { Injectable } from '@nestjs/common';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import type { AgentRunStatus, StoredStep } from './agent-run.types.js';

/** One entry of a run's event log, written by the `agent_run_events_record` trigger (never by the app). */
export type AgentRunEvent =
  { seq: number; type: 'step'; data: StoredStep } | { seq: number; type: 'status'; data: { status: AgentRunStatus } };

/**
 * The `agent_run_events` table: read-only for the app; a database trigger appends to it and notifies the
 * `agent_run_events` channel, which AgentRunEventsListener hears on its own connection.
 */
@Injectable()
export class AgentRunEventsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /** The run's events after `afterSeq`, in order, at most `limit`. */
  async after(runId: string, afterSeq: number, limit: number): Promise<AgentRunEvent[]> {
    const rows = await this.db
      .selectFrom('agentRunEvents')
      .select(['seq', 'type', 'data'])
      .where('runId', '=', runId)
      .where('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ seq: row.seq, type: row.type, data: row.data }) as unknown as AgentRunEvent);
  }
}
