import { WorkerHost } from '@nestjs/bullmq';
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { WaitingError, type Job, type Worker } from 'bullmq';

/** The reason a drained job stops: thrown at the next safe point of the work it interrupts. */
export class WorkerDraining extends Error {
  constructor() {
    super('the worker is shutting down');
    this.name = 'WorkerDraining';
  }
}

/**
 * A planned stop of this process's queue workers (SIGTERM). `start()` makes every BullMQ worker stop fetching and
 * aborts {@link signal}; a processor holding a job stops at its next safe point, hands the job's claim back
 * (ClaimableJobsService.release) and the queue entry back to waiting ({@link handBack}), so another worker, or this
 * one after a restart, takes it over at once instead of after a stale-claim or lock timeout.
 */
@Injectable()
export class WorkerDrain implements OnModuleDestroy {
  private readonly controller = new AbortController();
  private closing: Promise<void> | undefined;

  constructor(private readonly discovery: DiscoveryService) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get draining(): boolean {
    return this.controller.signal.aborted;
  }

  /** Stops fetching and asks running jobs to stop; resolves when every worker has closed (its jobs finished or handed back). */
  start(): Promise<void> {
    if (this.closing) return this.closing;
    this.controller.abort(new WorkerDraining());
    // close() stops the fetch loop at once and then waits for the active jobs; Nest's own close later reuses it.
    this.closing = Promise.allSettled(this.workers().map((worker) => worker.close())).then(() => undefined);
    return this.closing;
  }

  /** Any close of the app drains too (main.ts starts it earlier, at the signal): a handed-back job is never fetched again here. */
  onModuleDestroy(): Promise<void> {
    return this.start();
  }

  private workers(): Worker[] {
    const workers: Worker[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (!(instance instanceof WorkerHost)) continue;
      try {
        workers.push(instance.worker as Worker);
      } catch {
        // a processor whose worker was not started in this role
      }
    }
    return workers;
  }
}

/**
 * Puts a queue entry whose work was handed back (its row's claim released) back to waiting, for the next worker,
 * without counting an attempt; the thrown WaitingError tells BullMQ the entry has moved.
 */
export async function handBack(job: Job, token: string | undefined): Promise<never> {
  await job.moveToWait(token);
  throw new WaitingError();
}
