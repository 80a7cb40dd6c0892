import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { WORKER_DRAIN_DELAY_SECONDS, WORKER_RUN_RETRY_DELAY_MS } from '../../../queue/queue.constants.js';
import { handBack, WorkerDrain } from '../../../queue/worker-drain.js';
import { AGENT_WEBHOOKS_QUEUE, AgentWebhooksService } from './agent-webhooks.service.js';

/** How long a delivery in flight when the worker drains may still take before it is handed back. */
const DRAIN_GRACE_MS = 2_000;

/** One webhook delivery attempt per job; the queue retries failures with exponential backoff. */
@Processor(AGENT_WEBHOOKS_QUEUE, { concurrency: 4, drainDelay: WORKER_DRAIN_DELAY_SECONDS, runRetryDelay: WORKER_RUN_RETRY_DELAY_MS })
export class AgentWebhookProcessor extends WorkerHost {
  constructor(
    private readonly webhooks: AgentWebhooksService,
    private readonly drain: WorkerDrain,
  ) {
    super();
  }

  async process(job: Job<{ deliveryId: string }>, token?: string): Promise<void> {
    if (this.drain.draining) return handBack(job, token);
    const delivery = this.webhooks.deliver(job.data.deliveryId, job.attemptsMade + 1 >= (job.opts.attempts ?? 1));
    // A slow receiver must not hold a draining worker past its grace period: the delivery goes to the next worker,
    // which sends it again unless this attempt got recorded meanwhile (receivers dedupe on Atrium-Delivery-Id).
    let grace: NodeJS.Timeout | undefined;
    let onAbort: () => void = () => undefined;
    const drained = new Promise<'drained'>((resolve) => {
      onAbort = () => (grace = setTimeout(() => resolve('drained'), DRAIN_GRACE_MS));
      this.drain.signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([delivery.then(() => 'delivered' as const), drained]);
      if (outcome === 'delivered') return;
    } finally {
      this.drain.signal.removeEventListener('abort', onAbort);
      clearTimeout(grace);
    }
    delivery.catch(() => undefined); // its outcome no longer matters here
    return handBack(job, token);
  }
}
