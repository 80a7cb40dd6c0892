import { AgentRunCredential } from './agent-run.credential.js';
import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import { RequestContext } from '../../common/request-context/request-context.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ERROR_CODE_MAPPING } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ClaimableJobsService } from '../../queue/claimable-jobs.service.js';
import { WorkerDrain } from '../../queue/worker-drain.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ToolCallPipeline, type ResolvedTool } from '../tools/tool-call-pipeline.js';
import { ToolsService } from '../tools/tools.service.js';
import {
  CANCEL_POLL_MS,
  HEARTBEAT_EVERY_MS,
  MAX_RUN_ATTEMPTS,
  RESULT_SUMMARY_MAX_CHARS,
  TOOL_RESULT_MAX_CHARS,
} from './agent.constants.js';
import {
  assistantMessage,
  awaitingApprovalStep,
  messageStep,
  rebuildConversation,
  toolMessage,
  type Conversation,
} from './agent-run.conversation.js';
import { narrowestActor } from '../../common/access/access-rules.js';
import { isWriteTool, type RegisteredTool } from '../tool-kit/tool-definition.js';
import { foreignTextIn, foreignTextInFailure } from '../tool-kit/tool-provenance.js';
import { LostClaim, StepRecorder } from './agent-run.steps.js';
import type { AgentRun, ModelToolCall, StoredStep } from './agent-run.types.js';
import { AGENT_RUNS_TABLE, AgentRunsRepository, toAgentRun } from './agent-runs.repository.js';
import { LLM_CLIENT, LlmError, type Completion, type LlmClient, type OfferedTool } from './llm/llm-client.js';

type StopReason = 'cancelled' | 'lost' | 'shutdown' | 'run-timeout';

class Stop extends Error {
  constructor(readonly reason: StopReason) {
    super(reason);
  }
}

class StepTimeout extends Error {}

/** What a run may do in this attempt: the caller's scopes narrowed to its current role, and the tools offered. */
interface RunScope {
  runId: string;
  actor: Actor;
  scopes: string[];
  offered: OfferedTool[];
  offeredNames: Set<string>;
}

/** One attempt of a run in this worker. */
interface Attempt {
  run: AgentRun;
  steps: StepRecorder;
  scope: RunScope;
  controller: AbortController;
  /** What is under way, for the step-timeout message. */
  stepLabel: string;
}

/**
 * Runs one agent run: claims it (src/queue's job machinery: queued, or running with a dead worker's stale
 * heartbeat), rebuilds the conversation from its recorded steps, then loops model → tool calls until a final answer,
 * recording every step as it happens. All writes are fenced by the claim (StepRecorder), so a worker that lost its
 * claim (declared dead, cancelled) can write nothing more. A tool call is recorded as `started` before it runs; a
 * resumed run never re-executes a started call whose outcome was not recorded (it becomes `unknown`).
 */
@Injectable()
export class AgentRunner implements OnModuleDestroy {
  private readonly logger = new Logger(AgentRunner.name);
  private readonly active = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  private stopping = false;

  constructor(
    private readonly repository: AgentRunsRepository,
    private readonly claims: ClaimableJobsService,
    private readonly tools: ToolsService,
    private readonly pipeline: ToolCallPipeline,
    private readonly runCredential: AgentRunCredential,
    private readonly projects: ProjectsService,
    @Inject(LLM_CLIENT) private readonly llm: LlmClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    drain: WorkerDrain,
  ) {
    drain.signal.addEventListener('abort', () => this.stopAll(), { once: true });
  }

  /** Shutdown: stop every run here without a final write and release it, so another worker resumes it at once. */
  async onModuleDestroy(): Promise<void> {
    this.stopAll();
    await Promise.race([
      Promise.allSettled([...this.active.values()].map((run) => run.done)),
      new Promise((resolve) => setTimeout(resolve, 5_000).unref()),
    ]);
  }

  /** A drain (SIGTERM) stops the runs at once, before the rest of the app closes. */
  private stopAll(): void {
    this.stopping = true;
    for (const { controller } of this.active.values()) controller.abort(new Stop('shutdown'));
  }

  /**
   * Runs one run: the given one, or (from the queue, `runId` undefined) whichever is fairest to run next
   * (ClaimableJobsService.claimNext): a queue entry only says "there is work", so one user's backlog cannot hold
   * the workers while another user's run waits.
   * 'released': stopped by a drain with its claim handed back (or never claimed); the caller puts its queue entry back.
   */
  async run(runId?: string): Promise<'finished' | 'not-claimed' | 'released'> {
    if (this.stopping) return 'released';
    const claimed =
      runId === undefined
        ? await this.claims.claimNext(AGENT_RUNS_TABLE, this.config.agent.staleAfterMs, toAgentRun)
        : await this.claims.claim(AGENT_RUNS_TABLE, runId, this.config.agent.staleAfterMs, toAgentRun);
    if (!claimed) return 'not-claimed';
    const claimedId = claimed.job.id;
    const controller = new AbortController();
    // A drain that began while the claim was being taken stops this run too.
    if (this.stopping) controller.abort(new Stop('shutdown'));
    const recorder = new StepRecorder(this.repository, this.claims, claimed.claim);
    // Every log line of the run names the request that queued it.
    const done = RequestContext.run({ requestId: claimed.claim.requestId ?? claimedId }, () =>
      this.execute(claimed.job, recorder, controller),
    ).catch((error: unknown) => {
      this.logger.error({
        msg: 'agent run crashed',
        runId: claimedId,
        error: error instanceof Error ? error.message : String(error),
      });
    });
    this.active.set(claimedId, { controller, done });
    try {
      await done;
    } finally {
      this.active.delete(claimedId);
    }
    const reason: unknown = controller.signal.reason;
    return reason instanceof Stop && reason.reason === 'shutdown' ? 'released' : 'finished';
  }

  /** Checks before any work, narrows the scope, then runs the loop under the claim's watch and the run's deadline. */
  private async execute(run: AgentRun, steps: StepRecorder, controller: AbortController): Promise<void> {
    if (run.cancelRequested) return steps.finish('cancelled', null, null);
    if (run.attempts > MAX_RUN_ATTEMPTS) {
      return steps.finish(
        'failed',
        null,
        `The run was interrupted ${run.attempts - 1} times (its worker stopped); not resumed again`,
      );
    }
    // Time spent waiting for an approval is not the run's working time.
    const deadline = (run.startedAt ?? new Date()).getTime() + run.pausedMs + this.config.agent.runTimeoutMs;
    if (Date.now() >= deadline) return steps.finish('failed', null, this.runTimeoutMessage());
    const scope = await this.narrowScope(run);
    if (!scope) return steps.finish('failed', null, 'The caller is no longer a member of this project');

    // The heartbeat, and how a cancel (a flag in the database, from any process) or a lost claim reaches this worker.
    const stopWatch = this.claims.watch(steps.claim, {
      checkEveryMs: CANCEL_POLL_MS,
      beatEveryMs: HEARTBEAT_EVERY_MS,
      signal: controller.signal,
      onLost: () => controller.abort(new Stop('lost')),
      onCancel: () => controller.abort(new Stop('cancelled')),
    });
    const runTimer = setTimeout(() => controller.abort(new Stop('run-timeout')), deadline - Date.now());
    const attempt: Attempt = { run, steps, scope, controller, stepLabel: 'model call' };
    try {
      await steps.markInterrupted(run.steps);
      await this.loop(attempt, rebuildConversation(run));
    } catch (error) {
      await this.settle(attempt, error);
    } finally {
      clearTimeout(runTimer);
      stopWatch();
    }
  }

  /** Never wider than at creation, narrowed if the caller's role dropped since; null when no longer a member. */
  private async narrowScope(run: AgentRun): Promise<RunScope | null> {
    const actor: Actor = { ...run.actor };
    const role = await this.projects.roleOf(actor, run.projectId);
    if (role === null) return null;
    const roleScopes = this.tools.scopesForRole(role);
    const scopes = run.scopes.filter((scope) => roleScopes.includes(scope));
    const offered = this.tools
      .toolsFor({ scopes })
      .filter((tool) => run.tools === null || run.tools.includes(tool.definition.name))
      .map((tool): OfferedTool => {
        const view = this.tools.schemaView(tool);
        return {
          name: view.name,
          description: view.description,
          parameters: view.inputSchema,
        };
      });
    return { runId: run.id, actor, scopes, offered, offeredNames: new Set(offered.map((tool) => tool.name)) };
  }

  /** Tool calls, then a model turn, until the model answers without tool calls, maxSteps, or a write to approve. */
  private async loop(attempt: Attempt, conversation: Conversation): Promise<void> {
    const { run, steps, scope, controller } = attempt;
    let pending = conversation.pending;
    for (;;) {
      for (const call of pending) {
        attempt.stepLabel = `tool call ${call.name}`;
        const decided = conversation.approved.get(call.id);
        // The pipeline's resolve step, once per call: the approval rule and the call read the same tool.
        const resolved = this.pipeline.resolve(call.name);
        // Stop before the write: the row holds the question, no worker waits; approve/reject re-enqueues.
        if (!decided && this.needsApproval(run, conversation, scope, call, resolved.tool))
          return steps.pause(awaitingApprovalStep(conversation.nextIndex, call));
        const step = await this.runTool(
          steps,
          decided?.index ?? conversation.nextIndex,
          call,
          resolved,
          scope,
          decided,
        );
        if (!decided) conversation.nextIndex += 1;
        if (step.untrusted) conversation.untrusted = true;
        conversation.messages.push(toolMessage(step));
        if (controller.signal.aborted) throw controller.signal.reason;
      }
      if (conversation.turns >= run.maxSteps) {
        return steps.finish('failed', null, `maxSteps (${run.maxSteps}) reached before the model gave a final answer`);
      }
      const completion = await this.modelTurn(attempt, conversation);
      if (completion.toolCalls.length === 0) return steps.finish('succeeded', completion.content ?? '', null);
      pending = completion.toolCalls;
    }
  }

  /** One model call (bounded by the step timeout and the run's abort), recorded as a step and added to the conversation. */
  private async modelTurn(attempt: Attempt, conversation: Conversation): Promise<Completion> {
    const { run, steps, scope, controller } = attempt;
    attempt.stepLabel = 'model call';
    const startedAt = new Date().toISOString();
    const stepSignal = AbortSignal.timeout(this.config.agent.stepTimeoutMs);
    const completion = await abortable(
      this.llm.complete({
        messages: conversation.messages,
        tools: scope.offered,
        signal: AbortSignal.any([controller.signal, stepSignal]),
        projectId: run.projectId,
      }),
      controller.signal,
      stepSignal,
    );
    conversation.turns += 1;
    await steps.append(messageStep(conversation.nextIndex, completion, startedAt));
    conversation.nextIndex += 1;
    conversation.messages.push(assistantMessage(completion.content, completion.toolCalls));
    return completion;
  }

  /** `writes`: before every write; `auto`: before every write once the run has read text its starter did not write. */
  private needsApproval(
    run: AgentRun,
    conversation: Conversation,
    scope: RunScope,
    call: ModelToolCall,
    tool: RegisteredTool | undefined,
  ): boolean {
    const asks = run.approval === 'writes' || (run.approval === 'auto' && conversation.untrusted);
    return (
      asks &&
      scope.offeredNames.has(call.name) &&
      isWriteTool(tool) &&
      parseArguments(call.arguments).parseError === null
    );
  }

  /** How an attempt that stopped early ends: the final write for each outcome, a release on shutdown, nothing once lost. */
  private async settle(attempt: Attempt, error: unknown): Promise<void> {
    const { steps, controller } = attempt;
    const reason: unknown = controller.signal.aborted ? controller.signal.reason : error;
    if (reason instanceof Stop) {
      if (reason.reason === 'cancelled') return steps.finish('cancelled', null, null);
      if (reason.reason === 'run-timeout') return steps.finish('failed', null, this.runTimeoutMessage());
      if (reason.reason === 'shutdown') return steps.release();
      return; // lost: another worker owns the run, or it was finished elsewhere
    }
    if (error instanceof StepTimeout) {
      return steps.finish(
        'failed',
        null,
        `Step timed out: ${attempt.stepLabel} took longer than ${this.config.agent.stepTimeoutMs} ms (AGENT_STEP_TIMEOUT_MS)`,
      );
    }
    if (error instanceof LlmError) return steps.finish('failed', null, error.message);
    if (error instanceof LostClaim) return;
    this.logger.error({
      msg: 'agent run failed',
      runId: attempt.run.id,
      error: error instanceof Error ? error.message : String(error),
    });
    return steps.finish('failed', null, `Internal error: ${error instanceof Error ? error.message : 'unknown'}`);
  }

  private runTimeoutMessage(): string {
    return `The run timed out after ${this.config.agent.runTimeoutMs} ms (AGENT_RUN_TIMEOUT_MS)`;
  }

  /**
   * One tool call: recorded as started, run through ToolCallPipeline as the run's caller (its scopes, its pinned actor;
   * the same steps, audit entry and telemetry as a call on either door), then recorded with its outcome.
   */
  private async runTool(
    steps: StepRecorder,
    index: number,
    call: ModelToolCall,
    resolved: ResolvedTool,
    scope: RunScope,
    approved?: StoredStep,
  ): Promise<StoredStep> {
    // An approved call runs with the owner's (possibly edited) arguments, validated again by the pipeline.
    const { args, parseError } = approved
      ? { args: approved.arguments, parseError: null }
      : parseArguments(call.arguments);
    const step: StoredStep = {
      index,
      type: 'tool_call',
      status: 'started',
      tool: call.name,
      arguments: parseError ? call.arguments : args,
      startedAt: approved?.startedAt ?? new Date().toISOString(),
      finishedAt: null,
      callId: call.id,
      ...(approved?.approval ? { approval: approved.approval } : {}),
    };
    // An approved call already has its row in the step log: it is updated in place.
    const record = (recorded: StoredStep) => (approved ? steps.replace(recorded) : steps.append(recorded));
    const settle = (status: 'ok' | 'error', modelContent: string, summary: string) => {
      step.status = status;
      step.finishedAt = new Date().toISOString();
      step.modelContent = modelContent;
      step.resultSummary =
        summary.length > RESULT_SUMMARY_MAX_CHARS ? `${summary.slice(0, RESULT_SUMMARY_MAX_CHARS - 1)}…` : summary;
    };
    const refuse = (code: string, message: string) =>
      settle('error', JSON.stringify({ error: { code, message } }), `error: ${code}: ${message}`);
    const tool = resolved.tool;
    // An approved call runs within the rights of both the run and whoever approved it.
    const actor = approved?.approval?.approverActor
      ? narrowestActor(scope.actor, { ...approved.approval.approverActor })
      : scope.actor;

    if (!scope.offeredNames.has(call.name)) {
      refuse(
        'tool_not_allowed',
        `The tool "${call.name}" is not available to this run (not in its allowlist or outside the caller's permissions); it was not executed`,
      );
      await record(step);
      return step;
    }
    if (parseError) {
      refuse('invalid_argument', parseError);
      await record(step);
      return step;
    }
    await record(step); // recorded before it runs: a retry never executes it twice
    try {
      const { outcome } = await this.pipeline.run({
        door: 'agent',
        caller: this.runCredential.callerFor(scope.runId, actor, scope.scopes),
        tool: resolved,
        args: args as Record<string, unknown>,
        within: (work) => withTimeout(work, this.config.agent.stepTimeoutMs),
        statusOfError: (error) => (error instanceof StepTimeout ? 'timeout' : undefined),
      });
      settle('ok', toModelContent(outcome.result, outcome.truncated), summarize(outcome.result, outcome.truncated));
      const foreign = foreignTextIn(tool, args, outcome.result, scope.actor.userId);
      if (foreign) step.untrusted = foreign;
    } catch (error) {
      const foreign = foreignTextInFailure(tool, args);
      if (foreign) step.untrusted = foreign;
      if (error instanceof StepTimeout) {
        refuse(
          'timeout',
          `The tool did not finish within ${this.config.agent.stepTimeoutMs} ms; its outcome is unknown`,
        );
      } else if (error instanceof AppException) {
        refuse(ERROR_CODE_MAPPING[error.code].toolApiCode, error.message);
      } else {
        this.logger.error({
          msg: 'tool failed in agent run',
          tool: call.name,
          error: error instanceof Error ? error.message : String(error),
        });
        refuse('internal', 'The tool failed unexpectedly');
      }
    }
    await steps.replace(step);
    return step;
  }
}

/** Rejects as soon as the run is aborted or the step times out, even if the client ignores its signal. */
function abortable<T>(work: Promise<T>, run: AbortSignal, step: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onRun = () => reject(run.reason);
    const onStep = () => reject(new StepTimeout());
    if (run.aborted || step.aborted) {
      // Aborted before it began (a drain that started as the run was claimed): the client rejects with the same reason, unheard.
      work.catch(() => undefined);
      return run.aborted ? onRun() : onStep();
    }
    run.addEventListener('abort', onRun, { once: true });
    step.addEventListener('abort', onStep, { once: true });
    work
      .then(resolve, (error: unknown) =>
        run.aborted ? reject(run.reason) : step.aborted ? reject(new StepTimeout()) : reject(error),
      )
      .finally(() => {
        run.removeEventListener('abort', onRun);
        step.removeEventListener('abort', onStep);
      });
  });
}

/** The model's raw argument text as a JSON object, or why it is not one. */
function parseArguments(text: string): { args: unknown; parseError: string | null } {
  try {
    const args: unknown = JSON.parse(text || '{}');
    return {
      args,
      parseError:
        args === null || typeof args !== 'object' || Array.isArray(args) ? 'arguments must be a JSON object' : null,
    };
  } catch {
    return { args: undefined, parseError: 'arguments are not valid JSON' };
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    work,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new StepTimeout()), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** The result as the model sees it: JSON within TOOL_RESULT_MAX_CHARS (list items dropped first, then long text cut). */
export function toModelContent(result: unknown, truncated: boolean): string {
  if (Array.isArray(result)) {
    let items = result;
    let json = JSON.stringify(truncated ? { items, truncated: true } : items);
    while (json.length > TOOL_RESULT_MAX_CHARS && items.length > 1) {
      items = items.slice(0, Math.max(1, Math.floor(items.length / 2)));
      json = JSON.stringify({ items, truncated: true });
    }
    return json.length > TOOL_RESULT_MAX_CHARS ? json.slice(0, TOOL_RESULT_MAX_CHARS) : json;
  }
  let json = JSON.stringify(result ?? null);
  if (
    json.length > TOOL_RESULT_MAX_CHARS &&
    result &&
    typeof result === 'object' &&
    typeof (result as { content?: unknown }).content === 'string'
  ) {
    const record = result as { content: string };
    const room = Math.max(0, record.content.length - (json.length - TOOL_RESULT_MAX_CHARS) - 50);
    json = JSON.stringify({ ...record, content: `${record.content.slice(0, room)}…`, content_truncated: true });
  }
  return json.length > TOOL_RESULT_MAX_CHARS ? json.slice(0, TOOL_RESULT_MAX_CHARS) : json;
}

function summarize(result: unknown, truncated: boolean): string {
  if (Array.isArray(result)) {
    const names = result
      .slice(0, 3)
      .map((item) =>
        item && typeof item === 'object'
          ? String(
              (item as Record<string, unknown>).title ??
                (item as Record<string, unknown>).name ??
                (item as Record<string, unknown>).id ??
                '',
            )
          : String(item),
      )
      .filter(Boolean);
    return `${result.length}${truncated ? '+' : ''} result${result.length === 1 ? '' : 's'}${names.length ? `: ${names.join('; ')}` : ''}`;
  }
  if (result && typeof result === 'object') {
    const record = result as Record<string, unknown>;
    const parts = ['id', 'title', 'name', 'status', 'deleted']
      .filter((key) => record[key] !== undefined)
      .map((key) => `${key}=${String(record[key])}`);
    return parts.length ? parts.join(', ') : `object with ${Object.keys(record).length} fields`;
  }
  return String(result);
}
