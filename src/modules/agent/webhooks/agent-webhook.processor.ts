import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { WORKER_DRAIN_DELAY_SECONDS, WORKER_RUN_RETRY_DELAY_MS } from '../../../queue/queue.constants.js';
import { AGENT_WEBHOOKS_QUEUE, AgentWebhooksService } from './agent-webhooks.service.js';

/** One webhook delivery attempt per job; the queue retries failures with exponential backoff. */
@Processor(AGENT_WEBHOOKS_QUEUE, { concurrency: 4, drainDelay: WORKER_DRAIN_DELAY_SECONDS, runRetryDelay: WORKER_RUN_RETRY_DELAY_MS })
export class AgentWebhookProcessor extends WorkerHost {
  constructor(private readonly webhooks: AgentWebhooksService) {
    super();
  }

  async process(job: Job<{ deliveryId: string }>): Promise<void> {
    await this.webhooks.deliver(job.data.deliveryId, job.attemptsMade + 1 >= (job.opts.attempts ?? 1));
  }
}
