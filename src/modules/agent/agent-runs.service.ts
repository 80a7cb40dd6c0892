import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { actorSqlValues, insidePinsSql, isProjectAllowed } from '../../common/access/access-rules.js';
import { type Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { decodeCursor, encodeCursor, type Page } from '../../common/pagination/cursor-page.js';
import { RequestContext } from '../../common/request-context/request-context.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ToolsService } from '../tools/tools.service.js';
import { AGENT_RUNS_QUEUE } from './agent.constants.js';
import { FINAL_STATUSES, toSummary, type AgentRunApproval, type StoredStep, toView, type AgentRunRow, type AgentRunStatus, type AgentRunSummary, type AgentRunView } from './agent-run.types.js';
import { LLM_CLIENT, type LlmClient } from './llm/llm-client.js';
import { returningRows } from '../../database/returning-rows.js';
import { startRecoverySweep } from '../../queue/recovery-sweep.js';
import { isUuid } from '../../common/validation/uuid.js';
import { assertWebhookUrl } from './webhooks/webhook-address.js';
import { AgentWebhooksService, type WebhookDeliveryView } from './webhooks/agent-webhooks.service.js';

export interface ExecuteInput {
  projectId: string;
  input: string;
  tools?: string[];
  maxSteps?: number;
  approval?: AgentRunApproval;
  webhookUrl?: string;
}

export interface ApprovalInput {
  stepIndex: number;
  decision: 'approve' | 'reject';
  arguments?: Record<string, unknown>;
}

/** How long POST cancel waits for a running run to stop before answering. */
const CANCEL_WAIT_MS = 1_500;

/** An authorised run request: the input, the tool allowlist and the scopes its role grants. */
export interface AgentRunPlan {
  input: ExecuteInput;
  allowlist: string[] | null;
  scopes: string[];
}

/**
 * Agent runs as users see them: create (row + queue entry), status, cancel, history. Only the caller's own
 * runs exist for the caller (anything else is 404). A recovery sweep re-enqueues runs whose worker died.
 */
@Injectable()
export class AgentRunsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(AgentRunsService.name);
  private stopSweep?: () => void;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(AGENT_RUNS_QUEUE) private readonly queue: Queue,
    private readonly projects: ProjectsService,
    private readonly tools: ToolsService,
    @Inject(LLM_CLIENT) private readonly llm: LlmClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly webhooks: AgentWebhooksService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.role === 'api') return; // the processes that run agents also look after them
    this.stopSweep = await startRecoverySweep('agent run', () => this.recover(), this.config.agent.recoveryIntervalMs, this.logger);
  }

  onModuleDestroy(): void {
    this.stopSweep?.();
  }

  /**
   * A viewer (or a viewer session token) gets read tools only; an editor or owner gets every tool. The run's
   * actor is the caller pinned to the project, so tools see exactly what the caller could see by hand there.
   */
  /** The checks before a run is queued (any member; known tool names), and what it will be allowed to do. */
  async plan(actor: Actor, input: ExecuteInput): Promise<AgentRunPlan> {
    const role = await this.projects.requireRole(actor, input.projectId, 'viewer');
    let allowlist: string[] | null = null;
    if (input.tools) {
      allowlist = [...new Set(input.tools)];
      const unknown = allowlist.filter((name) => !this.tools.find(name));
      if (unknown.length > 0) {
        throw AppException.validation(`Unknown tool name${unknown.length > 1 ? 's' : ''} in tools: ${unknown.join(', ')}`, [
          { field: 'tools', message: `unknown tools: ${unknown.join(', ')}` },
        ]);
      }
    }
    if (input.webhookUrl !== undefined) await assertWebhookUrl(input.webhookUrl, this.config.agent.webhookAllowPrivate);
    return { input, allowlist, scopes: role === 'viewer' ? this.tools.readScopes() : this.tools.allScopes() };
  }

  /** Creates and enqueues the run; `webhookSecret` (with a webhookUrl) is the only time the secret is shown. */
  async start(actor: Actor, plan: AgentRunPlan): Promise<{ jobId: string; status: 'queued'; webhookSecret?: string }> {
    const { input, allowlist, scopes } = plan;
    const runActor = { userId: actor.userId, projectIds: [input.projectId], repos: actor.repos, ...(actor.projectRoleCap ? { projectRoleCap: actor.projectRoleCap } : {}) };
    const id = randomUUID();
    const webhookSecret = input.webhookUrl !== undefined ? this.webhooks.newSecret() : undefined;
    await this.dataSource.query(
      `INSERT INTO agent_runs (id, user_id, project_id, status, input, provider, model, tools, scopes, actor, max_steps, trace_id, approval, webhook_url, webhook_secret)
       VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7::text[], $8::text[], $9::jsonb, $10, $11, $12, $13, $14)`,
      [
        id, actor.userId, input.projectId, input.input, this.llm.provider, this.llm.model, allowlist, scopes, JSON.stringify(runActor), input.maxSteps ?? 8,
        RequestContext.requestId() ?? null, input.approval ?? 'none', input.webhookUrl ?? null, webhookSecret ? this.webhooks.sealSecret(webhookSecret, id) : null,
      ],
    );
    try {
      await this.enqueue(id);
    } catch (error) {
      // The row stays queued; the recovery sweep enqueues it once the queue is back.
      this.logger.warn({ msg: 'could not enqueue agent run; the recovery sweep will', runId: id, error: String(error) });
    }
    return { jobId: id, status: 'queued', ...(webhookSecret ? { webhookSecret } : {}) };
  }

  /** The run as status shows it; with a webhook, its URL and delivery log (never the secret). */
  async get(actor: Actor, jobId: string): Promise<AgentRunView & { webhook?: { url: string; deliveries: WebhookDeliveryView[] } }> {
    const row = await this.findOwn(actor, jobId);
    const view = toView(row);
    return row.webhook_url ? { ...view, webhook: { url: row.webhook_url, deliveries: await this.webhooks.deliveries(row.id) } } : view;
  }

  /**
   * A queued run, or one waiting for an approval, is cancelled at once; a running one is flagged, and its final write (Fence.finish) turns
   * into `cancelled` whatever it reached, so a 202 here always ends `cancelled`. A run that finished first
   * is a 409. The route waits briefly so the answer usually shows the final status.
   */
  async cancel(actor: Actor, jobId: string): Promise<{ jobId: string; status: AgentRunStatus }> {
    const run = await this.findOwn(actor, jobId);
    const rows = returningRows<{ status: AgentRunStatus }>(
      await this.dataSource.query(
      `UPDATE agent_runs SET cancel_requested = true,
              status = CASE WHEN status IN ('queued', 'awaiting_approval') THEN 'cancelled' ELSE status END,
              finished_at = CASE WHEN status IN ('queued', 'awaiting_approval') THEN now() ELSE finished_at END
       WHERE id = $1 AND status IN ('queued', 'running', 'awaiting_approval') RETURNING status`,
      [jobId],
      ),
    );
    if (rows.length === 0) throw new AppException(ErrorCode.StateConflict, `The run has already finished (${run.status})`, { status: run.status });
    if (rows[0].status === 'cancelled') {
      await this.queue.remove(jobId).catch(() => undefined);
      return { jobId, status: 'cancelled' };
    }
    const deadline = Date.now() + CANCEL_WAIT_MS;
    while (Date.now() < deadline) {
      await sleep(100);
      const [row]: { status: AgentRunStatus }[] = await this.dataSource.query(`SELECT status FROM agent_runs WHERE id = $1`, [jobId]);
      if (FINAL_STATUSES.includes(row.status)) return { jobId, status: row.status };
    }
    // No live worker answered (its heartbeat is stale or gone): nobody else will stop it, so stop it here.
    const [stopped] = returningRows<{ status: AgentRunStatus }>(
      await this.dataSource.query(
      `UPDATE agent_runs SET status = 'cancelled', finished_at = now(), claim_token = NULL
       WHERE id = $1 AND status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < now() - make_interval(secs => $2)) RETURNING status`,
      [jobId, this.config.agent.staleAfterMs / 1000],
      ),
    );
    if (stopped) return { jobId, status: 'cancelled' };
    // Still running on a live worker: the cancel is recorded and its final write will be `cancelled`.
    const [row]: { status: AgentRunStatus }[] = await this.dataSource.query(`SELECT status FROM agent_runs WHERE id = $1`, [jobId]);
    return { jobId, status: row.status };
  }

  /**
   * The owner's decision about the write call a run stopped before. Approved (possibly edited) arguments are
   * validated as any call of that tool under the run's scopes; the run's pinned actor applies when it runs.
   * The run goes back to `queued` and any instance's worker resumes it.
   */
  async approve(actor: Actor, jobId: string, input: ApprovalInput): Promise<{ jobId: string; status: AgentRunStatus }> {
    const run = await this.findOwn(actor, jobId);
    const waiting = run.steps[input.stepIndex];
    if (run.status !== 'awaiting_approval' || !waiting || waiting.status !== 'awaiting_approval') {
      throw new AppException(ErrorCode.StateConflict, `Step ${input.stepIndex} is not waiting for approval (run ${run.status})`, { status: run.status });
    }
    const decidedAt = new Date().toISOString();
    let step: StoredStep;
    if (input.decision === 'approve') {
      const edited = input.arguments !== undefined;
      if (edited) this.tools.prepare(waiting.tool ?? '', input.arguments, run.scopes); // 400/403 as any call would be
      step = {
        ...waiting,
        status: 'approved',
        arguments: edited ? input.arguments : waiting.arguments,
        approval: { decision: 'approve', decidedBy: actor.userId, decidedAt, ...(edited ? { originalArguments: waiting.arguments } : {}) },
      };
    } else {
      step = {
        ...waiting,
        status: 'rejected',
        finishedAt: decidedAt,
        resultSummary: 'rejected by the run\'s owner; not executed',
        modelContent: JSON.stringify({ error: { code: 'rejected', message: 'The user refused this call; it was not executed. Do not retry it; continue without it or explain.' } }),
        approval: { decision: 'reject', decidedBy: actor.userId, decidedAt },
      };
    }
    const rows = returningRows<{ status: AgentRunStatus }>(
      await this.dataSource.query(
        `UPDATE agent_runs SET steps = jsonb_set(steps, ARRAY[$2::text], $3::jsonb), status = 'queued',
                paused_ms = paused_ms + greatest(0, extract(epoch FROM now() - coalesce(awaiting_since, now())) * 1000), awaiting_since = NULL
         WHERE id = $1 AND status = 'awaiting_approval' AND steps -> $4::int ->> 'status' = 'awaiting_approval' RETURNING status`,
        [jobId, String(input.stepIndex), JSON.stringify(step), input.stepIndex],
      ),
    );
    // Lost a race with another decision, a cancel or the timeout.
    if (rows.length === 0) throw new AppException(ErrorCode.StateConflict, `Step ${input.stepIndex} is no longer waiting for approval`, {});
    try {
      await this.enqueue(jobId, `-a${Date.now()}`);
    } catch (error) {
      this.logger.warn({ msg: 'could not enqueue approved agent run; the recovery sweep will', runId: jobId, error: String(error) });
    }
    return { jobId, status: 'queued' };
  }

  async history(actor: Actor, query: { projectId?: string; status?: AgentRunStatus; limit: number; cursor?: string }): Promise<Page<AgentRunSummary>> {
    const cursor = decodeCursor(query.cursor);
    const params: unknown[] = actorSqlValues(actor);
    const where = ['user_id = $1', insidePinsSql('project_id', '$2')];
    if (query.projectId) {
      params.push(query.projectId);
      where.push(`project_id = $${params.length}`);
    }
    if (query.status) {
      params.push(query.status);
      where.push(`status = $${params.length}`);
    }
    if (cursor) {
      params.push(cursor.createdAt, cursor.id);
      where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(query.limit + 1);
    const rows: AgentRunRow[] = await this.dataSource.query(
      `SELECT * FROM agent_runs WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    const hasMore = rows.length > query.limit;
    const page = hasMore ? rows.slice(0, query.limit) : rows;
    const last = page[page.length - 1];
    return { items: page.map(toSummary), nextCursor: hasMore && last ? encodeCursor({ createdAt: new Date(last.created_at), id: last.id }) : null };
  }

  /** Re-enqueues runs whose worker died (stale heartbeat) and queued runs whose queue entry is gone. */
  async recover(): Promise<number> {
    const staleSeconds = this.config.agent.staleAfterMs / 1000;
    const expired = returningRows<{ id: string }>(
      await this.dataSource.query(
        `UPDATE agent_runs SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END,
                error = CASE WHEN cancel_requested THEN NULL ELSE $2 END, finished_at = now()
         WHERE status = 'awaiting_approval' AND awaiting_since < now() - make_interval(secs => $1) RETURNING id`,
        [this.config.agent.approvalTimeoutMs / 1000, `No decision on the write call within ${this.config.agent.approvalTimeoutMs} ms (AGENT_APPROVAL_TIMEOUT_MS); the call was not executed`],
      ),
    );
    for (const row of expired) this.logger.warn({ msg: 'agent run failed: approval timed out', runId: row.id });
    const rows: { id: string; status: AgentRunStatus }[] = await this.dataSource.query(
      `SELECT id, status FROM agent_runs
       WHERE (status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < now() - make_interval(secs => $1)))
          OR (status = 'queued' AND created_at < now() - make_interval(secs => $1))
       ORDER BY created_at LIMIT 100`,
      [staleSeconds],
    );
    let recovered = 0;
    for (const row of rows) {
      if (row.status === 'queued') {
        const existing = await this.queue.getJob(row.id);
        const state = existing ? await existing.getState() : 'missing';
        if (['waiting', 'delayed', 'active', 'prioritized', 'waiting-children'].includes(state)) continue;
      }
      await this.enqueue(row.id, `-r${Date.now()}`);
      recovered += 1;
      this.logger.warn({ msg: 'agent run re-enqueued', runId: row.id, status: row.status });
    }
    return recovered;
  }

  private async enqueue(id: string, suffix = ''): Promise<void> {
    // One attempt: a run's own row decides resumption; a queue retry could only race the recovery sweep.
    await this.queue.add('run', { runId: id, traceId: RequestContext.requestId() }, { jobId: `${id}${suffix}`, attempts: 1, removeOnComplete: 1000, removeOnFail: 1000 });
  }

  private async findOwn(actor: Actor, jobId: string): Promise<AgentRunRow> {
    if (!isUuid(jobId)) throw AppException.notFound('Agent run');
    const [row]: AgentRunRow[] = await this.dataSource.query(`SELECT * FROM agent_runs WHERE id = $1`, [jobId]);
    if (!row || row.user_id !== actor.userId || !isProjectAllowed(actor, row.project_id)) throw AppException.notFound('Agent run');
    return row;
  }
}
