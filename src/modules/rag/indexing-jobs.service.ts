import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import type { Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { isUniqueViolation } from '../../database/pg-errors.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { DocumentEventsService, type DocumentEvent } from '../documents/document-events.service.js';
import { DocumentsService } from '../documents/documents.service.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ChunkWriterService } from './chunk-writer.service.js';
import { enqueueIndexing, INDEXING_JOBS_TABLE, IndexingJobRunner, MAX_JOB_CLAIMS } from './indexing-job.runner.js';
import {
  IndexingJobsRepository,
  type IndexingJob,
  type IndexingJobKind,
  type IndexingJobStatus,
} from './indexing-jobs.repository.js';
import { RAG_INDEXING_QUEUE } from './rag.constants.js';
import { ClaimableJobsService } from '../../queue/claimable-jobs.service.js';
import { isUuid } from '../../common/validation/uuid.js';
import type { ApiArea } from '../../common/http/api-area.js';
import { rateLimited } from '../../common/rate-limit/rate-limiter.service.js';

/** An authorised indexing request: which documents a job will index. */
export interface IndexingPlan {
  kind: IndexingJobKind;
  projectId: string;
  ids: string[];
}

/** Retry-After of a per-user cap: about one slice of another job's work. */
const CAP_RETRY_AFTER_SECONDS = 5;

export type { IndexingJobKind, IndexingJobStatus } from './indexing-jobs.repository.js';

export interface IndexingJobView {
  jobId: string;
  projectId: string | null;
  kind: IndexingJobKind;
  status: IndexingJobStatus;
  /** `current`: the document being indexed and its chunks written so far (null when none is under way). */
  progress: {
    total: number;
    done: number;
    failed: number;
    current: { documentId: string; chunksDone: number; chunksTotal: number } | null;
  };
  errors: { documentId: string; message: string }[];
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/**
 * Indexing jobs: the `indexing_jobs` row is what users read; BullMQ only carries "run job X". Creating a
 * job inserts the row and enqueues it; a sweep (at start-up and every RAG_RECOVERY_INTERVAL_MS, 30 s) re-enqueues rows that are
 * queued or running with a dead worker, so nothing stays `running` for ever.
 */
@Injectable()
export class IndexingJobsService implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(IndexingJobsService.name);
  private unsubscribe?: () => void;
  private stopSweep?: () => void;

  constructor(
    private readonly jobs: IndexingJobsRepository,
    @InjectQueue(RAG_INDEXING_QUEUE) private readonly queue: Queue,
    private readonly projects: ProjectsService,
    private readonly events: DocumentEventsService,
    private readonly documents: DocumentsService,
    private readonly chunks: ChunkWriterService,
    private readonly runner: IndexingJobRunner,
    private readonly claims: ClaimableJobsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.events.subscribe((event) => this.onDocumentEvent(event));
    this.events.setAdmission((userId, area) => this.assertCapacity(userId, area));
  }

  /**
   * The per-user cap on queued work (INDEX_MAX_QUEUED_PER_USER): a user with that many indexing jobs queued or
   * running gets 429 RATE_LIMITED for more (uploads, new text, ingest, reindex) until some finish.
   */
  async assertCapacity(userId: string, area: ApiArea = 'backend'): Promise<void> {
    const cap = this.config.indexing.maxQueuedPerUser;
    if ((await this.claims.activeOf(INDEXING_JOBS_TABLE, userId)) < cap) return;
    throw rateLimited(
      area,
      `You have ${cap} indexing jobs queued or running (INDEX_MAX_QUEUED_PER_USER); retry when some have finished`,
      CAP_RETRY_AFTER_SECONDS,
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.scheduleStaleVectorReindex().catch((error: unknown) =>
      this.logger.error({ msg: 'could not check for vectors of another embedding model', error: String(error) }),
    );
    this.stopSweep = await this.claims.startSweep(
      'indexing job',
      () => this.recover(),
      this.config.indexing.recoveryIntervalMs,
      this.logger,
    );
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
    this.events.setAdmission(undefined);
    this.stopSweep?.();
  }

  /**
   * What an ingest or reindex would index, after the caller's checks: the editor role in the project, and
   * only documents the caller may see there (API.md: any other id is 404 with the offending ids, whether it
   * exists or not). Without ids: ingest = visible documents not indexed at their current content; reindex =
   * every visible document. Another member's private document is never touched nor counted.
   */
  async plan(actor: Actor, kind: IndexingJobKind, projectId: string, documentIds?: string[]): Promise<IndexingPlan> {
    await this.projects.requireRole(actor, projectId, 'editor');
    await this.assertCapacity(actor.userId);
    if (documentIds && documentIds.length > 0) {
      const unique = [...new Set(documentIds)];
      const found = new Set(await this.documents.visibleIdsInProject(actor, projectId, { ids: unique }));
      const missing = unique.filter((id) => !found.has(id));
      if (missing.length > 0) {
        throw new AppException(
          ErrorCode.NotFound,
          `No document you may see in this project has ${missing.length > 1 ? 'these ids' : 'this id'}: ${missing.slice(0, 20).join(', ')}`,
          missing.map((id) => ({ field: 'documentIds', value: id, message: 'not found' })),
        );
      }
      return { kind, projectId, ids: unique };
    }
    return {
      kind,
      projectId,
      ids: await this.documents.visibleIdsInProject(actor, projectId, { needingIndex: kind === 'ingest' }),
    };
  }

  async start(
    actor: Actor,
    plan: IndexingPlan,
    traceId?: string,
  ): Promise<IndexingJobView & { documentCount: number }> {
    const row = await this.insert(plan.kind, plan.projectId, actor.userId, plan.ids, traceId);
    return { ...toView(row), documentCount: plan.ids.length };
  }

  async get(actor: Actor, jobId: string): Promise<IndexingJobView> {
    return toView(await this.findVisible(actor, jobId));
  }

  async cancel(actor: Actor, jobId: string): Promise<IndexingJobView> {
    const job = await this.findVisible(actor, jobId);
    if (job.projectId) await this.projects.requireRole(actor, job.projectId, 'editor');
    const cancelled = await this.jobs.cancel(jobId);
    if (!cancelled)
      throw new AppException(ErrorCode.StateConflict, `The job is already ${job.status}`, { status: job.status });
    this.claims.endedUnclaimed(INDEXING_JOBS_TABLE, jobId, 'cancelled', { was: job.status });
    // A queued job leaves the queue at once; a running one stops at its next document.
    await this.queue.remove(jobId).catch(() => undefined);
    return toView(cancelled);
  }

  private async findVisible(actor: Actor, jobId: string): Promise<IndexingJob> {
    const job = isUuid(jobId) ? await this.jobs.findVisible(actor, jobId) : null;
    if (!job) throw AppException.notFound('Indexing job');
    return job;
  }

  private async insert(
    kind: IndexingJobKind,
    projectId: string | null,
    createdBy: string | null,
    ids: string[],
    traceId?: string,
  ): Promise<IndexingJob> {
    const id = randomUUID();
    let job: IndexingJob;
    try {
      job = await this.jobs.insert({ id, projectId, createdBy, kind, documentIds: ids, traceId: traceId ?? null });
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new AppException(ErrorCode.StateConflict, 'A reindex of this project is already queued or running', {
          projectId,
        });
      }
      throw error;
    }
    this.claims.queued(INDEXING_JOBS_TABLE, id, traceId, { indexingKind: kind, documents: ids.length });
    // Even a job with nothing to do goes through the queue: every job starts `queued` (API.md), and the
    // worker finishes an empty one at once.
    await this.enqueue(id);
    return job;
  }

  private async enqueue(id: string, suffix = ''): Promise<void> {
    await enqueueIndexing(this.queue, id, suffix);
  }

  /** A document appeared or changed: index it in the background; what is outdated leaves the index first. */
  private async onDocumentEvent(event: DocumentEvent): Promise<void> {
    if (event.type === 'deleted') return; // chunks leave with the document (ON DELETE CASCADE)
    if (event.type === 'content-changed') await this.chunks.dropOutdated(event.documentId, event.sha256);
    if (event.type === 'retitled') await this.chunks.dropOutdated(event.documentId, null);
    await this.insert('ingest', event.projectId, event.authorId, [event.documentId], event.traceId);
  }

  /**
   * Re-enqueues jobs whose worker died (stale heartbeat) or whose queue entry is gone; fails a job whose
   * worker died MAX_JOB_CLAIMS times (a file that kills its process must not do so for ever); and gives
   * a job to every document left unfinished without a live one (see recoverOrphanDocuments).
   */
  async recover(): Promise<number> {
    return (await this.recoverJobs()) + (await this.recoverOrphanDocuments());
  }

  private recoverJobs(): Promise<number> {
    return this.claims.recover({
      table: INDEXING_JOBS_TABLE,
      what: 'indexing job',
      queue: this.queue,
      staleAfterMs: this.config.indexing.staleAfterMs,
      enqueue: (id, suffix) => this.enqueue(id, suffix),
      giveUp: async (job) => {
        if (job.status !== 'running' || job.attempts < MAX_JOB_CLAIMS) return false;
        await this.runner.markFailed(
          job.id,
          `the indexing was interrupted ${job.attempts} times (its worker stopped each time)`,
        );
        this.logger.error({
          msg: 'indexing job given up after repeated interruptions',
          jobId: job.id,
          attempts: job.attempts,
        });
        return true;
      },
      logger: this.logger,
    });
  }

  /**
   * The upload's row commits before its job's: a process killed between the two (or an enqueue that
   * failed) leaves a document `uploaded` with no job. Documents unfinished for longer than the stale
   * bound with no queued or running job that names them get an ingest job here, so every upload that
   * was answered 201 reaches `indexed` or `failed` within about RAG_STALE_AFTER_MS + RAG_RECOVERY_INTERVAL_MS.
   */
  private async recoverOrphanDocuments(): Promise<number> {
    const rows = await this.jobs.orphanDocuments(this.config.indexing.staleAfterMs, 200);
    const byOwner = new Map<string, { projectId: string | null; authorId: string; ids: string[] }>();
    for (const row of rows) {
      const key = `${row.projectId}:${row.authorId}`;
      const group = byOwner.get(key) ?? { projectId: row.projectId, authorId: row.authorId, ids: [] };
      group.ids.push(row.id);
      byOwner.set(key, group);
    }
    for (const group of byOwner.values()) {
      const job = await this.insert('ingest', group.projectId, group.authorId, group.ids);
      this.logger.warn({
        msg: 'documents without an indexing job recovered',
        jobId: job.id,
        documents: group.ids.length,
      });
    }
    return rows.length;
  }

  /** After a provider/model/dimension change: one reindex per project holding vectors of another space. */
  private async scheduleStaleVectorReindex(): Promise<void> {
    for (const { projectId, documentIds } of await this.chunks.projectsWithStaleVectors()) {
      try {
        const row = await this.insert('reindex', projectId, null, documentIds);
        this.logger.warn({
          msg: 'embedding model changed; reindex scheduled',
          projectId,
          jobId: row.id,
          documents: documentIds.length,
        });
      } catch (error) {
        if (!(error instanceof AppException)) throw error; // a reindex of that project is already under way
      }
    }
  }
}

export function toView(job: IndexingJob): IndexingJobView {
  return {
    jobId: job.id,
    projectId: job.projectId,
    kind: job.kind,
    status: job.status,
    progress: {
      total: job.total,
      done: job.done,
      failed: job.failed,
      current:
        job.status === 'running' && job.currentDocumentId
          ? {
              documentId: job.currentDocumentId,
              chunksDone: job.currentChunksDone,
              chunksTotal: job.currentChunksTotal,
            }
          : null,
    },
    errors: job.errors,
    createdAt: job.createdAt.toISOString(),
    startedAt: job.startedAt ? job.startedAt.toISOString() : null,
    finishedAt: job.finishedAt ? job.finishedAt.toISOString() : null,
  };
}
