import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { REDIS_CLIENT } from '../../common/redis/redis.module.js';
import { SYSTEM_QUEUE } from '../../queue/queue.constants.js';
import { DatabaseProbeRepository } from './database-probe.repository.js';

export interface CheckResult {
  status: 'up' | 'down';
  latencyMs: number;
  message?: string;
}

const CHECK_TIMEOUT_MS = 2000;

/** Each dependency the service needs, probed with a deadline so a hung dependency reads as down. */
@Injectable()
export class DependencyChecksService {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly databaseProbe: DatabaseProbeRepository,
    @InjectQueue(SYSTEM_QUEUE) private readonly systemQueue: Queue,
    @Inject(REDIS_CLIENT) private readonly redis: Redis | null,
  ) {}

  async runAll(): Promise<Record<string, CheckResult>> {
    const probes: Record<string, () => Promise<string | undefined>> = {
      database: async () => {
        await this.databaseProbe.ping();
        return undefined;
      },
      vector: async () => {
        const version = await this.databaseProbe.vectorExtensionVersion();
        if (version === null) throw new Error('pgvector extension is not installed');
        return `pgvector ${version}`;
      },
      queue: async () => {
        await this.systemQueue.getJobCounts('waiting');
        return undefined;
      },
    };
    if (this.redis) {
      const redis = this.redis;
      probes.redis = async () => {
        await redis.ping();
        return undefined;
      };
    }
    const entries = await Promise.all(
      Object.entries(probes).map(async ([name, probe]) => [name, await this.measure(name, probe)] as const),
    );
    return Object.fromEntries(entries);
  }

  private async measure(name: string, probe: () => Promise<string | undefined>): Promise<CheckResult> {
    const indicator = this.indicators.check(name);
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const message = await Promise.race([
        probe(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
        }),
      ]);
      const latencyMs = Math.round(performance.now() - started);
      const state = indicator.up({ latencyMs, ...(message ? { message } : {}) })[name];
      return { status: 'up', latencyMs: state.latencyMs, ...(message ? { message } : {}) };
    } catch (error) {
      const latencyMs = Math.round(performance.now() - started);
      // Only the error's message: connection strings and hosts are never echoed.
      const message = sanitize(error instanceof Error ? error.message : String(error));
      indicator.down({ latencyMs, message });
      return { status: 'down', latencyMs, message };
    } finally {
      clearTimeout(timer);
    }
  }
}

function sanitize(message: string): string {
  return message.replace(/[a-z]+:\/\/[^\s]+/gi, '<url>').slice(0, 200);
}
