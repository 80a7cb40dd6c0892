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

/** Carries "run indexing job X" from the queue to the runner; one job at a time per process (CPU-bound embedding). */
@Processor(RAG_INDEXING_QUEUE, { concurrency: 1, drainDelay: WORKER_DRAIN_DELAY_SECONDS, runRetryDelay: WORKER_RUN_RETRY_DELAY_MS })
export class IndexingProcessor extends WorkerHost {
  private readonly logger = new Logger(IndexingProcessor.name);

  constructor(private readonly runner: IndexingJobRunner) {
    super();
  }

  async process(job: Job<IndexingJobData>, token?: string): Promise<string> {
    const outcome = await this.runner.run(job.data.indexingJobId);
    // Drained: the job's claim is handed back; its queue entry goes back too, for the next worker at once.
    if (outcome === 'released') return handBack(job, token);
    return outcome;
  }

  @OnWorkerEvent('failed')
  async onFailed(job: Job<IndexingJobData> | undefined, error: Error): Promise<void> {
    if (!job) return;
    const attempts = job.opts.attempts ?? 1;
    this.logger.warn({ msg: 'indexing attempt failed', jobId: job.data.indexingJobId, attempt: job.attemptsMade, error: error.message });
    if (job.attemptsMade >= attempts) await this.runner.markFailed(job.data.indexingJobId, error.message);
  }
}
