import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DocumentIndexStateService, type DocumentForIndexing } from '../documents/document-index-state.service.js';
import { TextExtractionError } from '../documents/document-text-extractor.js';
import { kindOfMime } from '../documents/document-type.js';
import { ChunkWriterService } from './chunk-writer.service.js';
import { IngestSandbox } from './sandbox/ingest-sandbox.service.js';
import { returningRows } from '../../database/returning-rows.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ClaimableJobsService } from '../../queue/claimable-jobs.service.js';
import type { ClaimableTable } from '../../queue/claimable-jobs.repository.js';

/** Indexing jobs as claimable jobs (src/queue): a claim's number (`attempts`) fences its writes. */
export const INDEXING_JOBS_TABLE: ClaimableTable<'indexing_jobs'> = { table: 'indexing_jobs', fencedBy: 'attempts' };

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
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly claims: ClaimableJobsService,
    private readonly chunks: ChunkWriterService,
    private readonly indexState: DocumentIndexStateService,
    private readonly sandbox: IngestSandbox,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async run(jobId: string): Promise<'finished' | 'not-claimed'> {
    const claimed = await this.claims.claim(INDEXING_JOBS_TABLE, jobId, this.config.indexing.staleAfterMs, (row) => row);
    if (!claimed) return 'not-claimed';
    const { job, claim: held } = claimed;
    const claim = job.attempts; // the fencing token (INDEXING_JOBS_TABLE.fencedBy) every write below names
    const heartbeatEveryMs = Math.min(10_000, Math.floor(this.config.indexing.staleAfterMs / 3));
    const stopHeartbeat = this.claims.watch(held, { checkEveryMs: heartbeatEveryMs, beatEveryMs: heartbeatEveryMs });
    try {
      for (let position = job.done + job.failed; position < job.document_ids.length; position += 1) {
        if (!(await this.claims.held(held))) return 'finished'; // cancelled, or taken over by another worker
        const documentId = job.document_ids[position];
        const error = await this.indexDocument(documentId, job.kind === 'reindex', jobId, claim);
        const counted = returningRows(
          await this.dataSource.query(
            error === null
              ? `UPDATE indexing_jobs SET done = done + 1, heartbeat_at = now() WHERE id = $1 AND status = 'running' AND attempts = $2 RETURNING id`
              : `UPDATE indexing_jobs SET failed = failed + 1, heartbeat_at = now(), errors = errors || jsonb_build_array(jsonb_build_object('documentId', $3::text, 'message', $4::text))
                 WHERE id = $1 AND status = 'running' AND attempts = $2 RETURNING id`,
            error === null ? [jobId, claim] : [jobId, claim, documentId, error],
          ),
        );
        if (counted.length === 0) return 'finished'; // cancelled, or taken over by another worker: no longer ours
      }
      await this.dataSource.query(
        `UPDATE indexing_jobs SET status = CASE WHEN failed > 0 AND done = 0 THEN 'failed' ELSE 'succeeded' END,
                finished_at = now(), current_document_id = NULL, error = CASE WHEN failed > 0 AND done = 0 THEN 'every document failed to index' END
         WHERE id = $1 AND status = 'running' AND attempts = $2`,
        [jobId, claim],
      );
      return 'finished';
    } catch (error) {
      // Let the queue's retry claim the job at once instead of waiting for the heartbeat to go stale.
      await this.claims.release(held).catch(() => undefined);
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
    await this.dataSource.transaction(async (manager) => {
      const failed = returningRows<{ document_ids: string[] }>(
        await manager.query(
          `UPDATE indexing_jobs SET status = 'failed', error = $2, finished_at = now() WHERE id = $1 AND status IN ('queued', 'running') RETURNING document_ids`,
          [jobId, reason.slice(0, 2000)],
        ),
      );
      if (failed.length === 0) return;
      await manager.query(
        `UPDATE documents SET status = 'failed', error = $2, chunks_total = NULL, updated_at = now()
         WHERE id = ANY($1::uuid[]) AND status IN ('uploaded', 'processing')`,
        [failed[0].document_ids, `indexing failed: ${reason}`.slice(0, 2000)],
      );
    });
  }

  /** Indexes one document; returns an error message for the job's per-document errors, or null. */
  private async indexDocument(documentId: string, force: boolean, jobId: string, claim: number): Promise<string | null> {
    const document = await this.indexState.load(documentId);
    if (!document) return null; // deleted meanwhile: nothing to index, nothing left to find
    const progress = async (written: number, total: number): Promise<void> => {
      await this.indexState.markProgress(documentId, document.sha256, written, total);
      await this.dataSource.query(
        `UPDATE indexing_jobs SET current_document_id = $3, current_chunks_done = $4, current_chunks_total = $5, heartbeat_at = now()
         WHERE id = $1 AND status = 'running' AND attempts = $2`,
        [jobId, claim, documentId, written, total],
      );
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
      const outcome = await this.chunks.write({ id: document.id, title: document.title, sha256: document.sha256, text }, force, progress);
      if (outcome.status !== 'stale') await this.indexState.markIndexed(documentId, document.sha256, outcome.chunkCount);
      return null;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
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
