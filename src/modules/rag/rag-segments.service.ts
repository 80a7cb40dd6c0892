import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG } from '../../config/app-config.token.js';
import type { AppConfig } from '../../config/app-config.js';
import { IndexingPacer, REQUEST_LOAD, type RequestLoad } from './indexing-pacer.js';
import { RagSegmentsRepository, type SearchableSegment } from './rag-segments.repository.js';

/** Most chunks one merge transaction moves into the main indexes (fewer while requests are served: IndexingPacer). */
const MERGE_SLICE_CHUNKS = 256;
/** How often a merge waiting for document writes to end looks again. */
const WRITE_WAIT_MS = 250;
/** How long a process reuses its list of searchable segments: a segment another process published shows within it. */
const SEARCHABLE_TTL_MS = 1_000;
/**
 * Searchable segments the merge lets wait while requests are served: below it the merge runs only while the service
 * is quiet, since each merged chunk costs the live-index inserts its segment avoided; above it, paced like a write.
 */
const MERGE_BACKLOG_SEGMENTS = 8;

/** A segment a document's write is filling, with the chunks it holds. */
export interface OpenSegment {
  readonly id: number;
  chunks: number;
}

/**
 * Large documents written as pending segments (RagSegmentsRepository, docs/perf/ingest.md): on PostgreSQL, a document
 * of at least RAG_INDEX_SEGMENT_MIN_CHUNKS chunks is written outside the main HNSW graph and postings index, which
 * cost most of a chunk's write on a large table, into segments of up to RAG_INDEX_SEGMENT_MAX_CHUNKS chunks, each
 * given small indexes of its own once full or written; search reads them beside the main ones, and a background
 * merge (APP_ROLE all and worker) moves the chunks into the main indexes from RAG_INDEX_SEGMENT_MERGE_DELAY_MS after
 * a segment is published, while the service is quiet, then drops the segment. The embedded engine keeps the direct
 * path (its statements run on the event loop, and a merge there would only add work).
 */
@Injectable()
export class RagSegmentsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RagSegmentsService.name);
  private readonly enabled: boolean;
  private cached: { segments: SearchableSegment[]; at: number } | null = null;
  private merging: Promise<void> | null = null;
  private mergeTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Document writes under way in this process: the merge waits for none (see writing). */
  private writes = 0;

  constructor(
    private readonly segments: RagSegmentsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REQUEST_LOAD) private readonly requestLoad: RequestLoad,
  ) {
    this.enabled = Boolean(config.database.url) && config.indexing.segmentMinChunks > 0;
  }

  onApplicationBootstrap(): void {
    // Also with segments turned off: those written before still wait to be merged.
    if (!this.config.database.url || this.config.role === 'api') return;
    // Segments left by a process that stopped before merging them, and by other instances, are picked up here too.
    this.sweepTimer = setInterval(() => this.mergeSoon(0), this.config.indexing.recoveryIntervalMs);
    this.sweepTimer.unref();
    this.mergeSoon(this.config.indexing.segmentMergeDelayMs);
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearInterval(this.sweepTimer);
    clearTimeout(this.mergeTimer);
  }

  /**
   * Marks a document write under way until the returned function is called (once). The merge makes way for writes: each
   * moved chunk costs the live-index inserts a segment's write avoided, on the same cores, so while an import runs
   * its documents are written first and merged when it pauses (search reads the segments meanwhile).
   */
  writing(): () => void {
    this.writes += 1;
    return () => {
      this.writes -= 1;
    };
  }

  /** Whether a document of `chunks` chunks is written as a pending segment. */
  private usesSegment(chunks: number): boolean {
    return this.enabled && chunks >= this.config.indexing.segmentMinChunks;
  }

  /**
   * Whether the document has a segment written but not published (a write stopped between its last batch and that);
   * looked for also with segments turned off, since its chunks are in no main index until it is published.
   */
  async hasUnpublished(documentId: string, dims: number): Promise<boolean> {
    return Boolean(this.config.database.url) && (await this.segments.writingOf(documentId, dims)) !== undefined;
  }

  /**
   * The segment a document's write of `total` chunks goes to, resuming at `resumeAt`: one an interrupted write left,
   * whatever the current setting (its chunks so far are outside the main indexes), else a new one if the document is
   * large enough and there is something left to write, else none (the direct path). A write from the start has no
   * chunks stored, so no segment of its own to continue: it asks nothing (every small document's write takes this path).
   */
  async segmentFor(
    documentId: string,
    dims: number,
    resumeAt: number,
    total: number,
  ): Promise<OpenSegment | undefined> {
    if (!this.config.database.url) return undefined;
    const left = resumeAt > 0 ? await this.segments.writingOf(documentId, dims) : undefined;
    if (left !== undefined) return { id: left, chunks: await this.segments.chunkCount(left) };
    if (resumeAt >= total || !this.usesSegment(total)) return undefined;
    return { id: await this.segments.openFor(documentId, dims), chunks: 0 };
  }

  /** Whether a segment takes no more chunks: it is published and the write goes on in a new one. */
  isFull(segment: OpenSegment): boolean {
    return segment.chunks >= this.config.indexing.segmentMaxChunks;
  }

  /**
   * Builds a written segment's indexes, makes it searchable, and schedules its merge. `fullSpeed`: the write is not
   * paced (nobody is served), so the builds may take both cores.
   */
  async publish(segmentId: number, dims: number, fullSpeed: boolean): Promise<void> {
    await this.segments.publish(segmentId, dims, fullSpeed);
    this.cached = null;
    if (this.config.role !== 'api') this.mergeSoon(this.config.indexing.segmentMergeDelayMs);
  }

  /** The segments search reads beside the main indexes (none on the embedded engine). */
  async searchable(): Promise<SearchableSegment[]> {
    if (!this.config.database.url) return [];
    const now = performance.now();
    if (this.cached && now - this.cached.at < SEARCHABLE_TTL_MS) return this.cached.segments;
    const segments = await this.segments.searchable();
    this.cached = { segments, at: now };
    return segments;
  }

  /** Merges after `delayMs` unless a merge is already scheduled or running (that one takes every segment). */
  mergeSoon(delayMs: number): void {
    if (this.stopped || this.mergeTimer || this.merging) return;
    this.mergeTimer = setTimeout(() => {
      this.mergeTimer = undefined;
      void this.mergeAll().catch((error: unknown) =>
        this.logger.warn({ msg: 'merging pending segments failed; the next sweep retries', error: String(error) }),
      );
    }, delayMs);
    this.mergeTimer.unref();
  }

  /**
   * Merges every searchable segment into the main indexes, oldest first, a slice per transaction, while the service
   * is quiet or too many segments wait (then paced like a large document's write: IndexingPacer), then drops the
   * indexes of segments that are gone. One run per process at a time; instances may run side by side (a slice skips
   * the chunks another one holds).
   */
  mergeAll(): Promise<void> {
    this.merging ??= this.runMerge().finally(() => {
      this.merging = null;
    });
    return this.merging;
  }

  private async runMerge(): Promise<void> {
    const pacer = new IndexingPacer(
      this.config.indexing.dutyCycle,
      Math.min(MERGE_SLICE_CHUNKS, this.config.indexing.pacedBatchChunks),
      MERGE_SLICE_CHUNKS,
      this.requestLoad,
    );
    for (let segment = await this.segments.nextToMerge(); segment && !this.stopped;) {
      while (!this.stopped && (this.writes > 0 || (await this.yieldsToRequests(pacer))))
        await new Promise((resolve) => setTimeout(resolve, WRITE_WAIT_MS));
      if (this.stopped) return;
      const started = performance.now();
      const moved = await this.segments.mergeSlice(segment, pacer.batchChunks());
      if (moved === 0) {
        if (!(await this.segments.dropIfEmpty(segment.id))) return; // another instance holds its last chunks
        this.cached = null;
        segment = await this.segments.nextToMerge();
        continue;
      }
      const pauseMs = pacer.pauseAfter(performance.now() - started);
      await new Promise((resolve) => (pauseMs >= 1 ? setTimeout(resolve, pauseMs) : setImmediate(resolve)));
    }
    if (!this.stopped) await this.segments.dropLeftovers();
  }

  /**
   * Whether the merge waits for the service to be quiet: while requests are served (as this process sees them; a
   * worker that cannot see the API's load merges paced) and no more than MERGE_BACKLOG_SEGMENTS segments wait.
   */
  private async yieldsToRequests(pacer: IndexingPacer): Promise<boolean> {
    if (!this.requestLoad.serving || !pacer.busy()) return false;
    return (await this.searchable()).length <= MERGE_BACKLOG_SEGMENTS;
  }
}
