import { WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { Queue } from 'bullmq';

/**
 * BullMQ re-emits connection errors (a dropped database or Redis) as 'error' events, and an
 * EventEmitter 'error' with no listener crashes the process. Every queue and worker of the app gets
 * a listener here, once, so an outage is logged and retried instead of killing the service.
 */
@Injectable()
export class QueueErrorListener implements OnApplicationBootstrap {
  private readonly logger = new Logger('Queue');

  constructor(private readonly discovery: DiscoveryService) {}

  onApplicationBootstrap(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (instance instanceof Queue) {
        instance.on('error', (error: Error) => this.report(`queue ${instance.name}`, error));
      } else if (instance instanceof WorkerHost) {
        let worker;
        try {
          worker = instance.worker;
        } catch {
          continue; // a processor whose worker was not started in this role
        }
        worker.on('error', (error: Error) => this.report(`worker ${worker.name}`, error));
      }
    }
  }

  private lastReport = 0;

  private report(source: string, error: Error): void {
    // A down dependency produces an error per retry; one line a second is enough to see it.
    const now = Date.now();
    if (now - this.lastReport < 1000) return;
    this.lastReport = now;
    this.logger.warn({ msg: 'queue backend error', source, error: error.message });
  }
}
