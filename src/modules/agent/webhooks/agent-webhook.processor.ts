import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import { DelayedError, type Job } from 'bullmq';
import { SlotLeases } from '../../../common/leases/slot-leases.js';
import type { AppConfig } from '../../../config/app-config.js';
import { APP_CONFIG } from '../../../config/app-config.token.js';
import { WORKER_DRAIN_DELAY_SECONDS, WORKER_RUN_RETRY_DELAY_MS } from '../../../queue/queue.constants.js';
import { handBack, WorkerDrain } from '../../../queue/worker-drain.js';
import { AGENT_WEBHOOKS_QUEUE, AgentWebhooksService } from './agent-webhooks.service.js';

interface DeliveryJobData {
  deliveryId: string;
  /** The run's owner (entries queued before it was carried are limited per delivery instead). */
  userId?: string;
}

/** Deliveries under way at once in a process, all users together (each attempt waits on a remote server). */
const DELIVERY_SLOTS = 16;

/** How long a delivery in flight when the worker drains may still take before it is handed back. */
const DRAIN_GRACE_MS = 2_000;

/**
 * One webhook delivery attempt per job; the queue retries failures with exponential backoff. A user's deliveries
 * under way at once are at most WEBHOOK_MAX_IN_FLIGHT_PER_USER across every worker process (a lease per delivery,
 * SlotLeases: in Redis with REDIS_URL, else in PostgreSQL): an entry of a user already at that count goes back to the
 * queue for a second or two (not an attempt), so a slow or hostile receiver holds its owner's deliveries only, and
 * every other user's delivery finds a free slot.
 */
@Processor(AGENT_WEBHOOKS_QUEUE, {
  concurrency: DELIVERY_SLOTS,
  drainDelay: WORKER_DRAIN_DELAY_SECONDS,
  runRetryDelay: WORKER_RUN_RETRY_DELAY_MS,
})
export class AgentWebhookProcessor extends WorkerHost {
  /** An attempt ends by its deadline (plus the drain's grace); a lease outlives it, so only a dead process's lapses. */
  private readonly leaseMs: number;

  constructor(
    private readonly webhooks: AgentWebhooksService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly drain: WorkerDrain,
    private readonly leases: SlotLeases,
  ) {
    super();
    this.leaseMs = Math.max(30_000, 3 * config.agent.webhookTimeoutMs);
  }

  async process(job: Job<DeliveryJobData>, token?: string): Promise<void> {
    if (this.drain.draining) return handBack(job, token);
    const owner = job.data.userId ?? job.data.deliveryId;
    const lease = token
      ? await this.leases.acquire(`webhooks:${owner}`, {
          limit: this.config.agent.webhookInFlightPerUser,
          leaseMs: this.leaseMs,
          withoutRedis: 'database',
        })
      : undefined;
    if (lease === null) {
      const wait = Math.min(this.config.agent.webhookTimeoutMs, 1_000 + Math.floor(Math.random() * 1_000));
      await job.moveToDelayed(Date.now() + wait, token);
      throw new DelayedError();
    }
    try {
      await this.deliverUnlessDrained(job, token);
    } finally {
      await lease?.release();
    }
  }

  private async deliverUnlessDrained(job: Job<DeliveryJobData>, token: string | undefined): Promise<void> {
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
