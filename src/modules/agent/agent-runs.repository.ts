import { Injectable } from '@nestjs/common';
import { sql, type RawBuilder, type Selectable } from 'kysely';
import { visibleAgentRun } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import type { AgentRuns, Json } from '../../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import { claimedBy, staleHeartbeat, type Claim, type ClaimableTable } from '../../queue/claimable-jobs.repository.js';
import type { AgentRun, AgentRunActor, AgentRunApproval, AgentRunStatus, StoredStep } from './agent-run.types.js';

/** Agent runs as claimable jobs: fenced by a per-claim token, with a cancel flag the claim holder watches. */
export const AGENT_RUNS_TABLE: ClaimableTable<'agentRuns'> = {
  table: 'agentRuns',
  kind: 'agent_run',
  fencedBy: 'claimToken',
  cancelFlag: 'cancelRequested',
  owner: 'userId',
  project: 'projectId',
};

/** A run to insert (status `queued`): what the caller asked for, plus the trace id and the already sealed webhook secret. */
export type NewAgentRun = Pick<
  AgentRun,
  | 'id'
  | 'userId'
  | 'projectId'
  | 'input'
  | 'provider'
  | 'model'
  | 'tools'
  | 'scopes'
  | 'actor'
  | 'maxSteps'
  | 'approval'
  | 'webhookUrl'
> & {
  traceId: string | null;
  /** Sealed by AgentWebhooksService.sealSecret. */
  webhookSecret: string | null;
};

export interface AgentRunHistoryFilter {
  projectId?: string;
  status?: AgentRunStatus;
  /** Keyset: runs strictly older than this (created_at, id). */
  before?: { createdAt: string; id: string };
  limit: number;
}

/**
 * The `agent_runs` table: every statement on it except the claim, heartbeat and recovery ones, which are the
 * job machinery's (src/queue/claimable-jobs.repository.ts). The fenced writes of a claim holder compose
 * {@link claimedBy}; the pin rule of history comes from src/common/access.
 */
@Injectable()
export class AgentRunsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async insert(run: NewAgentRun): Promise<void> {
    await this.db
      .insertInto('agentRuns')
      .values({
        id: run.id,
        userId: run.userId,
        projectId: run.projectId,
        status: 'queued',
        input: run.input,
        provider: run.provider,
        model: run.model,
        tools: run.tools,
        scopes: run.scopes,
        actor: sql`${JSON.stringify(run.actor)}::jsonb`,
        maxSteps: run.maxSteps,
        traceId: run.traceId,
        approval: run.approval,
        webhookUrl: run.webhookUrl,
        webhookSecret: run.webhookSecret,
      })
      .execute();
  }

  /** The run if the actor may see it (visibleAgentRun), else undefined: one answer for missing and hidden. */
  async findVisible(actor: Actor, id: string): Promise<AgentRun | undefined> {
    const row = await this.db
      .selectFrom('agentRuns as r')
      .selectAll()
      .where('r.id', '=', id)
      .where(visibleAgentRun(actor, 'r'))
      .executeTakeFirst();
    return row && toAgentRun(row);
  }

  async statusOf(id: string): Promise<AgentRunStatus | undefined> {
    const row = await this.db.selectFrom('agentRuns').select('status').where('id', '=', id).executeTakeFirst();
    return row?.status as AgentRunStatus | undefined;
  }

  /** The status and the seq of the run's last event (what a stream has to reach before `done`). */
  async streamPosition(id: string): Promise<{ status: AgentRunStatus; eventSeq: number } | undefined> {
    const row = await this.db
      .selectFrom('agentRuns')
      .select(['status', 'eventSeq'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row && { status: row.status as AgentRunStatus, eventSeq: row.eventSeq };
  }

  /** The caller's runs inside the caller's pins, newest first (one more than `limit`, to tell whether a page follows). */
  async history(actor: Actor, filter: AgentRunHistoryFilter): Promise<AgentRun[]> {
    let query = this.db.selectFrom('agentRuns').selectAll().where(visibleAgentRun(actor, 'agentRuns'));
    if (filter.projectId) query = query.where('projectId', '=', filter.projectId);
    if (filter.status) query = query.where('status', '=', filter.status);
    const before = filter.before;
    if (before)
      query = query.where(sql<boolean>`(created_at, id) < (${before.createdAt}::timestamptz, ${before.id}::uuid)`);
    const rows = await query
      .orderBy('createdAt', 'desc')
      .orderBy('id', 'desc')
      .limit(filter.limit + 1)
      .execute();
    return rows.map(toAgentRun);
  }

  /**
   * Flags the cancel; a queued run, or one waiting for an approval, is cancelled at once. Returns the status after
   * the change, or undefined when the run had already finished.
   */
  async requestCancel(id: string, executor: DbExecutor = this.db): Promise<AgentRunStatus | undefined> {
    const row = await executor
      .updateTable('agentRuns')
      .set({
        cancelRequested: true,
        status: sql`CASE WHEN status IN ('queued', 'awaiting_approval') THEN 'cancelled' ELSE status END`,
        finishedAt: sql`CASE WHEN status IN ('queued', 'awaiting_approval') THEN now() ELSE finished_at END`,
      })
      .where('id', '=', id)
      .where('status', 'in', ['queued', 'running', 'awaiting_approval'])
      .returning('status')
      .executeTakeFirst();
    return row?.status as AgentRunStatus | undefined;
  }

  /** Cancels a running run whose worker is gone (stale heartbeat); false when a live worker still holds it. */
  async cancelAbandoned(id: string, staleAfterMs: number): Promise<boolean> {
    const row = await this.db
      .updateTable('agentRuns')
      .set({ status: 'cancelled', finishedAt: sql`now()`, claimToken: null })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where(staleHeartbeat(staleAfterMs))
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Records the owner's decision on the step waiting for approval and queues the run again; the time it waited is
   * added to `paused_ms` (not the run's working time). False when the step no longer waits (another decision, a
   * cancel or the timeout came first).
   */
  async decide(id: string, step: StoredStep, executor: DbExecutor = this.db): Promise<boolean> {
    const row = await executor
      .updateTable('agentRuns')
      .set({
        steps: sql`jsonb_set(steps, ARRAY[${String(step.index)}::text], ${JSON.stringify(step)}::jsonb)`,
        status: 'queued',
        pausedMs: sql`paused_ms + greatest(0, extract(epoch FROM now() - coalesce(awaiting_since, now())) * 1000)`,
        awaitingSince: null,
      })
      .where('id', '=', id)
      .where('status', '=', 'awaiting_approval')
      .where(sql<boolean>`steps -> ${step.index}::int ->> 'status' = 'awaiting_approval'`)
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Fails the runs that waited longer than `timeoutMs` for an approval (a pending cancel wins); returns their ids. */
  async expireApprovals(timeoutMs: number, error: string): Promise<string[]> {
    const rows = await this.db
      .updateTable('agentRuns')
      .set({
        status: sql`CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END`,
        error: sql`CASE WHEN cancel_requested THEN NULL ELSE ${error}::text END`,
        finishedAt: sql`now()`,
      })
      .where('status', '=', 'awaiting_approval')
      .where(sql<boolean>`awaiting_since < now() - make_interval(secs => ${timeoutMs / 1000})`)
      .returning('id')
      .execute();
    return rows.map((row) => row.id);
  }

  // ---- Fenced writes of the worker holding the run's claim -------------------------------------------------

  /** Appends a step; false when the claim is lost. */
  appendStep(claim: Claim, step: StoredStep): Promise<boolean> {
    return this.fencedStepWrite(claim, sql<Json>`steps || jsonb_build_array(${JSON.stringify(step)}::jsonb)`);
  }

  /** Replaces the step at its index; false when the claim is lost. */
  replaceStep(claim: Claim, step: StoredStep): Promise<boolean> {
    return this.fencedStepWrite(
      claim,
      sql<Json>`jsonb_set(steps, ARRAY[${String(step.index)}::text], ${JSON.stringify(step)}::jsonb)`,
    );
  }

  /**
   * The final write, and the one place the cancel rule lives: a pending cancel wins over whatever the run
   * reached. The row lock orders it against requestCancel (which only flags unfinished runs), so a cancel
   * either lands first (this write turns it into `cancelled`) or finds the run finished (409).
   */
  async finish(
    claim: Claim,
    status: 'succeeded' | 'failed' | 'cancelled',
    output: string | null,
    error: string | null,
  ): Promise<'succeeded' | 'failed' | 'cancelled' | null> {
    const row = await this.db
      .updateTable('agentRuns')
      .set({
        status: sql`CASE WHEN cancel_requested THEN 'cancelled' ELSE ${status}::text END`,
        output: sql`CASE WHEN cancel_requested THEN NULL ELSE ${output}::text END`,
        error: sql`CASE WHEN cancel_requested THEN NULL ELSE ${error}::text END`,
        finishedAt: sql`now()`,
        claimToken: null,
      })
      .where(claimedBy(claim))
      .returning('status')
      .executeTakeFirst();
    // The status written (a pending cancel wins), or null when the claim was no longer this run's.
    return row ? (row.status as 'succeeded' | 'failed' | 'cancelled') : null;
  }

  /**
   * Records the step waiting for approval and hands the run back (no claim, no heartbeat: nothing waits in a
   * worker). `attempts` restarts, since pausing is not an interruption. A cancel that arrived meanwhile wins here
   * too. False when the claim is lost.
   */
  async pause(claim: Claim, step: StoredStep): Promise<boolean> {
    const row = await this.db
      .updateTable('agentRuns')
      .set({
        steps: sql`steps || jsonb_build_array(${JSON.stringify(step)}::jsonb)`,
        status: sql`CASE WHEN cancel_requested THEN 'cancelled' ELSE 'awaiting_approval' END`,
        finishedAt: sql`CASE WHEN cancel_requested THEN now() ELSE NULL END`,
        awaitingSince: sql`now()`,
        claimToken: null,
        heartbeatAt: null,
        attempts: 0,
      })
      .where(claimedBy(claim))
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  private async fencedStepWrite(claim: Claim, steps: RawBuilder<Json>): Promise<boolean> {
    const row = await this.db
      .updateTable('agentRuns')
      .set({ steps, heartbeatAt: sql`now()` })
      .where(claimedBy(claim))
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }
}

export function toAgentRun(row: Selectable<AgentRuns>): AgentRun {
  return {
    id: row.id,
    userId: row.userId,
    projectId: row.projectId,
    status: row.status as AgentRunStatus,
    input: row.input,
    output: row.output,
    error: row.error,
    steps: row.steps as unknown as StoredStep[],
    provider: row.provider,
    model: row.model,
    tools: row.tools,
    scopes: row.scopes,
    actor: row.actor as unknown as AgentRunActor,
    maxSteps: row.maxSteps,
    approval: row.approval as AgentRunApproval,
    pausedMs: Number(row.pausedMs),
    webhookUrl: row.webhookUrl,
    cancelRequested: row.cancelRequested,
    attempts: row.attempts,
    createdAt: row.createdAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
  };
}
