import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import type { Job } from 'bullmq';
import { WORKER_DRAIN_DELAY_SECONDS, WORKER_RUN_RETRY_DELAY_MS } from '../../queue/queue.constants.js';
import { handBack } from '../../queue/worker-drain.js';
import { IndexingJobRunner } from './indexing-job.runner.js';
import { RAG_INDEXING_QUEUE } from './rag.constants.js';

interface IndexingJobData {
  indexingJobId: string;
}

/** Carries "indexing work is waiting" from the queue to the runner; one job at a time per process (CPU-bound embedding). */
@Processor(RAG_INDEXING_QUEUE, {
  concurrency: 1,
  drainDelay: WORKER_DRAIN_DELAY_SECONDS,
  runRetryDelay: WORKER_RUN_RETRY_DELAY_MS,
})
export class IndexingProcessor extends WorkerHost {
  private readonly logger = new Logger(IndexingProcessor.name);

  constructor(private readonly runner: IndexingJobRunner) {
    super();
  }

  /**
   * An entry says "indexing work is waiting"; the runner claims whichever job is fairest to run next (per-user
   * shares), which need not be the entry's own. A job that keeps failing is failed by the runner itself
   * (MAX_JOB_CLAIMS interruptions), not by the entry's retries.
   */
  async process(job: Job<IndexingJobData>, token?: string): Promise<string> {
    const outcome = await this.runner.run();
    // Drained: the job's claim is handed back; this entry goes back too, for the next worker at once.
    if (outcome === 'released') return handBack(job, token);
    return outcome;
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job<IndexingJobData> | undefined, error: Error): void {
    if (!job) return;
    this.logger.warn({
      msg: 'indexing attempt failed',
      entry: job.id,
      attempt: job.attemptsMade,
      error: error.message,
    });
  }
}
