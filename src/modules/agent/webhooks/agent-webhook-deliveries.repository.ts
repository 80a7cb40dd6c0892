import { Injectable } from '@nestjs/common';
import { sql, type Selectable } from 'kysely';
import type { AgentRunWebhookDeliveries } from '../../../database/database.types.js';
import { InjectDb, type Db } from '../../../database/kysely.provider.js';

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One delivery of a run's webhook, created by a database trigger when the run reaches a status worth telling. */
export interface WebhookDelivery {
  id: string;
  runId: string;
  type: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  occurredAt: Date;
  deliveredAt: Date | null;
}

/** A delivery with what sending it needs from its run: the URL, the sealed secret and the run's outcome. */
export interface WebhookDeliveryToSend extends WebhookDelivery {
  webhookUrl: string;
  sealedSecret: string;
  output: string | null;
  error: string | null;
}

/**
 * The `agent_run_webhook_deliveries` table (rows created by the `agent_runs` trigger). Reading a delivery to send
 * joins its run for the URL and secret: a delivery belongs to its run's aggregate.
 */
@Injectable()
export class AgentWebhookDeliveriesRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async forRun(runId: string): Promise<WebhookDelivery[]> {
    const rows = await this.db
      .selectFrom('agentRunWebhookDeliveries')
      .selectAll()
      .where('runId', '=', runId)
      .orderBy('occurredAt')
      .orderBy('id')
      .execute();
    return rows.map(toDelivery);
  }

  /** Pending deliveries not yet handed to the queue, oldest first, with the user whose run each belongs to. */
  async notEnqueued(limit: number): Promise<{ id: string; userId: string }[]> {
    return this.db
      .selectFrom('agentRunWebhookDeliveries as d')
      .innerJoin('agentRuns as r', 'r.id', 'd.runId')
      .select(['d.id as id', 'r.userId as userId'])
      .where('d.status', '=', 'pending')
      .where('d.enqueuedAt', 'is', null)
      .orderBy('d.occurredAt')
      .limit(limit)
      .execute();
  }

  async markEnqueued(id: string): Promise<void> {
    await this.db
      .updateTable('agentRunWebhookDeliveries')
      .set({ enqueuedAt: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  async toSend(id: string): Promise<WebhookDeliveryToSend | undefined> {
    const row = await this.db
      .selectFrom('agentRunWebhookDeliveries as d')
      .innerJoin('agentRuns as r', 'r.id', 'd.runId')
      .selectAll('d')
      .select(['r.webhookUrl', 'r.webhookSecret', 'r.output', 'r.error'])
      .where('d.id', '=', id)
      .executeTakeFirst();
    if (!row || row.webhookUrl === null || row.webhookSecret === null) return undefined;
    return {
      ...toDelivery(row),
      webhookUrl: row.webhookUrl,
      sealedSecret: row.webhookSecret,
      output: row.output,
      error: row.error,
    };
  }

  /** Records one attempt: delivered on success, failed after the last attempt, otherwise still pending. */
  async recordAttempt(
    id: string,
    statusCode: number | null,
    failure: string | null,
    lastAttempt: boolean,
  ): Promise<void> {
    const status: WebhookDeliveryStatus = failure === null ? 'delivered' : lastAttempt ? 'failed' : 'pending';
    await this.db
      .updateTable('agentRunWebhookDeliveries')
      .set({
        attempts: sql`attempts + 1`,
        lastStatusCode: statusCode,
        lastError: failure,
        status,
        deliveredAt: failure === null ? sql`now()` : null,
      })
      .where('id', '=', id)
      .execute();
  }
}

function toDelivery(row: Selectable<AgentRunWebhookDeliveries>): WebhookDelivery {
  return {
    id: row.id,
    runId: row.runId,
    type: row.type,
    status: row.status as WebhookDeliveryStatus,
    attempts: row.attempts,
    lastStatusCode: row.lastStatusCode,
    lastError: row.lastError,
    occurredAt: row.occurredAt,
    deliveredAt: row.deliveredAt,
  };
}
