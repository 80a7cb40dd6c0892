import { Inject, Injectable, Logger } from '@nestjs/common';
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

/** Indexing jobs as claimable jobs (src/queue): a claim's number (`attempts`) fences its writes. */
export const INDEXING_JOBS_TABLE: ClaimableTable<'indexing_jobs'> = { table: 'indexing_jobs', kind: 'indexing', fencedBy: 'attempts' };

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
    private readonly drain: WorkerDrain,
  ) {}

  /**
   * Runs the job under its claim. 'released': the worker is draining (WorkerDrain); the job stopped between two batches,
   * its progress is stored and its claim handed back, and the caller puts the queue entry back for the next worker.
   */
  async run(jobId: string): Promise<'finished' | 'not-claimed' | 'released'> {
    const drain = this.drain.signal;
    if (drain.aborted) return 'released'; // fetched as the drain began: not even claimed
    const claimed = await this.claims.claim(INDEXING_JOBS_TABLE, jobId, this.config.indexing.staleAfterMs, (row) => row);
    if (!claimed) return 'not-claimed';
    const { claim: held } = claimed;
    const job = toIndexingJob(claimed.job);
    // Every log line of the job names the request that queued it.
    return RequestContext.run({ requestId: held.requestId ?? jobId }, () => this.runClaimed(jobId, job, held, drain));
  }

  private async runClaimed(jobId: string, job: IndexingJob, held: Claim, drain: AbortSignal): Promise<'finished' | 'released'> {
    const claim = job.attempts; // the fencing token (INDEXING_JOBS_TABLE.fencedBy) every write below names
    const heartbeatEveryMs = Math.min(10_000, Math.floor(this.config.indexing.staleAfterMs / 3));
    const stopHeartbeat = this.claims.watch(held, { checkEveryMs: heartbeatEveryMs, beatEveryMs: heartbeatEveryMs });
    let position = job.done + job.failed;
    try {
      for (; position < job.documentIds.length; position += 1) {
        if (drain.aborted) throw drain.reason;
        if (!(await this.claims.held(held))) return 'finished'; // cancelled, or taken over by another worker
        const documentId = job.documentIds[position];
        const error = await this.indexDocument(documentId, job.kind === 'reindex', jobId, claim, drain);
        const counted = await this.jobs.countDocument(jobId, claim, { failure: error === null ? null : { documentId, message: error } });
        if (!counted) return 'finished'; // cancelled, or taken over by another worker: no longer ours
      }
      const status = await this.jobs.finish(jobId, claim);
      if (status) this.claims.ended(held, status, { documents: job.documentIds.length });
      return 'finished';
    } catch (error) {
      if (error instanceof WorkerDraining) {
        // The chunks committed so far stay; the next claim continues after them (ChunkWriterService).
        await this.claims.release(held, 'shutdown', { documentsDone: position, documents: job.documentIds.length });
        return 'released';
      }
      // Let the queue's retry claim the job at once instead of waiting for the heartbeat to go stale.
      await this.claims.release(held, 'error', { error: error instanceof Error ? error.message : String(error) }).catch(() => undefined);
      throw error;
    } finally {
      stopHeartbeat();
    }
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
    if (failed) this.claims.endedUnclaimed(INDEXING_JOBS_TABLE, jobId, 'failed', { requestId: failed.requestId, error: reason });
  }

  /** Indexes one document; returns an error message for the job's per-document errors, or null. */
  private async indexDocument(documentId: string, force: boolean, jobId: string, claim: number, drain: AbortSignal): Promise<string | null> {
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
      const outcome = await this.chunks.write({ id: document.id, title: document.title, sha256: document.sha256, text }, force, progress, drain);
      if (outcome.status !== 'stale') await this.indexState.markIndexed(documentId, document.sha256, outcome.chunkCount);
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
      return await this.sandbox.extract(kind, bytes);
    } catch (error) {
      if (!(error instanceof TextExtractionError)) throw error;
      this.logger.warn({ msg: 'text extraction failed', documentId: document.id, error: error.message });
      return fail(error.message);
    }
  }
}
