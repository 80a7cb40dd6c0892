import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { WORKER_DRAIN_DELAY_SECONDS, WORKER_RUN_RETRY_DELAY_MS } from '../../queue/queue.constants.js';
import { handBack } from '../../queue/worker-drain.js';
import { AGENT_RUNS_QUEUE } from './agent.constants.js';
import { AgentRunner } from './agent-run.runner.js';

interface AgentRunJobData {
  runId: string;
  traceId?: string;
}

/**
 * Carries "run agent run X" from the queue to the runner. Registered only in APP_ROLE=all and worker.
 * Runs wait on the model most of the time, so a process runs a few at once.
 */
@Processor(AGENT_RUNS_QUEUE, {
  concurrency: 4,
  drainDelay: WORKER_DRAIN_DELAY_SECONDS,
  runRetryDelay: WORKER_RUN_RETRY_DELAY_MS,
})
export class AgentRunProcessor extends WorkerHost {
  constructor(private readonly runner: AgentRunner) {
    super();
  }

  /**
   * An entry says "a run is waiting"; the runner claims whichever run is fairest to run next (per-user shares),
   * which need not be the entry's own: that one stays queued and a later entry (or the recovery sweep) picks it up.
   */
  async process(job: Job<AgentRunJobData>, token?: string): Promise<string> {
    const outcome = await this.runner.run();
    // Drained: the run's claim is handed back; this entry goes back too, for the next worker at once.
    if (outcome === 'released') return handBack(job, token);
    return outcome;
  }
}
