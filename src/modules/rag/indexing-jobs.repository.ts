import { Injectable } from '@nestjs/common';
import { sql, type Selectable } from 'kysely';
import { visibleIndexingJob } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import type { IndexingJobs } from '../../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';

export type IndexingJobKind = 'ingest' | 'reindex';
export type IndexingJobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** An indexing job as the services see it. */
export interface IndexingJob {
  id: string;
  projectId: string | null;
  createdBy: string | null;
  kind: IndexingJobKind;
  status: IndexingJobStatus;
  documentIds: string[];
  total: number;
  done: number;
  failed: number;
  errors: { documentId: string; message: string }[];
  /** Claims so far; each run writes only while its own claim is the latest (see IndexingJobRunner). */
  attempts: number;
  /** Claims handed back on purpose, after a slice of work or by a draining worker (not interruptions). */
  slices: number;
  currentDocumentId: string | null;
  currentChunksDone: number;
  currentChunksTotal: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/**
 * The row as `SELECT *` / `RETURNING *` gives it. Only for the claim statement still in IndexingJobRunner
 * (moving to the shared claimable-job repository in src/queue/, issue-17-jobs); map it with {@link toIndexingJob}.
 */
export type IndexingJobRow = Selectable<IndexingJobs>;

export function toIndexingJob(row: IndexingJobRow): IndexingJob {
  return {
    id: row.id,
    projectId: row.projectId,
    createdBy: row.createdBy,
    kind: row.kind as IndexingJobKind,
    status: row.status as IndexingJobStatus,
    documentIds: row.documentIds,
    total: row.total,
    done: row.done,
    failed: row.failed,
    errors: row.errors as IndexingJob['errors'],
    attempts: row.attempts,
    slices: row.slices,
    currentDocumentId: row.currentDocumentId,
    currentChunksDone: row.currentChunksDone,
    currentChunksTotal: row.currentChunksTotal,
    createdAt: new Date(row.createdAt),
    startedAt: row.startedAt ? new Date(row.startedAt) : null,
    finishedAt: row.finishedAt ? new Date(row.finishedAt) : null,
  };
}

export interface NewIndexingJob {
  id: string;
  projectId: string | null;
  createdBy: string | null;
  kind: IndexingJobKind;
  documentIds: string[];
  traceId: string | null;
}

/**
 * `indexing_jobs`: the only place its SQL lives, but for the claim, heartbeat and recovery statements, which
 * move to the shared claimable-job repository (src/queue/). Every write of a running job is fenced by the
 * claim (`attempts`) that made it: a worker whose claim was taken over finds its writes refused and stops.
 */
@Injectable()
export class IndexingJobsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /** Inserts the job `queued`; a second queued/running reindex of a project violates a unique index (the caller maps it). */
  async insert(job: NewIndexingJob): Promise<IndexingJob> {
    const row = await this.db
      .insertInto('indexingJobs')
      .values({
        id: job.id,
        projectId: job.projectId,
        createdBy: job.createdBy,
        kind: job.kind,
        status: 'queued',
        documentIds: job.documentIds,
        total: job.documentIds.length,
        traceId: job.traceId,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toIndexingJob(row);
  }

  /** The job if the actor may see it (visibleIndexingJob), else null: one answer for missing and hidden. */
  async findVisible(actor: Actor, jobId: string): Promise<IndexingJob | null> {
    const row = await this.db
      .selectFrom('indexingJobs as j')
      .selectAll()
      .where('j.id', '=', jobId)
      .where(visibleIndexingJob(actor, 'j'))
      .executeTakeFirst();
    return row ? toIndexingJob(row) : null;
  }

  /** The job's status, or null when it is gone. */
  async statusOf(jobId: string): Promise<IndexingJobStatus | null> {
    const row = await this.db.selectFrom('indexingJobs').select('status').where('id', '=', jobId).executeTakeFirst();
    return row ? (row.status as IndexingJobStatus) : null;
  }

  /** Cancels a queued or running job; null when it was neither. */
  async cancel(jobId: string): Promise<IndexingJob | null> {
    const row = await this.db
      .updateTable('indexingJobs')
      .set({ status: 'cancelled', finishedAt: sql<Date>`now()` })
      .where('id', '=', jobId)
      .where('status', 'in', ['queued', 'running'])
      .returningAll()
      .executeTakeFirst();
    return row ? toIndexingJob(row) : null;
  }

  /** Counts one document done, or failed with its error; false when the claim is no longer this run's. */
  async countDocument(
    jobId: string,
    claim: number,
    outcome: { failure: null } | { failure: { documentId: string; message: string } },
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('indexingJobs')
      .set((eb) =>
        outcome.failure === null
          ? { done: eb('done', '+', 1), heartbeatAt: sql<Date>`now()` }
          : {
              failed: eb('failed', '+', 1),
              heartbeatAt: sql<Date>`now()`,
              errors: sql`errors || jsonb_build_array(jsonb_build_object('documentId', ${outcome.failure.documentId}::text, 'message', ${outcome.failure.message}::text))`,
            },
      )
      .where('id', '=', jobId)
      .where('status', '=', 'running')
      .where('attempts', '=', claim)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** The document under way and its chunks written so far (also a heartbeat). */
  async recordProgress(
    jobId: string,
    claim: number,
    documentId: string,
    chunksDone: number,
    chunksTotal: number,
  ): Promise<void> {
    await this.db
      .updateTable('indexingJobs')
      .set({
        currentDocumentId: documentId,
        currentChunksDone: chunksDone,
        currentChunksTotal: chunksTotal,
        heartbeatAt: sql<Date>`now()`,
      })
      .where('id', '=', jobId)
      .where('status', '=', 'running')
      .where('attempts', '=', claim)
      .execute();
  }

  /**
   * Ends a slice: the claim is handed back (no heartbeat, so the next claim takes the job at once) and counted as a
   * slice, not an interruption; the job stays `running` with its progress. False when the claim was no longer ours.
   */
  async handBack(jobId: string, claim: number): Promise<boolean> {
    const result = await this.db
      .updateTable('indexingJobs')
      .set((eb) => ({ heartbeatAt: null, slices: eb('slices', '+', 1) }))
      .where('id', '=', jobId)
      .where('status', '=', 'running')
      .where('attempts', '=', claim)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Whether an earlier claim of this job already cleared the document for a forced write (a resumed reindex must not
   * start it over). The write records the document as current right after clearing it, before its first batch, so a
   * claim lost between two progress records still resumes after the chunks it committed.
   */
  async wasStarted(jobId: string, _claim: number, documentId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('indexingJobs')
      .select('currentDocumentId')
      .where('id', '=', jobId)
      .executeTakeFirst();
    return row?.currentDocumentId === documentId;
  }

  /** Finishes the run: `failed` when every document failed, else `succeeded`; null when the claim is no longer this run's. */
  async finish(jobId: string, claim: number): Promise<'succeeded' | 'failed' | null> {
    const row = await this.db
      .updateTable('indexingJobs')
      .set({
        status: sql<string>`CASE WHEN failed > 0 AND done = 0 THEN 'failed' ELSE 'succeeded' END`,
        finishedAt: sql<Date>`now()`,
        currentDocumentId: null,
        error: sql<string | null>`CASE WHEN failed > 0 AND done = 0 THEN 'every document failed to index' END`,
      })
      .where('id', '=', jobId)
      .where('status', '=', 'running')
      .where('attempts', '=', claim)
      .returning('status')
      .executeTakeFirst();
    return row ? (row.status as 'succeeded' | 'failed') : null;
  }

  /** Fails a queued or running job; returns its documents and the request that queued it, or null when it had already ended. */
  async fail(
    jobId: string,
    reason: string,
    executor: DbExecutor = this.db,
  ): Promise<{ documentIds: string[]; requestId: string | null } | null> {
    const row = await executor
      .updateTable('indexingJobs')
      .set({ status: 'failed', error: reason.slice(0, 2000), finishedAt: sql<Date>`now()` })
      .where('id', '=', jobId)
      .where('status', 'in', ['queued', 'running'])
      .returning(['documentIds', 'traceId'])
      .executeTakeFirst();
    return row ? { documentIds: row.documentIds, requestId: row.traceId } : null;
  }

  /**
   * Documents unfinished (`uploaded`/`processing`) since longer than `staleAfterMs` that no queued or running
   * job names: uploads whose job row never committed. Oldest first, at most `limit`.
   */
  async orphanDocuments(
    staleAfterMs: number,
    limit: number,
  ): Promise<{ id: string; projectId: string | null; authorId: string }[]> {
    return this.db
      .selectFrom('documents as d')
      .select(['d.id', 'd.projectId as projectId', 'd.authorId as authorId'])
      .where('d.status', 'in', ['uploaded', 'processing'])
      .where('d.updatedAt', '<', sql<Date>`now() - make_interval(secs => ${staleAfterMs / 1000})`)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('indexingJobs as j')
              .select(sql`1`.as('one'))
              .where('j.status', 'in', ['queued', 'running'])
              .where(sql<boolean>`d.id = ANY(j.document_ids)`),
          ),
        ),
      )
      .orderBy('d.updatedAt')
      .limit(limit)
      .execute();
  }
}
