import { Inject, Injectable } from '@nestjs/common';
import { SlotLeases } from '../../common/leases/slot-leases.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

/** One open stream's slot: renewed while the stream lives, released when it ends. */
export interface StreamSlot {
  renew(): void;
  release(): void;
}

/**
 * The per-user cap on open run streams (AGENT_MAX_STREAMS_PER_USER), as counted leases (SlotLeases) renewed with the
 * stream's keep-alive: in Redis with REDIS_URL, else in PostgreSQL, so the count holds across every instance either
 * way (on the embedded engine there is one process). A store that is down does not close the door on streams: the
 * cap is then not applied.
 */
@Injectable()
export class RunStreamSlots {
  private readonly leaseMs: number;

  constructor(
    private readonly leases: SlotLeases,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.leaseMs = Math.max(30_000, 3 * config.agent.streamHeartbeatMs);
  }

  /** A slot for one more stream of the user, or null when the user has AGENT_MAX_STREAMS_PER_USER open already. */
  async acquire(userId: string): Promise<StreamSlot | null> {
    const lease = await this.leases.acquire(`streams:${userId}`, {
      limit: this.config.agent.maxStreamsPerUser,
      leaseMs: this.leaseMs,
      withoutRedis: 'database',
    });
    if (!lease) return null;
    return { renew: () => void lease.renew(), release: () => void lease.release() };
  }
}
