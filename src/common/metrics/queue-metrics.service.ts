import { WorkerHost } from '@nestjs/bullmq';
import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { Queue, type Job, type Worker } from 'bullmq';
import { addQueueDepthSource, jobDuration, jobsTotal } from './metrics.registry.js';

/** A scrape never waits longer than this for a queue backend that does not answer (the queue is left out). */
const DEPTH_TIMEOUT_MS = 2000;
/** Scrapes within this window share one read of the queue backend, so a flood of scrapes is not a flood of queries. */
const DEPTH_CACHE_MS = 1000;

/**
 * Queue series from BullMQ itself, the same on both backends (Redis, and BullMQ's PostgreSQL backend of the
 * zero-config default): atrium_queue_waiting from each queue's counts at scrape time, atrium_jobs_total and
 * atrium_job_duration_seconds from the completed/failed events of the workers that run in this process.
 */
@Injectable()
export class QueueMetrics implements OnApplicationBootstrap, OnApplicationShutdown {
  private removeSource: (() => void) | undefined;
  private cached: { at: number; depths: Promise<{ queue: string; waiting: number }[]> } | undefined;

  constructor(private readonly discovery: DiscoveryService) {}

  onApplicationBootstrap(): void {
    const queues: Queue[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (instance instanceof Queue) queues.push(instance);
      else if (instance instanceof WorkerHost) {
        let worker: Worker;
        try {
          worker = instance.worker;
        } catch {
          continue; // a processor whose worker was not started in this role
        }
        worker.on('completed', (job: Job) => recordJob(worker.name, 'completed', job));
        worker.on('failed', (job: Job | undefined) => recordJob(worker.name, 'failed', job));
      }
    }
    this.removeSource = addQueueDepthSource(() => this.depths(queues));
  }

  onApplicationShutdown(): void {
    this.removeSource?.();
  }

  private depths(queues: readonly Queue[]): Promise<{ queue: string; waiting: number }[]> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > DEPTH_CACHE_MS) {
      this.cached = { at: now, depths: readDepths(queues) };
    }
    return this.cached.depths;
  }
}

async function readDepths(queues: readonly Queue[]): Promise<{ queue: string; waiting: number }[]> {
  const settled = await Promise.allSettled(
    queues.map(async (queue) => {
      const counts = await withTimeout(queue.getJobCounts('waiting', 'prioritized'), DEPTH_TIMEOUT_MS);
      return { queue: queue.name, waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0) };
    }),
  );
  return settled.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
}

function recordJob(queue: string, status: 'completed' | 'failed', job: Job | undefined): void {
  jobsTotal.inc({ queue, status });
  if (job?.processedOn)
    jobDuration.observe({ queue, status }, Math.max(0, (job.finishedOn ?? Date.now()) - job.processedOn) / 1000);
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
