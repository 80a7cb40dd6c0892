import { Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { Selectable } from 'kysely';
import { randomUUID } from 'node:crypto';
import type { DB } from '../database/database.types.js';
import {
  ClaimableJobsRepository,
  type Claim,
  type ClaimableTable,
  type ClaimableTableName,
  type StaleJob,
} from './claimable-jobs.repository.js';

/** Queue states in which an entry will still be processed: a queued row with such an entry needs nothing. */
const LIVE_QUEUE_STATES = ['waiting', 'delayed', 'active', 'prioritized', 'waiting-children'];
/** Queue states of an entry no worker holds yet: it will be fetched and claim its row, whatever the row's state. */
const PENDING_QUEUE_STATES = ['waiting', 'delayed', 'prioritized'];

/** How a claim holder keeps its claim alive and learns that it lost it or that a cancel was asked for. */
export interface ClaimWatch {
  /** How often the row is looked at (cancel flag, ownership). */
  checkEveryMs: number;
  /** How often a look also refreshes the heartbeat (a multiple of checkEveryMs; the same value beats on every look). */
  beatEveryMs: number;
  /** The claim is gone (finished, cancelled by status, taken over). */
  onLost?: () => void;
  /** The row asks for a cancel while the claim is still held (ClaimableTable.cancelFlag). */
  onCancel?: () => void;
  /** Once aborted, nothing is looked at any more. */
  signal?: AbortSignal;
}

/** One kind of job as the recovery sweep sees it. */
export interface JobRecovery {
  table: ClaimableTable;
  /** Names the kind in logs: 'agent run', 'indexing job'. */
  what: string;
  queue: Queue;
  staleAfterMs: number;
  /** Adds a fresh queue entry for the row (the suffix makes a new BullMQ job id: the old entry may linger as completed or failed). */
  enqueue(id: string, suffix: string): Promise<void>;
  /** Handles a stale row instead of re-enqueuing it (e.g. one interrupted too often); true when it did. */
  giveUp?(job: StaleJob): Promise<boolean>;
  logger: Logger;
}

/** A job's state changes as the log names them (one line each): see docs/operations.md. */
export type JobTransition = 'queued' | 'started' | 'resumed' | 'finished' | 'failed' | 'released' | 'paused';

/** Why a claim was handed back: a planned stop, an attempt that failed and the queue will retry, or a slice's end (fair shares). */
export type ReleaseReason = 'shutdown' | 'error' | 'slice';

/** The row fields every claimable table has that the transition lines read. */
interface ClaimedRowTimes {
  createdAt: Date | string;
  startedAt: Date | string | null;
  heartbeatAt: Date | string | null;
  attempts: number;
  traceId?: string | null;
}

/**
 * The job machinery of every kind of claimable job (agent runs, indexing jobs), written once: the `<table>` row is
 * what users read and BullMQ only carries "run job X". A worker claims the row with a fencing token, keeps the
 * claim alive with a heartbeat, and writes only while it holds the claim; a recovery sweep re-enqueues rows whose
 * worker died (stale heartbeat) and queued rows whose queue entry is gone.
 *
 * Sweep policy, the same in every APP_ROLE: every process sweeps, at start-up and every interval. A sweep only
 * enqueues and expires; claims are fenced, so several sweepers (api and worker processes) can never run a job twice,
 * and an api-only process that could not enqueue during a queue outage still has its rows picked up.
 */
@Injectable()
export class ClaimableJobsService {
  private readonly jobLog = new Logger('Jobs');

  constructor(private readonly repository: ClaimableJobsRepository) {}

  /**
   * Claims the job and maps its row; undefined when it is not claimable (another live worker holds it, or it is final).
   * Logs `started`, or `resumed` when an earlier claim had started it (a released or taken-over job).
   */
  async claim<T extends ClaimableTableName, R>(
    table: ClaimableTable<T>,
    id: string,
    staleAfterMs: number,
    map: (row: Selectable<DB[T]>) => R,
  ): Promise<{ claim: Claim<T>; job: R } | undefined> {
    const claimed = await this.repository.claim(table, id, staleAfterMs, randomUUID());
    if (!claimed) return undefined;
    return { claim: this.started(table, id, claimed), job: map(claimed.row) };
  }

  /** The claim of a freshly claimed row, logged as `started`, or `resumed` when an earlier claim had started it. */
  private started<T extends ClaimableTableName>(
    table: ClaimableTable<T>,
    id: string,
    claimed: { row: Selectable<DB[T]>; token: string | number },
  ): Claim<T> {
    const row = claimed.row as unknown as ClaimedRowTimes;
    const claim: Claim<T> = { table, id, token: claimed.token, claimedAt: Date.now(), requestId: row.traceId ?? null };
    // The claim sets started_at only when it was empty, to the same now() as the heartbeat.
    const resumed = row.startedAt !== null && row.heartbeatAt !== null && time(row.startedAt) < time(row.heartbeatAt);
    this.transition(claim, resumed ? 'resumed' : 'started', {
      attempt: row.attempts,
      waitedMs: Math.max(0, claim.claimedAt! - time(row.createdAt)),
    });
    return claim;
  }

  /** The `queued` line of a new job, written where the job is created (with the request that created it). */
  queued(
    table: ClaimableTable,
    id: string,
    requestId: string | null | undefined,
    fields: Record<string, unknown> = {},
  ): void {
    this.write('queued', { jobId: id, kind: table.kind, requestId: requestId ?? null, ...fields });
  }

  /** The line of a claim's end: `finished` (succeeded or cancelled), `failed`, or `paused` (waits for a person). */
  ended(
    claim: Claim,
    status: 'succeeded' | 'failed' | 'cancelled' | 'paused',
    fields: Record<string, unknown> = {},
  ): void {
    this.transition(claim, status === 'failed' ? 'failed' : status === 'paused' ? 'paused' : 'finished', {
      status,
      ...fields,
    });
  }

  /**
   * The end of a job no claim here holds: failed by the queue or recovery giving up, or cancelled before a worker took
   * it (or from a worker that is gone). Without a `requestId` field the line names the current request (the cancel).
   */
  endedUnclaimed(
    table: ClaimableTable,
    id: string,
    status: 'failed' | 'cancelled',
    fields: Record<string, unknown> = {},
  ): void {
    this.write(status === 'failed' ? 'failed' : 'finished', { jobId: id, kind: table.kind, status, ...fields });
  }

  private transition(claim: Claim, event: JobTransition, fields: Record<string, unknown>): void {
    const durationMs =
      event === 'started' || event === 'resumed' || claim.claimedAt === undefined
        ? undefined
        : Date.now() - claim.claimedAt;
    this.write(event, {
      jobId: claim.id,
      kind: claim.table.kind,
      requestId: claim.requestId ?? null,
      durationMs,
      ...fields,
    });
  }

  private write(event: JobTransition, fields: Record<string, unknown>): void {
    const line = { msg: `job ${event}`, event, ...fields };
    if (event === 'failed') this.jobLog.warn(line);
    else this.jobLog.log(line);
  }

  /** Claims the job fairest to run next (ClaimableJobsRepository.claimNext) and maps its row; undefined when none waits. */
  async claimNext<T extends ClaimableTableName, R>(
    table: ClaimableTable<T>,
    staleAfterMs: number,
    map: (row: Selectable<DB[T]>) => R,
  ): Promise<{ claim: Claim<T>; job: R } | undefined> {
    const claimed = await this.repository.claimNext(table, staleAfterMs, randomUUID());
    if (!claimed) return undefined;
    const id = (claimed.row as { id: string }).id;
    return { claim: this.started(table, id, claimed), job: map(claimed.row) };
  }

  othersWaiting(table: ClaimableTable, exceptId: string, staleAfterMs: number): Promise<boolean> {
    return this.repository.othersWaiting(table, exceptId, staleAfterMs);
  }

  /** An owner's queued and running jobs of a kind (for the per-user caps). */
  activeOf(table: ClaimableTable, ownerId: string): Promise<number> {
    return this.repository.activeOf(table, ownerId);
  }

  /** Whether the claim is still ours (a look between two units of work). */
  async held(claim: Claim): Promise<boolean> {
    return (await this.repository.state(claim)).held;
  }

  /**
   * Hands the claim back (see ClaimableJobsRepository.release) and logs `released`, with the progress kept when given.
   * Only an attempt that failed (`error`) counts as an interruption; a drain or a slice's end does not.
   */
  async release(claim: Claim, reason: ReleaseReason, fields: Record<string, unknown> = {}): Promise<void> {
    await this.repository.release(claim, reason !== 'error');
    this.transition(claim, 'released', { reason, ...fields });
  }

  /** Logs `released` for a claim the kind handed back with its own statement (an indexing slice that yielded). */
  handedBack(claim: Claim, reason: ReleaseReason, fields: Record<string, unknown> = {}): void {
    this.transition(claim, 'released', { reason, ...fields });
  }

  /**
   * The heartbeat of a claim, the same for every kind: a timer looks at the row every `checkEveryMs` and refreshes
   * the heartbeat every `beatEveryMs`. A database hiccup is retried on the next tick. Returns the stop function.
   */
  watch(claim: Claim, watch: ClaimWatch): () => void {
    const beatEvery = Math.max(1, Math.round(watch.beatEveryMs / watch.checkEveryMs));
    let ticks = 0;
    let busy = false;
    const timer = setInterval(() => {
      if (busy || watch.signal?.aborted) return;
      busy = true;
      ticks += 1;
      const look = ticks % beatEvery === 0 ? this.repository.heartbeat(claim) : this.repository.state(claim);
      look
        .then((state) => {
          if (!state.held) watch.onLost?.();
          else if (state.cancelRequested) watch.onCancel?.();
        })
        .catch(() => undefined)
        .finally(() => (busy = false));
    }, watch.checkEveryMs);
    return () => clearInterval(timer);
  }

  /**
   * Re-enqueues rows whose worker died (stale heartbeat) and queued rows whose queue entry is gone (an enqueue
   * that failed, a queue that lost it); a queued row whose entry is still live is left alone.
   */
  async recover(kind: JobRecovery): Promise<number> {
    let recovered = 0;
    for (const job of await this.repository.stale(kind.table, kind.staleAfterMs)) {
      if (await kind.giveUp?.(job)) continue;
      const entry = await kind.queue.getJob(job.id);
      const queueState = entry ? await entry.getState() : 'missing';
      if (job.status === 'queued' && LIVE_QUEUE_STATES.includes(queueState)) continue;
      // A handed-back job (released claim) whose entry waits again: the next worker claims it without help.
      if (PENDING_QUEUE_STATES.includes(queueState)) continue;
      await kind.enqueue(job.id, `-r${Date.now()}`);
      recovered += 1;
      kind.logger.warn({ msg: `${kind.what} re-enqueued`, jobId: job.id, status: job.status, queueState });
    }
    return recovered;
  }

  /**
   * Starts the recovery sweep of a kind (see the policy above): once now (awaited, so start-up recovers before it
   * reports ready), then every `intervalMs`. A failed sweep is logged and retried on the next tick. Returns the stop function.
   */
  async startSweep(
    what: string,
    recover: () => Promise<unknown>,
    intervalMs: number,
    logger: Logger,
  ): Promise<() => void> {
    const sweep = (level: 'error' | 'warn') =>
      recover().catch((error: unknown) => logger[level]({ msg: `${what} recovery failed`, error: String(error) }));
    await sweep('error');
    const timer = setInterval(() => void sweep('warn'), intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}

function time(value: Date | string): number {
  return (value instanceof Date ? value : new Date(value)).getTime();
}
