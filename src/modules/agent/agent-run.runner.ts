import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ERROR_CODE_MAPPING } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ToolsService } from '../tools/tools.service.js';
import { CANCEL_POLL_MS, HEARTBEAT_EVERY_MS, MAX_RUN_ATTEMPTS, RESULT_SUMMARY_MAX_CHARS, TOOL_RESULT_MAX_CHARS } from './agent.constants.js';
import type { AgentRunRow, ModelToolCall, StoredStep } from './agent-run.types.js';
import { returningRows } from '../../database/returning-rows.js';
import { LLM_CLIENT, LlmError, type ChatMessage, type LlmClient, type OfferedTool } from './llm/llm-client.js';

type StopReason = 'cancelled' | 'lost' | 'shutdown' | 'run-timeout';

class Stop extends Error {
  constructor(readonly reason: StopReason) {
    super(reason);
  }
}

class StepTimeout extends Error {}

const SYSTEM_PROMPT =
  'You are Atrium\'s agent. You act for the user inside one project, with exactly the tools offered, which run with the ' +
  'user\'s own permissions. Use tools when they help, cite document and task ids you rely on, and finish with a short, ' +
  'direct answer. If a tool fails, read its error and adapt; never invent results.';

/**
 * Runs one agent run: claims it (queued, or running with a dead worker's stale heartbeat), rebuilds the
 * conversation from its recorded steps, then loops model → tool calls until a final answer, appending every
 * step to the row as it happens. All writes are fenced by the claim token, so a worker that lost its claim
 * (declared dead, cancelled) can write nothing more. A tool call is recorded as `started` before it runs; a
 * resumed run never re-executes a started call whose outcome was not recorded (it becomes `unknown`).
 */
@Injectable()
export class AgentRunner implements OnModuleDestroy {
  private readonly logger = new Logger(AgentRunner.name);
  private readonly active = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  private stopping = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly tools: ToolsService,
    private readonly projects: ProjectsService,
    @Inject(LLM_CLIENT) private readonly llm: LlmClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Shutdown: stop every run here without a final write and release it, so another worker resumes it at once. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    for (const { controller } of this.active.values()) controller.abort(new Stop('shutdown'));
    await Promise.race([Promise.allSettled([...this.active.values()].map((run) => run.done)), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
  }

  async run(runId: string): Promise<'finished' | 'not-claimed'> {
    if (this.stopping) return 'not-claimed';
    const token = randomUUID();
    const [row] = returningRows<AgentRunRow>(
      await this.dataSource.query(
      `UPDATE agent_runs SET status = 'running', started_at = coalesce(started_at, now()), heartbeat_at = now(), claim_token = $2, attempts = attempts + 1
       WHERE id = $1 AND (status = 'queued' OR (status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < now() - make_interval(secs => $3))))
       RETURNING *`,
      [runId, token, this.config.agent.staleAfterMs / 1000],
      ),
    );
    if (!row) return 'not-claimed';
    const controller = new AbortController();
    const done = this.execute(row, token, controller).catch((error: unknown) => {
      this.logger.error({ msg: 'agent run crashed', runId, error: error instanceof Error ? error.message : String(error) });
    });
    this.active.set(runId, { controller, done });
    try {
      await done;
    } finally {
      this.active.delete(runId);
    }
    return 'finished';
  }

  private async execute(row: AgentRunRow, token: string, controller: AbortController): Promise<void> {
    const fence = new Fence(this.dataSource, row.id, token);
    if (row.cancel_requested) return fence.finish('cancelled', null, null);
    if (row.attempts > MAX_RUN_ATTEMPTS) {
      return fence.finish('failed', null, `The run was interrupted ${row.attempts - 1} times (its worker stopped); not resumed again`);
    }
    // Time spent waiting for an approval is not the run's working time.
    const deadline = new Date(row.started_at ?? Date.now()).getTime() + Number(row.paused_ms ?? 0) + this.config.agent.runTimeoutMs;
    if (Date.now() >= deadline) return fence.finish('failed', null, `The run timed out after ${this.config.agent.runTimeoutMs} ms (AGENT_RUN_TIMEOUT_MS)`);

    const actor: Actor = { ...row.actor };
    const role = await this.projects.roleOf(actor, row.project_id);
    if (role === null) return fence.finish('failed', null, 'The caller is no longer a member of this project');
    // Never wider than at creation, narrowed if the caller's role dropped since.
    const roleScopes = role === 'viewer' ? this.tools.readScopes() : this.tools.allScopes();
    const scopes = row.scopes.filter((scope) => roleScopes.includes(scope));
    const offered = this.tools
      .toolsFor(scopes)
      .filter((tool) => row.tools === null || row.tools.includes(tool.definition.name))
      .map((tool): OfferedTool => {
        const view = this.tools.schemaView(tool);
        return { name: view.name, description: view.description, parameters: view.inputSchema as Record<string, unknown> };
      });
    const offeredNames = new Set(offered.map((tool) => tool.name));
    const needsApproval = (name: string) => row.approval === 'writes' && offeredNames.has(name) && this.tools.find(name)?.definition.annotations?.readOnlyHint !== true;

    const watcher = new Watcher(this.dataSource, row.id, token, controller);
    const runTimer = setTimeout(() => controller.abort(new Stop('run-timeout')), deadline - Date.now());
    watcher.start();
    let stepLabel = 'model call';
    try {
      const steps = [...row.steps];
      // A tool call that started but has no recorded outcome may or may not have happened: never run it again.
      for (const step of steps) {
        if (step.type === 'tool_call' && step.status === 'started') {
          step.status = 'unknown';
          step.finishedAt = new Date().toISOString();
          step.resultSummary = 'outcome unknown: the worker stopped during this call; it was not retried';
          step.modelContent = JSON.stringify({ error: { code: 'outcome_unknown', message: 'This call was interrupted and its outcome is unknown; it was not retried. Check before repeating it.' } });
          await fence.replaceStep(step);
        }
      }
      const messages: ChatMessage[] = [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: row.input },
      ];
      for (const step of steps) {
        if (step.status === 'approved') continue; // decided but not run yet: it runs below, then joins the conversation
        if (step.type === 'message') {
          messages.push({
            role: 'assistant',
            content: step.content ?? null,
            ...(step.toolCalls?.length ? { tool_calls: step.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) } : {}),
          });
        } else {
          messages.push({ role: 'tool', tool_call_id: step.callId ?? '', content: step.modelContent ?? '' });
        }
      }
      const lastMessage = [...steps].reverse().find((step) => step.type === 'message');
      const answered = new Set(steps.filter((step) => step.type === 'tool_call' && step.status !== 'approved').map((step) => step.callId));
      const approved = new Map(steps.filter((step) => step.status === 'approved').map((step) => [step.callId, step]));
      let pending: ModelToolCall[] = (lastMessage?.toolCalls ?? []).filter((call) => !answered.has(call.id));
      let turns = steps.filter((step) => step.type === 'message').length;
      let index = steps.length;

      for (;;) {
        for (const call of pending) {
          stepLabel = `tool call ${call.name}`;
          const decided = approved.get(call.id);
          if (!decided && needsApproval(call.name) && isJsonObject(call.arguments)) {
            // Stop before the write: the row holds the question, no worker waits; approve/reject re-enqueues.
            const waiting: StoredStep = { index, type: 'tool_call', status: 'awaiting_approval', tool: call.name, arguments: JSON.parse(call.arguments || '{}'), startedAt: new Date().toISOString(), finishedAt: null, callId: call.id };
            return await fence.pause(waiting);
          }
          const step = await this.runTool(fence, decided?.index ?? index, call, offeredNames, actor, scopes, decided);
          if (!decided) index += 1;
          messages.push({ role: 'tool', tool_call_id: call.id, content: step.modelContent ?? '' });
          if (controller.signal.aborted) throw controller.signal.reason;
        }
        pending = [];
        if (turns >= row.max_steps) {
          return await fence.finish('failed', null, `maxSteps (${row.max_steps}) reached before the model gave a final answer`);
        }
        stepLabel = 'model call';
        const startedAt = new Date().toISOString();
        const stepSignal = AbortSignal.timeout(this.config.agent.stepTimeoutMs);
        const completion = await abortable(
          this.llm.complete({ messages, tools: offered, signal: AbortSignal.any([controller.signal, stepSignal]), projectId: row.project_id }),
          controller.signal,
          stepSignal,
        );
        turns += 1;
        const step: StoredStep = {
          index,
          type: 'message',
          status: 'ok',
          content: completion.content,
          startedAt,
          finishedAt: new Date().toISOString(),
          ...(completion.toolCalls.length ? { toolCalls: completion.toolCalls, resultSummary: `asked for ${completion.toolCalls.map((c) => c.name).join(', ')}` } : {}),
        };
        await fence.appendStep(step);
        index += 1;
        messages.push({
          role: 'assistant',
          content: completion.content,
          ...(completion.toolCalls.length ? { tool_calls: completion.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) } : {}),
        });
        if (completion.toolCalls.length === 0) return await fence.finish('succeeded', completion.content ?? '', null);
        pending = completion.toolCalls;
      }
    } catch (error) {
      const reason = controller.signal.aborted ? controller.signal.reason : error;
      if (reason instanceof Stop) {
        if (reason.reason === 'cancelled') return fence.finish('cancelled', null, null);
        if (reason.reason === 'run-timeout') return fence.finish('failed', null, `The run timed out after ${this.config.agent.runTimeoutMs} ms (AGENT_RUN_TIMEOUT_MS)`);
        if (reason.reason === 'shutdown') return fence.release();
        return; // lost: another worker owns the run, or it was finished elsewhere
      }
      if (error instanceof StepTimeout) return fence.finish('failed', null, `Step timed out: ${stepLabel} took longer than ${this.config.agent.stepTimeoutMs} ms (AGENT_STEP_TIMEOUT_MS)`);
      if (error instanceof LlmError) return fence.finish('failed', null, error.message);
      if (error instanceof LostClaim) return;
      this.logger.error({ msg: 'agent run failed', runId: row.id, error: error instanceof Error ? error.message : String(error) });
      return fence.finish('failed', null, `Internal error: ${error instanceof Error ? error.message : 'unknown'}`);
    } finally {
      clearTimeout(runTimer);
      watcher.stop();
    }
  }

  /** One tool call: recorded as started, executed through ToolsService (caller's scopes, pinned actor), then recorded with its outcome. */
  private async runTool(fence: Fence, index: number, call: ModelToolCall, offered: Set<string>, actor: Actor, scopes: readonly string[], approved?: StoredStep): Promise<StoredStep> {
    let args: unknown;
    let parseError: string | null = null;
    if (approved) {
      args = approved.arguments; // the owner's (possibly edited) arguments, validated again by ToolsService.call
    } else {
      try {
        args = JSON.parse(call.arguments || '{}');
        if (args === null || typeof args !== 'object' || Array.isArray(args)) parseError = 'arguments must be a JSON object';
      } catch {
        parseError = 'arguments are not valid JSON';
      }
    }
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
    const record = (recorded: StoredStep) => (approved ? fence.replaceStep(recorded) : fence.appendStep(recorded));
    const settle = (status: 'ok' | 'error', modelContent: string, summary: string) => {
      step.status = status;
      step.finishedAt = new Date().toISOString();
      step.modelContent = modelContent;
      step.resultSummary = summary.length > RESULT_SUMMARY_MAX_CHARS ? `${summary.slice(0, RESULT_SUMMARY_MAX_CHARS - 1)}…` : summary;
    };
    const refuse = (code: string, message: string) => settle('error', JSON.stringify({ error: { code, message } }), `error: ${code}: ${message}`);

    if (!offered.has(call.name)) {
      refuse('tool_not_allowed', `The tool "${call.name}" is not available to this run (not in its allowlist or outside the caller's permissions); it was not executed`);
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
      const outcome = await withTimeout(this.tools.call(call.name, args as Record<string, unknown>, actor, scopes), this.config.agent.stepTimeoutMs);
      settle('ok', toModelContent(outcome.result, outcome.truncated), summarize(outcome.result, outcome.truncated));
    } catch (error) {
      if (error instanceof StepTimeout) {
        refuse('timeout', `The tool did not finish within ${this.config.agent.stepTimeoutMs} ms; its outcome is unknown`);
      } else if (error instanceof AppException) {
        refuse(ERROR_CODE_MAPPING[error.code].toolApiCode, error.message);
      } else {
        this.logger.error({ msg: 'tool failed in agent run', tool: call.name, error: error instanceof Error ? error.message : String(error) });
        refuse('internal', 'The tool failed unexpectedly');
      }
    }
    await fence.replaceStep(step);
    return step;
  }
}

class LostClaim extends Error {}

/** Every write of a run, conditional on still holding its claim while it is running. */
class Fence {
  constructor(
    private readonly dataSource: DataSource,
    private readonly runId: string,
    private readonly token: string,
  ) {}

  async appendStep(step: StoredStep): Promise<void> {
    await this.write(`steps = steps || jsonb_build_array($3::jsonb)`, [JSON.stringify(step)]);
  }

  async replaceStep(step: StoredStep): Promise<void> {
    await this.write(`steps = jsonb_set(steps, ARRAY[$3::text], $4::jsonb)`, [String(step.index), JSON.stringify(step)]);
  }

  /**
   * The final write, and the one place the cancel rule lives: a pending cancel wins over whatever the run
   * reached. The row lock orders it against AgentRunsService.cancel (which only flags unfinished runs), so a
   * cancel either lands first (this write turns it into `cancelled`) or finds the run finished (409).
   */
  async finish(status: 'succeeded' | 'failed' | 'cancelled', output: string | null, error: string | null): Promise<void> {
    await this.dataSource.query(
      `UPDATE agent_runs SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE $3 END,
              output = CASE WHEN cancel_requested THEN NULL ELSE $4 END,
              error = CASE WHEN cancel_requested THEN NULL ELSE $5 END,
              finished_at = now(), claim_token = NULL
       WHERE id = $1 AND claim_token = $2 AND status = 'running'`,
      [this.runId, this.token, status, output, error],
    );
  }

  /**
   * Stops before a write call until its owner decides: records the waiting step and hands the run back (no
   * claim, no heartbeat: nothing waits in a worker). `attempts` restarts, since pausing is not an interruption.
   * A cancel that arrived meanwhile wins here too.
   */
  async pause(step: StoredStep): Promise<void> {
    const rows = returningRows<{ id: string }>(
      await this.dataSource.query(
        `UPDATE agent_runs SET steps = steps || jsonb_build_array($3::jsonb),
                status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'awaiting_approval' END,
                finished_at = CASE WHEN cancel_requested THEN now() ELSE NULL END,
                awaiting_since = now(), claim_token = NULL, heartbeat_at = NULL, attempts = 0
         WHERE id = $1 AND claim_token = $2 AND status = 'running' RETURNING id`,
        [this.runId, this.token, JSON.stringify(step)],
      ),
    );
    if (rows.length === 0) throw new LostClaim('the run is no longer ours');
  }

  /** Graceful stop: leave the run `running` with no heartbeat, so the next worker takes it over at once. */
  async release(): Promise<void> {
    await this.dataSource.query(`UPDATE agent_runs SET heartbeat_at = NULL, claim_token = NULL WHERE id = $1 AND claim_token = $2 AND status = 'running'`, [
      this.runId,
      this.token,
    ]);
  }

  private async write(set: string, params: unknown[]): Promise<void> {
    const rows = returningRows<{ id: string }>(
      await this.dataSource.query(
        `UPDATE agent_runs SET ${set}, heartbeat_at = now() WHERE id = $1 AND claim_token = $2 AND status = 'running' RETURNING id`,
        [this.runId, this.token, ...params],
      ),
    );
    if (rows.length === 0) throw new LostClaim('the run is no longer ours');
  }
}

/**
 * Polls the run's row: a cancel request aborts the in-flight model call within CANCEL_POLL_MS (works across
 * processes, since the flag lives in the database); a lost claim stops the run; the heartbeat shows it is alive.
 */
class Watcher {
  private timer?: NodeJS.Timeout;
  private busy = false;
  private lastBeat = Date.now();

  constructor(
    private readonly dataSource: DataSource,
    private readonly runId: string,
    private readonly token: string,
    private readonly controller: AbortController,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), CANCEL_POLL_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.busy || this.controller.signal.aborted) return;
    this.busy = true;
    try {
      const beat = Date.now() - this.lastBeat >= HEARTBEAT_EVERY_MS;
      const rows: { status: string; cancel_requested: boolean; claim_token: string | null }[] = beat
        ? returningRows(await this.dataSource.query(
            `UPDATE agent_runs SET heartbeat_at = CASE WHEN claim_token = $2 AND status = 'running' THEN now() ELSE heartbeat_at END
             WHERE id = $1 RETURNING status, cancel_requested, claim_token`,
            [this.runId, this.token],
          ))
        : await this.dataSource.query(`SELECT status, cancel_requested, claim_token FROM agent_runs WHERE id = $1`, [this.runId]);
      if (beat) this.lastBeat = Date.now();
      const row = rows[0];
      if (!row || row.claim_token !== this.token || row.status !== 'running') this.controller.abort(new Stop('lost'));
      else if (row.cancel_requested) this.controller.abort(new Stop('cancelled'));
    } catch {
      // a database hiccup: try again on the next tick
    } finally {
      this.busy = false;
    }
  }
}

/** Rejects as soon as the run is aborted or the step times out, even if the client ignores its signal. */
function abortable<T>(work: Promise<T>, run: AbortSignal, step: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onRun = () => reject(run.reason);
    const onStep = () => reject(new StepTimeout());
    if (run.aborted) return onRun();
    if (step.aborted) return onStep();
    run.addEventListener('abort', onRun, { once: true });
    step.addEventListener('abort', onStep, { once: true });
    work.then(resolve, (error: unknown) => (run.aborted ? reject(run.reason) : step.aborted ? reject(new StepTimeout()) : reject(error))).finally(() => {
      run.removeEventListener('abort', onRun);
      step.removeEventListener('abort', onStep);
    });
  });
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text || '{}');
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  } catch {
    return false;
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([work, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new StepTimeout()), ms)))]).finally(() => clearTimeout(timer));
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
  if (json.length > TOOL_RESULT_MAX_CHARS && result && typeof result === 'object' && typeof (result as { content?: unknown }).content === 'string') {
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
      .map((item) => (item && typeof item === 'object' ? String((item as Record<string, unknown>).title ?? (item as Record<string, unknown>).name ?? (item as Record<string, unknown>).id ?? '') : String(item)))
      .filter(Boolean);
    return `${result.length}${truncated ? '+' : ''} result${result.length === 1 ? '' : 's'}${names.length ? `: ${names.join('; ')}` : ''}`;
  }
  if (result && typeof result === 'object') {
    const record = result as Record<string, unknown>;
    const parts = ['id', 'title', 'name', 'status', 'deleted'].filter((key) => record[key] !== undefined).map((key) => `${key}=${String(record[key])}`);
    return parts.length ? parts.join(', ') : `object with ${Object.keys(record).length} fields`;
  }
  return String(result);
}
