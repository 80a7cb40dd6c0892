import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { mayDecideAgentRun, AGENT_RUN_DECIDER_ROLE } from '../../common/access/access-rules.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import type { ProjectRole } from '../../common/access/project-roles.js';
import { AuditService } from '../audit/audit.service.js';
import type { Caller } from '../../common/auth/caller.js';
import { type Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { decodeCursor, encodeCursor, type Page } from '../../common/pagination/cursor-page.js';
import { RequestContext } from '../../common/request-context/request-context.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ToolCallPipeline } from '../tools/tool-call-pipeline.js';
import { ToolsService } from '../tools/tools.service.js';
import { AgentRunCredential } from './agent-run.credential.js';
import { AGENT_RUNS_QUEUE } from './agent.constants.js';
import {
  DEFAULT_AGENT_RUN_APPROVAL,
  FINAL_STATUSES,
  toSummary,
  type AgentRunApproval,
  type StepDecider,
  type StoredStep,
  toView,
  type AgentRun,
  type AgentRunStatus,
  type AgentRunSummary,
  type AgentRunView,
} from './agent-run.types.js';
import { AGENT_RUNS_TABLE, AgentRunsRepository } from './agent-runs.repository.js';
import { LLM_CLIENT, type LlmClient } from './llm/llm-client.js';
import { ClaimableJobsService } from '../../queue/claimable-jobs.service.js';
import { isUuid } from '../../common/validation/uuid.js';
import { rateLimited } from '../../common/rate-limit/rate-limiter.service.js';
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

/** Retry-After of the per-user run cap: about one step of a run. */
const CAP_RETRY_AFTER_SECONDS = 10;

/** The credential deciding about a run's work, as steps and the audit log name it (its kind's `via` and id). */
export function deciderOf(caller: Caller): StepDecider {
  return { userId: caller.userId, via: caller.via as StepDecider['via'], credentialId: caller.credentialId };
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
    private readonly repository: AgentRunsRepository,
    private readonly claims: ClaimableJobsService,
    @InjectQueue(AGENT_RUNS_QUEUE) private readonly queue: Queue,
    private readonly projects: ProjectsService,
    private readonly tools: ToolsService,
    private readonly pipeline: ToolCallPipeline,
    private readonly runCredential: AgentRunCredential,
    @Inject(LLM_CLIENT) private readonly llm: LlmClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly webhooks: AgentWebhooksService,
    private readonly audit: AuditService,
    @InjectDb() private readonly db: Db,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.stopSweep = await this.claims.startSweep(
      'agent run',
      () => this.recover(),
      this.config.agent.recoveryIntervalMs,
      this.logger,
    );
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
    await this.assertCapacity(actor.userId);
    let allowlist: string[] | null = null;
    if (input.tools) {
      allowlist = [...new Set(input.tools)];
      const unknown = allowlist.filter((name) => !this.tools.find(name));
      if (unknown.length > 0) {
        throw AppException.validation(
          `Unknown tool name${unknown.length > 1 ? 's' : ''} in tools: ${unknown.join(', ')}`,
          [{ field: 'tools', message: `unknown tools: ${unknown.join(', ')}` }],
        );
      }
    }
    if (input.webhookUrl !== undefined) await assertWebhookUrl(input.webhookUrl, this.config.agent.webhookAllowPrivate);
    return { input, allowlist, scopes: this.tools.scopesForRole(role) };
  }

  /**
   * The per-user cap on queued and running runs (AGENT_MAX_ACTIVE_PER_USER): beyond it 429 RATE_LIMITED with
   * Retry-After, so one user cannot fill the queue (the fair claim already keeps others' runs from waiting behind it).
   */
  private async assertCapacity(userId: string): Promise<void> {
    const cap = this.config.agent.maxActivePerUser;
    if ((await this.claims.activeOf(AGENT_RUNS_TABLE, userId)) < cap) return;
    throw rateLimited(
      'backend',
      `You have ${cap} runs queued or running (AGENT_MAX_ACTIVE_PER_USER); retry when one has finished`,
      CAP_RETRY_AFTER_SECONDS,
    );
  }

  /** Creates and enqueues the run; `webhookSecret` (with a webhookUrl) is the only time the secret is shown. */
  async start(actor: Actor, plan: AgentRunPlan): Promise<{ jobId: string; status: 'queued'; webhookSecret?: string }> {
    const { input, allowlist, scopes } = plan;
    const runActor = {
      userId: actor.userId,
      projectIds: [input.projectId],
      repos: actor.repos,
      ...(actor.projectRoleCap ? { projectRoleCap: actor.projectRoleCap } : {}),
    };
    const id = randomUUID();
    const webhookSecret = input.webhookUrl !== undefined ? this.webhooks.newSecret() : undefined;
    await this.repository.insert({
      id,
      userId: actor.userId,
      projectId: input.projectId,
      input: input.input,
      provider: this.llm.provider,
      model: this.llm.model,
      tools: allowlist,
      scopes,
      actor: runActor,
      maxSteps: input.maxSteps ?? 8,
      traceId: RequestContext.requestId() ?? null,
      approval: input.approval ?? DEFAULT_AGENT_RUN_APPROVAL,
      webhookUrl: input.webhookUrl ?? null,
      webhookSecret: webhookSecret ? this.webhooks.sealSecret(webhookSecret, id) : null,
    });
    this.claims.queued(AGENT_RUNS_TABLE, id, RequestContext.requestId());
    try {
      await this.enqueue(id);
    } catch (error) {
      // The row stays queued; the recovery sweep enqueues it once the queue is back.
      this.logger.warn({
        msg: 'could not enqueue agent run; the recovery sweep will',
        runId: id,
        error: String(error),
      });
    }
    return { jobId: id, status: 'queued', ...(webhookSecret ? { webhookSecret } : {}) };
  }

  /** The run as status shows it; with a webhook, its URL and delivery log (never the secret). */
  async get(
    actor: Actor,
    jobId: string,
  ): Promise<AgentRunView & { webhook?: { url: string; deliveries: WebhookDeliveryView[] } }> {
    const run = await this.findOwn(actor, jobId);
    const view = toView(run);
    return run.webhookUrl
      ? { ...view, webhook: { url: run.webhookUrl, deliveries: await this.webhooks.deliveries(run.id) } }
      : view;
  }

  /**
   * A queued run, or one waiting for an approval, is cancelled at once; a running one is flagged, and its final write (AgentRunsRepository.finish) turns
   * into `cancelled` whatever it reached, so a 202 here always ends `cancelled`. A run that finished first
   * is a 409. The route waits briefly so the answer usually shows the final status.
   */
  async cancel(actor: Actor, decider: StepDecider, jobId: string): Promise<{ jobId: string; status: AgentRunStatus }> {
    const { run } = await this.findDecidable(actor, jobId);
    const flagged = await this.db.transaction().execute(async (trx) => {
      const status = await this.repository.requestCancel(jobId, trx);
      if (status !== undefined) {
        await this.audit.recordChange(trx, {
          action: 'agent.cancel',
          actor: decider,
          target: { type: 'agent_run', id: jobId },
          details: { status: run.status },
        });
      }
      return status;
    });
    if (flagged === undefined)
      throw new AppException(ErrorCode.StateConflict, `The run has already finished (${run.status})`, {
        status: run.status,
      });
    if (flagged === 'cancelled') {
      this.claims.endedUnclaimed(AGENT_RUNS_TABLE, jobId, 'cancelled', { was: run.status });
      await this.queue.remove(jobId).catch(() => undefined);
      return { jobId, status: 'cancelled' };
    }
    const deadline = Date.now() + CANCEL_WAIT_MS;
    while (Date.now() < deadline) {
      await sleep(100);
      const status = await this.repository.statusOf(jobId);
      if (status && FINAL_STATUSES.includes(status)) return { jobId, status };
    }
    // No live worker answered (its heartbeat is stale or gone): nobody else will stop it, so stop it here.
    if (await this.repository.cancelAbandoned(jobId, this.config.agent.staleAfterMs)) {
      this.claims.endedUnclaimed(AGENT_RUNS_TABLE, jobId, 'cancelled', { was: 'running' });
      return { jobId, status: 'cancelled' };
    }
    // Still running on a live worker: the cancel is recorded and its final write will be `cancelled`.
    return { jobId, status: (await this.repository.statusOf(jobId)) ?? 'cancelled' };
  }

  /**
   * The owner's decision about the write call a run stopped before. Approved (possibly edited) arguments are
   * validated as any call of that tool under the run's scopes; the run's pinned actor applies when it runs.
   * The run goes back to `queued` and any instance's worker resumes it.
   */
  async approve(
    actor: Actor,
    decider: StepDecider,
    jobId: string,
    input: ApprovalInput,
  ): Promise<{ jobId: string; status: AgentRunStatus }> {
    const { run, role } = await this.findDecidable(actor, jobId);
    const waiting = run.steps[input.stepIndex];
    if (run.status !== 'awaiting_approval' || !waiting || waiting.status !== 'awaiting_approval') {
      throw new AppException(
        ErrorCode.StateConflict,
        `Step ${input.stepIndex} is not waiting for approval (run ${run.status})`,
        { status: run.status },
      );
    }
    const decidedAt = new Date().toISOString();
    let step: StoredStep;
    if (input.decision === 'approve') {
      const edited = input.arguments !== undefined;
      // 400/403 as any call would be, under the scopes both the run and the approver's role hold.
      const approverScopes = this.tools.scopesForRole(role);
      if (edited)
        this.pipeline.vet(
          this.runCredential.callerFor(
            jobId,
            actor,
            run.scopes.filter((scope) => approverScopes.includes(scope)),
          ),
          waiting.tool ?? '',
          input.arguments,
        );
      step = {
        ...waiting,
        status: 'approved',
        arguments: edited ? input.arguments : waiting.arguments,
        approval: {
          decision: 'approve',
          decidedBy: decider,
          decidedAt,
          ...(edited ? { originalArguments: waiting.arguments } : {}),
          approverActor: {
            userId: actor.userId,
            projectIds: actor.projectIds,
            repos: actor.repos,
            ...(actor.projectRoleCap ? { projectRoleCap: actor.projectRoleCap } : {}),
          },
        },
      };
    } else {
      step = {
        ...waiting,
        status: 'rejected',
        finishedAt: decidedAt,
        resultSummary: 'rejected; not executed',
        modelContent: JSON.stringify({
          error: {
            code: 'rejected',
            message:
              'The user refused this call; it was not executed. Do not retry it; continue without it or explain.',
          },
        }),
        approval: { decision: 'reject', decidedBy: decider, decidedAt },
      };
    }
    // Lost a race with another decision, a cancel or the timeout.
    const decided = await this.db.transaction().execute(async (trx) => {
      if (!(await this.repository.decide(jobId, step, trx))) return false;
      await this.audit.recordChange(trx, {
        action: input.decision === 'approve' ? 'agent.approve' : 'agent.reject',
        actor: decider,
        target: { type: 'agent_run', id: jobId },
        details: {
          stepIndex: input.stepIndex,
          tool: waiting.tool ?? null,
          ...(input.decision === 'approve' ? { edited: input.arguments !== undefined } : {}),
        },
      });
      return true;
    });
    if (!decided)
      throw new AppException(ErrorCode.StateConflict, `Step ${input.stepIndex} is no longer waiting for approval`, {});
    try {
      await this.enqueue(jobId, `-a${Date.now()}`);
    } catch (error) {
      this.logger.warn({
        msg: 'could not enqueue approved agent run; the recovery sweep will',
        runId: jobId,
        error: String(error),
      });
    }
    return { jobId, status: 'queued' };
  }

  async history(
    actor: Actor,
    query: { projectId?: string; status?: AgentRunStatus; limit: number; cursor?: string },
  ): Promise<Page<AgentRunSummary>> {
    const cursor = decodeCursor(query.cursor);
    const runs = await this.repository.history(actor, {
      projectId: query.projectId,
      status: query.status,
      before: cursor ?? undefined,
      limit: query.limit,
    });
    const hasMore = runs.length > query.limit;
    const page = hasMore ? runs.slice(0, query.limit) : runs;
    const last = page[page.length - 1];
    return {
      items: page.map(toSummary),
      nextCursor: hasMore && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null,
    };
  }

  /**
   * Fails runs that waited too long for an approval, then re-enqueues runs whose worker died (stale heartbeat) and
   * queued runs whose queue entry is gone (the job machinery's recovery, src/queue).
   */
  async recover(): Promise<number> {
    const { approvalTimeoutMs } = this.config.agent;
    const expired = await this.repository.expireApprovals(
      approvalTimeoutMs,
      `No decision on the write call within ${approvalTimeoutMs} ms (AGENT_APPROVAL_TIMEOUT_MS); the call was not executed`,
    );
    for (const runId of expired)
      this.claims.endedUnclaimed(AGENT_RUNS_TABLE, runId, 'failed', { error: 'approval timed out' });
    return this.claims.recover({
      table: AGENT_RUNS_TABLE,
      what: 'agent run',
      queue: this.queue,
      staleAfterMs: this.config.agent.staleAfterMs,
      enqueue: (id, suffix) => this.enqueue(id, suffix),
      logger: this.logger,
    });
  }

  private async enqueue(id: string, suffix = ''): Promise<void> {
    // One attempt: a run's own row decides resumption; a queue retry could only race the recovery sweep.
    await this.queue.add(
      'run',
      { runId: id, traceId: RequestContext.requestId() },
      { jobId: `${id}${suffix}`, attempts: 1, removeOnComplete: 1000, removeOnFail: 1000 },
    );
  }

  /**
   * A run the actor sees (404 otherwise) and may decide about: approving, rejecting or cancelling its work needs the
   * authority of its writes in the run's project (mayDecideAgentRun), whatever the credential; else 403.
   */
  private async findDecidable(actor: Actor, jobId: string): Promise<{ run: AgentRun; role: ProjectRole }> {
    const run = await this.findOwn(actor, jobId);
    const role = await this.projects.roleOf(actor, run.projectId);
    if (role === null || !mayDecideAgentRun(role)) {
      throw AppException.forbidden(
        `Approving, rejecting or cancelling a run's work needs the ${AGENT_RUN_DECIDER_ROLE} role in its project (a project token's role caps yours)`,
      );
    }
    return { run, role };
  }

  private async findOwn(actor: Actor, jobId: string): Promise<AgentRun> {
    if (!isUuid(jobId)) throw AppException.notFound('Agent run');
    const run = await this.repository.findVisible(actor, jobId);
    if (!run) throw AppException.notFound('Agent run');
    return run;
  }
}
