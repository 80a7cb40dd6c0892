import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { RAG_INDEXING_QUEUE } from './rag.constants.js';
import { DocumentIndexStateService, type DocumentForIndexing } from '../documents/document-index-state.service.js';
import { TextExtractionError } from '../documents/text-extraction-error.js';
import { kindOfMime } from '../documents/document-type.js';
import { ChunkWriterService } from './chunk-writer.service.js';
import { IngestSandbox } from './sandbox/ingest-sandbox.service.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { isTransientDatabaseFailure } from '../../database/pg-errors.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ClaimableJobsService } from '../../queue/claimable-jobs.service.js';
import type { Claim, ClaimableTable } from '../../queue/claimable-jobs.repository.js';
import { IndexingJobsRepository, toIndexingJob, type IndexingJob } from './indexing-jobs.repository.js';
import { WorkerDrain, WorkerDraining } from '../../queue/worker-drain.js';
import { RequestContext } from '../../common/request-context/request-context.js';

/** Claims of a job that were interrupted (its worker died or failed; not a drain) before it is failed with its unfinished documents. */
export const MAX_JOB_CLAIMS = 5;

const YIELDED = Symbol('yielded');

/** How many slices a job run in between may work before it hands its claim back (see Slice). */
const NESTED_TURN_SLICES = 5;

/** Adds a queue entry saying "indexing work is waiting" (the suffix makes a new BullMQ job id). */
export function enqueueIndexing(queue: Queue, id: string, suffix = ''): Promise<unknown> {
  return queue.add(
    'index',
    { indexingJobId: id },
    {
      jobId: `${id}${suffix}`,
      attempts: 5,
      backoff: { type: 'exponential', delay: 2000 },
      removeOnComplete: 1000,
      removeOnFail: 1000,
    },
  );
}

/** Least time between two questions "is another job waiting?" of a job a worker took from the queue. */
const WAITING_CHECK_MS = 50;

/**
 * One slice of an indexing job's work. A job a worker took from the queue (the outer job) asks between its batches
 * (at most every WAITING_CHECK_MS) whether another job is waiting, and if so runs it in between (`interleave`: the
 * fairest one, claimed as any claim is), then goes on where it was, with its text, chunk plan and claim still in hand,
 * so a large document costs nothing to resume and a small one waits for about one batch, not for a slice to end.
 * After a job run in between that used a whole turn (a large one), the outer job works for its own share before it
 * asks again: a turn is NESTED_TURN_SLICES slices, the outer job's share one `sliceMs` (or `sliceChunks` chunks).
 * A job run in between (a nested job) has no such turn: at its turn's end it hands its claim back and the outer job
 * continues.
 */
class Slice {
  private startedAt = performance.now();
  private chunks = 0;
  private askedAt = -Infinity;
  /** How long the outer job works before it asks again: nothing at first, its share after a job that used a turn. */
  private shareMs = 0;

  constructor(
    private readonly sliceMs: number,
    private readonly sliceChunks: number,
    /** Set for a nested job: it hands back at its turn's end. */
    private readonly nested: boolean,
    private readonly othersWaiting: () => Promise<boolean>,
    private readonly interleave: () => Promise<void>,
  ) {}

  /** True when the job must stop here and hand its claim back (nested jobs only). */
  async over(chunksWritten: number): Promise<boolean> {
    this.chunks += chunksWritten;
    const now = performance.now();
    const elapsed = now - this.startedAt;
    // A nested job's turn is longer (NESTED_TURN_SLICES slices or sliceChunks chunks): handing back costs it a reload
    // and a new chunk plan on its next claim, which a turn should outweigh.
    if (this.nested) return elapsed >= NESTED_TURN_SLICES * this.sliceMs || this.chunks >= this.sliceChunks;
    if ((elapsed < this.shareMs && this.chunks < this.sliceChunks) || now - this.askedAt < WAITING_CHECK_MS)
      return false;
    this.askedAt = now;
    if (!(await this.othersWaiting())) return false;
    const interleaved = performance.now();
    await this.interleave();
    // A job that finished quickly leaves the outer job asking again after its next batch; one that used its turn
    // (or more) gives the outer job its slice.
    this.shareMs = Math.min(this.sliceMs, (performance.now() - interleaved) / NESTED_TURN_SLICES);
    this.startedAt = performance.now();
    this.chunks = 0;
    return false;
  }
}

/** Indexing jobs as claimable jobs (src/queue): a claim's number (`attempts`) fences its writes. */
export const INDEXING_JOBS_TABLE: ClaimableTable<'indexingJobs'> = {
  table: 'indexingJobs',
  kind: 'indexing',
  fencedBy: 'attempts',
  owner: 'createdBy',
  project: 'projectId',
  handBacks: 'slices',
};

/**
 * Runs one indexing job. Claiming is an atomic UPDATE (queued, or running with a dead worker's stale
 * heartbeat → running), so a duplicate queue entry never runs a job twice at once. Each claim bumps
 * `attempts`, and every later write of this run names that attempt: a worker that was only slow (its
 * heartbeat went stale and another took the job over) finds its claim gone at its next write and stops,
 * instead of counting documents a second time. Progress is stored after every document and a resumed
 * job continues at `done + failed`; ChunkWriterService skips documents already indexed at their content,
 * so a retried job does no work twice. Cancellation is read between documents.
 *
 * An upload's text is extracted here, not in the request: in the IngestSandbox (worker threads with heap
 * and time limits), so a hostile file fails its document with a message naming the limit it broke
 * instead of blocking or killing the process. A large document is written in batches, and the chunks
 * written so far are visible on the document and on the job while it runs.
 */
@Injectable()
export class IndexingJobRunner {
  private readonly logger = new Logger(IndexingJobRunner.name);

  constructor(
    @InjectDb() private readonly db: Db,
    private readonly jobs: IndexingJobsRepository,
    private readonly claims: ClaimableJobsService,
    private readonly chunks: ChunkWriterService,
    private readonly indexState: DocumentIndexStateService,
    private readonly sandbox: IngestSandbox,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(RAG_INDEXING_QUEUE) private readonly queue: Queue,
    private readonly drain: WorkerDrain,
  ) {}

  /**
   * Runs an indexing job: the given one, or (from the queue, `jobId` undefined) whichever is fairest to run next
   * (ClaimableJobsService.claimNext): a queue entry only says "there is work". Between its batches, if another job
   * is waiting, the fairest one runs in between (see Slice), so a small document waits for about one batch of a large
   * one; after a large job's turn the first works INDEX_SLICE_MS or INDEX_SLICE_CHUNKS before it asks again. A job run in between (`nested`) that does not finish within its slice hands
   * its claim back, still `running` with its progress stored, and a new queue entry announces it; the next claim
   * resumes at the same document and chunk.
   *
   * 'released': the worker is draining (WorkerDrain); the job stopped between two batches, its progress is stored and
   * its claim handed back, and the caller puts the queue entry back for the next worker.
   */
  async run(jobId?: string, nested = false): Promise<'finished' | 'yielded' | 'not-claimed' | 'released'> {
    const drain = this.drain.signal;
    if (drain.aborted) return 'released'; // fetched as the drain began: not even claimed
    const staleAfterMs = this.config.indexing.staleAfterMs;
    const claimed =
      jobId === undefined
        ? await this.claims.claimNext(INDEXING_JOBS_TABLE, staleAfterMs, toIndexingJob)
        : await this.claims.claim(INDEXING_JOBS_TABLE, jobId, staleAfterMs, toIndexingJob);
    if (!claimed) return 'not-claimed';
    const { claim: held, job } = claimed;
    // Every log line of the job names the request that queued it.
    return RequestContext.run({ requestId: held.requestId ?? job.id }, () => this.runClaimed(job, held, drain, nested));
  }

  private async runClaimed(
    job: IndexingJob,
    held: Claim,
    drain: AbortSignal,
    nested: boolean,
  ): Promise<'finished' | 'yielded' | 'released'> {
    const staleAfterMs = this.config.indexing.staleAfterMs;
    const claim = job.attempts; // the fencing token (INDEXING_JOBS_TABLE.fencedBy) every write below names
    const heartbeatEveryMs = Math.min(10_000, Math.floor(staleAfterMs / 3));
    const stopHeartbeat = this.claims.watch(held, { checkEveryMs: heartbeatEveryMs, beatEveryMs: heartbeatEveryMs });
    const slice = new Slice(
      this.config.indexing.sliceMs,
      this.config.indexing.sliceChunks,
      nested,
      () => this.claims.othersWaiting(INDEXING_JOBS_TABLE, job.id, staleAfterMs),
      () => this.interleave(job.id),
    );
    let position = job.done + job.failed;
    try {
      for (; position < job.documentIds.length; position += 1) {
        if (drain.aborted) throw drain.reason;
        if (!(await this.claims.held(held))) return 'finished'; // cancelled, or taken over by another worker
        if (position > job.done + job.failed && (await slice.over(0))) return await this.handBack(held, job, position);
        const documentId = job.documentIds[position];
        const error = await this.indexDocument(documentId, job.kind === 'reindex', job.id, claim, slice, drain);
        if (error === YIELDED) return await this.handBack(held, job, position);
        const counted = await this.jobs.countDocument(job.id, claim, {
          failure: error === null ? null : { documentId, message: error },
        });
        if (!counted) return 'finished'; // cancelled, or taken over by another worker: no longer ours
      }
      const status = await this.jobs.finish(job.id, claim);
      if (status) this.claims.ended(held, status, { documents: job.documentIds.length });
      return 'finished';
    } catch (error) {
      if (error instanceof WorkerDraining) {
        // The chunks committed so far stay; the next claim continues after them (ChunkWriterService).
        await this.claims.release(held, 'shutdown', { documentsDone: position, documents: job.documentIds.length });
        // A job run in between has no queue entry of its own in hand: announce it for the next worker.
        if (nested) await this.announce(job.id, `-d${claim}`);
        return 'released';
      }
      const message = error instanceof Error ? error.message : String(error);
      // Interruptions, not claims handed back on purpose (slices, drains), count towards giving up on a job.
      if (job.attempts - job.slices >= MAX_JOB_CLAIMS) {
        await this.markFailed(job.id, message);
        return 'finished';
      }
      // Let the next claim take the job at once instead of waiting for the heartbeat to go stale; the queue retries the entry.
      await this.claims.release(held, 'error', { error: message }).catch(() => undefined);
      throw error;
    } finally {
      stopHeartbeat();
    }
  }

  /** Runs the fairest waiting job for one slice in the middle of job `outerId`; its failure is its own, not the outer job's. */
  private async interleave(outerId: string): Promise<void> {
    try {
      await this.run(undefined, true);
    } catch (error) {
      this.logger.warn({
        msg: 'a job run in between failed; it will be retried',
        outerJobId: outerId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /** Ends this slice: the claim goes back (the job stays `running`, claimable at once) and a queue entry announces it. */
  private async handBack(held: Claim, job: IndexingJob, position: number): Promise<'yielded' | 'finished'> {
    const claim = job.attempts;
    if (!(await this.jobs.handBack(job.id, claim))) return 'finished';
    this.claims.handedBack(held, 'slice', { documentsDone: position, documents: job.documentIds.length });
    await this.announce(job.id, `-s${claim}`);
    return 'yielded';
  }

  /** A queue entry saying the job waits; if the queue cannot take it, the recovery sweep enqueues one. */
  private async announce(jobId: string, suffix: string): Promise<void> {
    await enqueueIndexing(this.queue, jobId, suffix).catch((error: unknown) =>
      this.logger.warn({
        msg: 'could not enqueue the job handed back; the recovery sweep will',
        jobId,
        error: String(error),
      }),
    );
  }

  /**
   * Marks the job failed after the queue (or recovery) gave up on it, and with it the documents it left
   * unfinished: an upload answered 201 ends `indexed` or `failed`, never `uploaded` for good.
   */
  async markFailed(jobId: string, reason: string): Promise<void> {
    const failed = await this.db.transaction().execute(async (trx) => {
      const job = await this.jobs.fail(jobId, reason, trx);
      if (job === null) return null;
      await this.indexState.failUnfinished(job.documentIds, `indexing failed: ${reason}`, trx);
      return job;
    });
    if (failed)
      this.claims.endedUnclaimed(INDEXING_JOBS_TABLE, jobId, 'failed', { requestId: failed.requestId, error: reason });
  }

  /** Indexes one document; returns an error message for the job's per-document errors, or null. */
  private async indexDocument(
    documentId: string,
    force: boolean,
    jobId: string,
    claim: number,
    slice: Slice,
    drain: AbortSignal,
  ): Promise<string | null | typeof YIELDED> {
    const document = await this.indexState.load(documentId);
    if (!document) return null; // deleted meanwhile: nothing to index, nothing left to find
    const progress = async (written: number, total: number): Promise<void> => {
      await this.indexState.markProgress(documentId, document.sha256, written, total);
      await this.jobs.recordProgress(jobId, claim, documentId, written, total);
    };
    let text = document.text;
    if (text === null) {
      const extracted = await this.extract(document);
      if (typeof extracted !== 'string') return extracted.failure;
      text = extracted;
      // Content replaced while it was extracted: the job for the new content indexes that.
      if (!(await this.indexState.storeText(documentId, document.sha256, text))) return null;
    }
    const existing = force ? null : await this.chunks.isCurrent(documentId, document.sha256);
    if (existing !== null) {
      if (document.status !== 'indexed') await this.indexState.markIndexed(documentId, document.sha256, existing);
      return null;
    }
    await this.indexState.markProcessing(documentId, document.sha256);
    try {
      // A resumed slice of a forced reindex must not start the document over: force only on its first write.
      const forced = force && !(await this.jobs.wasStarted(jobId, claim, documentId));
      const outcome = await this.chunks.write(
        { id: document.id, title: document.title, sha256: document.sha256, text },
        forced,
        progress,
        (chunks) => slice.over(chunks),
        drain,
      );
      if (outcome.status === 'yielded') return YIELDED;
      if (outcome.status !== 'stale')
        await this.indexState.markIndexed(documentId, document.sha256, outcome.chunkCount);
      return null;
    } catch (error) {
      if (error instanceof WorkerDraining) throw error;
      const message = error instanceof Error ? error.message : String(error);
      if (isTransientDatabaseFailure(error)) {
        // Not the document's fault (a statement timeout under load, a deadlock, the database restarting): the job
        // fails this attempt and the queue runs it again from this document (attempts and backoff: indexing-jobs
        // service), writing only what is missing. If every attempt fails, the job and this document end failed.
        this.logger.warn({ msg: 'document indexing interrupted; the job will retry', documentId, error: message });
        throw error;
      }
      this.logger.warn({ msg: 'document indexing failed', documentId, error: message });
      await this.indexState.markFailed(documentId, document.sha256, message);
      return message;
    }
  }

  /** The document's text from its stored bytes, in the sandbox; a file it cannot read fails the document. */
  private async extract(document: DocumentForIndexing): Promise<string | { failure: string }> {
    const fail = async (message: string) => {
      await this.indexState.markFailed(document.id, document.sha256, message);
      return { failure: message };
    };
    const kind = kindOfMime(document.mimeType);
    const bytes = await this.indexState.loadBytes(document.id);
    if (!kind || !bytes) return fail('no text could be extracted from this document');
    await this.indexState.markProcessing(document.id, document.sha256);
    try {
      return await this.sandbox.extract(kind, bytes, true);
    } catch (error) {
      if (!(error instanceof TextExtractionError)) throw error;
      this.logger.warn({ msg: 'text extraction failed', documentId: document.id, error: error.message });
      return fail(error.message);
    }
  }
}
