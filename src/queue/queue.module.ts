import { BullModule } from '@nestjs/bullmq';
import { DynamicModule, Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { createPostgresBackend, setDefaultBackendFactory } from 'bullmq';
import { bullmqTelemetry } from '../common/tracing/tracing-state.js';
import type { AppConfig } from '../config/app-config.js';
import { ClaimableJobsRepository } from './claimable-jobs.repository.js';
import { ClaimableJobsService } from './claimable-jobs.service.js';
import { QueueErrorListener } from './queue-error-listener.js';
import { SYSTEM_QUEUE, type QueueBackendKind } from './queue.constants.js';
import { WorkerDrain } from './worker-drain.js';

/**
 * BullMQ for every background job: on Redis when REDIS_URL is set, otherwise on BullMQ's own
 * PostgreSQL backend in the app's database (schema "bullmq"), so the zero-config default needs
 * nothing but the embedded database.
 */
@Global()
@Module({})
export class QueueModule {
  static forRoot(config: AppConfig, databaseUrl: string): DynamicModule {
    const kind: QueueBackendKind = config.redis.url ? 'redis' : 'postgres';
    if (kind === 'postgres') {
      // @nestjs/bullmq builds Queue/Worker without a backend argument; the process-wide default
      // factory is how they reach PostgreSQL.
      setDefaultBackendFactory(createPostgresBackend);
    } else {
      setDefaultBackendFactory(undefined);
    }
    const connection =
      kind === 'redis'
        ? redisConnectionOptions(config.redis.url!)
        : { connectionString: databaseUrl, migrate: true, max: 4, connectionTimeoutMillis: 5000 };
    return {
      module: QueueModule,
      imports: [
        DiscoveryModule,
        // With tracing on, every queue and worker carries the trace of the request that queued a job into the job.
        BullModule.forRoot({
          connection: connection,
          prefix: kind === 'redis' ? config.redis.prefix : undefined,
          ...bullmqTelemetry(),
        }),
        BullModule.registerQueue({ name: SYSTEM_QUEUE }),
      ],
      providers: [QueueErrorListener, ClaimableJobsRepository, ClaimableJobsService, WorkerDrain],
      exports: [BullModule, ClaimableJobsService, WorkerDrain],
    };
  }
}

function redisConnectionOptions(url: string): Record<string, unknown> {
  const parsed = new URL(url);
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db: parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0,
    tls: parsed.protocol === 'rediss:' ? {} : undefined,
    // BullMQ workers need blocking commands that never give up; BullMQ sets this for workers itself.
    maxRetriesPerRequest: null,
  };
}
