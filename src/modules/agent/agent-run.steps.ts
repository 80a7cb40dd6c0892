import type { ClaimableJobsService } from '../../queue/claimable-jobs.service.js';
import type { Claim } from '../../queue/claimable-jobs.repository.js';
import type { AgentRunsRepository } from './agent-runs.repository.js';
import type { StoredStep } from './agent-run.types.js';
import { redactText } from '../../common/secrets/secret-redactor.js';

/** The run is no longer this worker's (declared dead and taken over, cancelled, finished elsewhere): stop, write nothing. */
export class LostClaim extends Error {}

/**
 * Step recording of a claimed run: every write goes through the run's claim (AgentRunsRepository's fenced writes),
 * so a worker that lost its claim can write nothing more. A step write that finds the claim gone throws LostClaim.
 */
export class StepRecorder {
  constructor(
    private readonly runs: AgentRunsRepository,
    private readonly claims: ClaimableJobsService,
    readonly claim: Claim,
  ) {}

  async append(step: StoredStep): Promise<void> {
    redactStepText(step);
    if (!(await this.runs.appendStep(this.claim, step))) throw new LostClaim('the run is no longer ours');
  }

  async replace(step: StoredStep): Promise<void> {
    redactStepText(step);
    if (!(await this.runs.replaceStep(this.claim, step))) throw new LostClaim('the run is no longer ours');
  }

  /**
   * A tool call that started but has no recorded outcome may or may not have happened: it is never run again,
   * and the model is told its outcome is unknown.
   */
  async markInterrupted(steps: StoredStep[]): Promise<void> {
    for (const step of steps) {
      if (step.type !== 'tool_call' || step.status !== 'started') continue;
      step.status = 'unknown';
      step.finishedAt = new Date().toISOString();
      step.resultSummary = 'outcome unknown: the worker stopped during this call; it was not retried';
      step.modelContent = JSON.stringify({
        error: {
          code: 'outcome_unknown',
          message:
            'This call was interrupted and its outcome is unknown; it was not retried. Check before repeating it.',
        },
      });
      await this.replace(step);
    }
  }

  /** The final write; a pending cancel turns it into `cancelled` (AgentRunsRepository.finish). */
  async finish(
    status: 'succeeded' | 'failed' | 'cancelled',
    output: string | null,
    error: string | null,
  ): Promise<void> {
    // What the model wrote (or an error quoted) leaves through status, streams and webhooks: no credential shapes.
    const safeError = error === null ? null : redactText(error, 'run_output');
    const written = await this.runs.finish(
      this.claim,
      status,
      output === null ? null : redactText(output, 'run_output'),
      safeError,
    );
    if (written) this.claims.ended(this.claim, written, written === 'failed' && safeError ? { error: safeError } : {});
  }

  /** Stops before a write call until its owner decides; the run leaves this worker. */
  async pause(step: StoredStep): Promise<void> {
    if (!(await this.runs.pause(this.claim, step))) throw new LostClaim('the run is no longer ours');
    this.claims.ended(this.claim, 'paused', { tool: step.tool });
  }

  /** Graceful stop: the run stays `running` with no heartbeat, so the next worker takes it over at once. */
  release(): Promise<void> {
    return this.claims.release(this.claim, 'shutdown');
  }
}

/** The model's text in a step (its message, a result summary) with credential shapes redacted; tool results already are. */
function redactStepText(step: StoredStep): void {
  if (typeof step.content === 'string') step.content = redactText(step.content, 'run_output');
  if (typeof step.resultSummary === 'string') step.resultSummary = redactText(step.resultSummary, 'run_output');
}
