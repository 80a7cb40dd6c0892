import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { APP_CONFIG } from '../../config/app-config.token.js';
import type { AppConfig } from '../../config/app-config.js';
import { chunkText } from './chunking/chunker.js';
import {
  EMBEDDING_PROVIDER,
  toVectorBatch,
  type EmbeddingProvider,
  type VectorBatch,
} from './embeddings/embedding-provider.js';
import { IngestSandbox } from './sandbox/ingest-sandbox.service.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { DocumentIndexStateService } from '../documents/document-index-state.service.js';
import type { TextChunk } from './chunking/chunker.js';
import { DocumentChunksRepository, type DocumentChunk, type NewChunk } from './document-chunks.repository.js';
import { IndexingPacer, REQUEST_LOAD, type RequestLoad } from './indexing-pacer.js';
import { RagSegmentsService } from './rag-segments.service.js';

export interface IndexableDocument {
  id: string;
  title: string;
  sha256: string;
  text: string;
}

export type WriteOutcome =
  | { status: 'indexed'; chunkCount: number }
  | { status: 'unchanged'; chunkCount: number }
  | { status: 'stale' }
  | { status: 'yielded'; written: number };

/**
 * Asked after each committed batch with the chunks that batch stored: true stops the write there (the rest is
 * written by a later call, which resumes after the committed chunks), so a large document yields its worker.
 */
export type ShouldYield = (batchChunks: number) => Promise<boolean>;

/** Called after each committed batch with the chunks stored so far of the document's total. */
export type WriteProgress = (written: number, total: number) => Promise<void>;

/**
 * Most chunks per statement and transaction: what one batch embeds, inserts and posts. The statistics triggers run
 * once per statement and their work grows with a batch's distinct words, which repeat across chunks, so a larger
 * batch costs less per chunk; a document under RAG_INDEX_PACED_MIN_CHUNKS is then one or two statements.
 */
export const INDEX_BATCH_CHUNKS = 256;
/**
 * Batches are sized by how long they block the event loop: on the embedded engine every statement runs
 * on the loop that serves HTTP (PGlite is WebAssembly in this process), and a 64-chunk batch holds it for
 * about a second. The size halves after a batch that blocked the loop longer than this and doubles after
 * one far below it, between MIN_BATCH_CHUNKS and INDEX_BATCH_CHUNKS. On PostgreSQL a statement blocks
 * nothing, so batches grow to the maximum.
 */
const LOOP_BLOCK_TARGET_MS = 60;
const MIN_BATCH_CHUNKS = 2;
/** Chunks removed per statement when a document's old chunks are dropped. */
const DELETE_BATCH_CHUNKS = 500;
/** Texts longer than this are chunked in the ingest sandbox's thread instead of on the event loop. */
const SANDBOX_CHUNKING_MIN_CHARS = 64 * 1024;

/**
 * Turns one document into chunks, embeddings and BM25 postings, in bounded batches: every statement and
 * every transaction covers at most INDEX_BATCH_CHUNKS chunks, however large the document (one INSERT
 * of a large text's chunks and their postings hit the statement timeout). Batches commit in
 * chunk order under a short lock of the document row, each checking that the content is still the one
 * read; a run that was interrupted resumes after the chunks it committed (chunking is deterministic),
 * and a chunk index already present is skipped (ON CONFLICT), so two runs over one document store
 * each chunk once. Idempotent: when the stored chunks already are this content (sha256) in this vector
 * space (embedding key), complete, nothing is recomputed unless `force` is set.
 */
@Injectable()
export class ChunkWriterService {
  /** RAG_INDEX_DUTY_CYCLE: share of wall time a document's batches may work (see writeBatches). */
  private readonly dutyCycle: number;
  /**
   * RAG_INDEX_PACED_MIN_CHUNKS (default 200): documents of at least this many chunks are paced on PostgreSQL by the
   * requests served meanwhile (IndexingPacer): at full speed while none are, else at RAG_INDEX_DUTY_CYCLE in batches
   * of at most RAG_INDEX_PACED_BATCH_CHUNKS, since tsvector, postings and HNSW inserts plus the embedding thread
   * otherwise keep a core of a small machine busy for the whole document while every request competes for the
   * other. Smaller documents always run at full speed. On the embedded engine the BatchSizer already keeps the loop
   * free and PGlite's work is on it, so no pause is added there.
   */
  private readonly pacedMinChunks: number;
  /** RAG_INDEX_PACED_BATCH_CHUNKS: most chunks per batch of a paced document (see pacedMinChunks). */
  private readonly pacedBatchChunks: number;

  constructor(
    @InjectDb() private readonly db: Db,
    private readonly chunks: DocumentChunksRepository,
    private readonly indexState: DocumentIndexStateService,
    @Inject(EMBEDDING_PROVIDER) private readonly embedder: EmbeddingProvider,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly sandbox: IngestSandbox,
    @Inject(REQUEST_LOAD) private readonly requestLoad: RequestLoad,
    private readonly segments: RagSegmentsService,
  ) {
    this.dutyCycle = config.indexing.dutyCycle;
    this.pacedMinChunks = config.indexing.pacedMinChunks;
    this.pacedBatchChunks = Math.min(INDEX_BATCH_CHUNKS, config.indexing.pacedBatchChunks);
  }

  /**
   * The chunk count when the document's stored chunks are complete for this content in this vector
   * space, else null. Complete: the document says it is indexed with exactly these chunks, or a write
   * that stored its total was interrupted after the last batch, and none of them waits in a segment that write did
   * not publish (they would stay out of search).
   */
  async isCurrent(documentId: string, sha256: string): Promise<number | null> {
    const state = await this.chunks.storedState(documentId, sha256, this.embedder.key);
    if (!state || state.count === 0 || !state.allCurrent) return null;
    const complete =
      (state.documentStatus === 'indexed' && state.documentChunkCount === state.count) ||
      state.documentChunksTotal === state.count;
    if (!complete || (await this.segments.hasUnpublished(documentId, this.embedder.dimensions))) return null;
    return state.count;
  }

  /**
   * Takes a document's outdated chunks out of the search index (their postings and the BM25 statistics
   * follow by cascade and triggers): those of earlier content, or all of them when `currentSha256` is
   * null (the title, part of every chunk's indexed text, changed). Called the moment the document
   * changes, so search never serves what the document no longer says, not while it is re-indexed and
   * not if that fails. In batches: no statement grows with the document.
   */
  async dropOutdated(documentId: string, currentSha256: string | null): Promise<void> {
    await this.deleteInBatches(documentId, currentSha256 === null ? {} : { sha256: currentSha256 });
  }

  /**
   * `shouldYield`: asked after each batch; true ends this slice of the write ('yielded', progress stored).
   * `stop`: once aborted, the write stops between two batches (after storing its progress) and throws the signal's reason.
   */
  async write(
    document: IndexableDocument,
    force = false,
    onProgress?: WriteProgress,
    shouldYield?: ShouldYield,
    stop?: AbortSignal,
  ): Promise<WriteOutcome> {
    if (!force) {
      const existing = await this.isCurrent(document.id, document.sha256);
      if (existing !== null) return { status: 'unchanged', chunkCount: existing };
    }
    const plan = await this.planChunks(document);
    const from = await this.clearForWrite(document, force, plan.indexTexts.length);
    if (onProgress) await onProgress(from, plan.indexTexts.length);
    return this.writeBatches(document, plan, from, onProgress, shouldYield, stop);
  }

  /**
   * Writes several documents as write() does each (not forced, no progress, no yield), with the chunks of those
   * that fit in one batch written together: up to INDEX_BATCH_CHUNKS chunks of several documents per statement and
   * transaction, so the statistics triggers count a lexeme the documents share in one upsert, and one lock, insert
   * and commit serve them all. The next group is embedded while one is written. A document too large for one
   * batch, and every document on the embedded engine (whose batches are sized by the event loop), goes through
   * write(); so does a group with a document another transaction holds, or whose content changed, one by one.
   * Outcomes are in the order of `documents`.
   */
  async writeMany(documents: readonly IndexableDocument[]): Promise<WriteOutcome[]> {
    const outcomes: WriteOutcome[] = [];
    const groups: PlannedDocument[][] = [];
    let group: PlannedDocument[] = [];
    let groupChunks = 0;
    // A document without stored chunks has nothing to compare, clear or resume after (an import's usual case).
    const stored = await this.chunks.documentsWithChunks(documents.map((document) => document.id));
    for (const [at, document] of documents.entries()) {
      const existing = stored.has(document.id) ? await this.isCurrent(document.id, document.sha256) : null;
      if (existing !== null) {
        outcomes[at] = { status: 'unchanged', chunkCount: existing };
        continue;
      }
      const plan = await this.planChunks(document);
      const total = plan.indexTexts.length;
      if (!this.config.database.url || total > INDEX_BATCH_CHUNKS || total >= this.pacedMinChunks) {
        outcomes[at] = await this.write(document);
        continue;
      }
      const from = stored.has(document.id) ? await this.clearForWrite(document, false, total) : 0;
      if (from === total) {
        outcomes[at] = { status: 'indexed', chunkCount: total };
        continue;
      }
      if (groupChunks + total - from > INDEX_BATCH_CHUNKS) {
        groups.push(group);
        group = [];
        groupChunks = 0;
      }
      group.push({ at, document, plan, from });
      groupChunks += total - from;
    }
    if (group.length > 0) groups.push(group);
    let next = groups.length > 0 ? this.embedGroup(groups[0]) : undefined;
    for (const [index, current] of groups.entries()) {
      const embedded = await next!;
      next = index + 1 < groups.length ? this.embedGroup(groups[index + 1]) : undefined;
      next?.catch(() => undefined);
      if (await this.insertGroup(current, embedded)) {
        for (const planned of current)
          outcomes[planned.at] = { status: 'indexed', chunkCount: planned.plan.indexTexts.length };
      } else {
        for (const planned of current) outcomes[planned.at] = await this.write(planned.document);
      }
    }
    return outcomes;
  }

  /** A group's chunks (each document's from its resume point) with their vectors, in one embedding call. */
  private async embedGroup(
    group: readonly PlannedDocument[],
  ): Promise<{ rows: DocumentChunk[]; vectors: VectorBatch }> {
    const rows: DocumentChunk[] = group.flatMap(({ document, plan, from }) =>
      chunkRows(plan, from, plan.indexTexts.length).map((row) => ({
        ...row,
        documentId: document.id,
        sha256: document.sha256,
      })),
    );
    return { rows, vectors: await this.vectorBatch(rows.map((row) => row.indexText)) };
  }

  /**
   * A group in one short transaction under its documents' row locks; false (nothing stored) when one of them is
   * held by another transaction, changed or gone.
   */
  private async insertGroup(
    group: readonly PlannedDocument[],
    embedded: { rows: DocumentChunk[]; vectors: VectorBatch },
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const documents = group.map(({ document }) => ({ id: document.id, sha256: document.sha256 }));
      if ((await this.indexState.lockIfContents(documents, trx)).size < group.length) return false;
      const space = { embeddingModel: this.embedder.key, embeddingDims: this.embedder.dimensions };
      await this.chunks.insertDocumentsBatch(space, embedded.rows, embedded.vectors, trx);
      return true;
    });
  }

  /**
   * The document's chunks (cited spans) and the text indexed for each. The title travels with every chunk
   * into the indexed text (not into the cited span): a passage often only makes sense, and only matches,
   * together with the title of its document. A document without text but with a title is one chunk.
   */
  private async planChunks(document: IndexableDocument): Promise<ChunkPlan> {
    const options = {
      targetChars: this.config.embeddings.chunkTargetChars,
      overlapChars: this.config.embeddings.chunkOverlapChars,
    };
    const chunks =
      document.text.length >= SANDBOX_CHUNKING_MIN_CHARS
        ? await this.sandbox.chunk(document.text, options)
        : chunkText(document.text, options);
    const indexTexts = chunks.map((chunk) => `${document.title}\n\n${chunk.text}`);
    if (chunks.length === 0 && document.title.trim()) indexTexts.push(document.title);
    return { chunks, indexTexts };
  }

  /**
   * Removes what does not stay (chunks of other content or another vector space; everything on a forced
   * run) and returns the chunk index to continue at: after the chunks an interrupted run committed.
   */
  private async clearForWrite(document: IndexableDocument, force: boolean, total: number): Promise<number> {
    if (force) {
      await this.deleteInBatches(document.id, {});
      return 0;
    }
    await this.deleteInBatches(document.id, { sha256: document.sha256, embeddingModel: this.embedder.key });
    return this.committedPrefix(document.id, total);
  }

  /** Embeds and stores the chunks from `from` on, batch by batch (see BatchSizer and IndexingPacer), reporting progress. */
  private async writeBatches(
    document: IndexableDocument,
    plan: ChunkPlan,
    from: number,
    onProgress?: WriteProgress,
    shouldYield?: ShouldYield,
    stop?: AbortSignal,
  ): Promise<WriteOutcome> {
    const total = plan.indexTexts.length;
    const postgres = Boolean(this.config.database.url);
    const pacer =
      total >= this.pacedMinChunks && postgres
        ? new IndexingPacer(this.dutyCycle, this.pacedBatchChunks, INDEX_BATCH_CHUNKS, this.requestLoad)
        : undefined;
    // On PostgreSQL a statement blocks no event loop: batches start at their largest (a paced document's at what
    // its pacer allows).
    const sizer = new BatchSizer(INDEX_BATCH_CHUNKS, postgres);
    // At full speed the next batch is embedded (in the sandbox thread) while this one is written (by PostgreSQL):
    // the two use different cores. A paced batch does one thing at a time, leaving a core to requests, and embeds
    // nothing that a drain or a yield after it would throw away (a remote embedder is paid by the call).
    const prefetch = () => postgres && !pacer?.busy();
    const batchSize = () => Math.min(sizer.size, pacer?.batchChunks() ?? INDEX_BATCH_CHUNKS);
    // A large document is written into pending segments, each published (indexed, searchable) when full and after
    // the last batch.
    let segment = await this.segments.segmentFor(document.id, this.embedder.dimensions, from, total);
    let next: Promise<EmbeddedBatch> | undefined;
    let reportedAt = performance.now();
    const writeEnded = this.segments.writing();
    try {
      while (from < total) {
        if (stop?.aborted) {
          // The checkpoint a resumed run reads back (it continues after the committed chunks either way).
          if (onProgress) await onProgress(from, total);
          throw stop.reason;
        }
        const batchFrom = from;
        const batchStarted = performance.now();
        const { rows, vectors, to } = await (next ?? this.embedBatch(plan, from, Math.min(total, from + batchSize())));
        next = to < total && prefetch() ? this.embedBatch(plan, to, Math.min(total, to + batchSize())) : undefined;
        // Not awaited when the write stops early (stale, yield, stop): its failure must not go unhandled.
        next?.catch(() => undefined);
        sizer.startBatch();
        if (await this.insertBatch(document, rows, vectors, segment?.id)) return { status: 'stale' };
        sizer.endBatch();
        from = to;
        if (segment) {
          segment.chunks += rows.length;
          if (to < total && this.segments.isFull(segment)) {
            await this.segments.publish(segment.id, this.embedder.dimensions, !pacer?.busy());
            segment = await this.segments.segmentFor(document.id, this.embedder.dimensions, to, total);
          }
        }
        // The pause is measured from this batch's work alone (a segment's build included), not from a job run in
        // between at the question below.
        const pauseMs = pacer?.pauseAfter(performance.now() - batchStarted) ?? 0;
        let yielding = to < total && shouldYield !== undefined && (await shouldYield(to - batchFrom));
        if (!yielding) {
          // Let the event loop serve requests between batches (the embedded default shares it with HTTP), and
          // pause while requests are served so a large document leaves them a core (see IndexingPacer).
          await new Promise((resolve) => (pauseMs >= 1 ? setTimeout(resolve, pauseMs) : setImmediate(resolve)));
          // Asked again after a pause, so work that arrived during it waits for no further batch.
          if (pauseMs >= 1 && to < total && shouldYield !== undefined) yielding = await shouldYield(0);
        }
        // Progress at most every second: on the embedded engine a batch may be a handful of chunks.
        if (onProgress && (to === total || yielding || performance.now() - reportedAt >= 1000)) {
          await onProgress(to, total);
          reportedAt = performance.now();
        }
        if (yielding) return { status: 'yielded', written: to };
      }
    } finally {
      sizer.stop();
      writeEnded();
    }
    if (segment) {
      const built = performance.now();
      await this.segments.publish(segment.id, this.embedder.dimensions, !pacer?.busy());
      // The build is the write's last work: the pause after it leaves requests their share before the next document.
      const pauseMs = pacer?.pauseAfter(performance.now() - built) ?? 0;
      if (pauseMs >= 1) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    return { status: 'indexed', chunkCount: total };
  }

  /** Chunks `from`..`to` with their vectors, ready to store. */
  private async embedBatch(plan: ChunkPlan, from: number, to: number): Promise<EmbeddedBatch> {
    const rows = chunkRows(plan, from, to);
    const vectors = await this.vectorBatch(rows.map((row) => row.indexText));
    return { rows, vectors, to };
  }

  /**
   * The texts' vectors in the binary form the INSERT sends (toVectorBatch; an all-zero vector has no usable
   * direction and is stored as NULL). An in-process embedder (the offline one) runs in the ingest sandbox's
   * thread: on the event loop its CPU, even yielding every few texts, held each request served during a large
   * ingest behind a slice of embedding work.
   */
  private async vectorBatch(texts: string[]): Promise<VectorBatch> {
    if (this.embedder.threadOptions) return this.sandbox.embed(texts, this.embedder.threadOptions);
    return toVectorBatch(await this.embedder.embed(texts, 'document'), this.embedder.dimensions);
  }

  /**
   * One batch in one short transaction, under a lock of the document row (a concurrent update or delete
   * waits); true when the document's content changed since it was read (nothing is stored then).
   */
  private async insertBatch(
    document: IndexableDocument,
    rows: NewChunk[],
    vectors: VectorBatch,
    segmentId: number | undefined,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await this.indexState.lockIfContent(document.id, document.sha256, trx))) return true;
      const source = {
        documentId: document.id,
        sha256: document.sha256,
        embeddingModel: this.embedder.key,
        embeddingDims: this.embedder.dimensions,
        segmentId,
      };
      await this.chunks.insertBatch(source, rows, vectors, trx);
      return false;
    });
  }

  /**
   * How many leading chunks an interrupted run already committed: batches commit in order, so they are
   * chunk indexes 0..n-1; anything else (a gap, more than the text makes) is rewritten from the start.
   */
  private async committedPrefix(documentId: string, total: number): Promise<number> {
    const { count, next } = await this.chunks.extent(documentId);
    if (count === next && count <= total) return count;
    await this.deleteInBatches(documentId, {});
    return 0;
  }

  /** Deletes a document's chunks but those `keep` describes, DELETE_BATCH_CHUNKS per statement. */
  private async deleteInBatches(documentId: string, keep: { sha256?: string; embeddingModel?: string }): Promise<void> {
    while ((await this.chunks.deleteSome(documentId, keep, DELETE_BATCH_CHUNKS)) === DELETE_BATCH_CHUNKS);
  }

  /** Documents whose chunks are in another vector space than the configured one (provider/model/dimension changed). */
  projectsWithStaleVectors(): Promise<{ projectId: string | null; documentIds: string[] }[]> {
    return this.chunks.documentsOutsideVectorSpace(this.embedder.key);
  }
}

interface EmbeddedBatch {
  rows: NewChunk[];
  vectors: VectorBatch;
  /** One past the batch's last chunk index. */
  to: number;
}

/** Rows for chunks `from`..`to` of a plan, each with a new id, ready to embed and store. */
function chunkRows(plan: ChunkPlan, from: number, to: number): NewChunk[] {
  return plan.indexTexts.slice(from, to).map((indexText, offset) => {
    const chunk: TextChunk | undefined = plan.chunks[from + offset];
    return {
      id: randomUUID(),
      index: from + offset,
      text: chunk?.text ?? '',
      start: chunk?.startOffset ?? 0,
      end: chunk?.endOffset ?? 0,
      indexText,
    };
  });
}

interface PlannedDocument {
  /** Its place in writeMany's input. */
  at: number;
  document: IndexableDocument;
  plan: ChunkPlan;
  /** The chunk index its write continues at. */
  from: number;
}

interface ChunkPlan {
  chunks: TextChunk[];
  indexTexts: string[];
}

/**
 * Sizes batches by how long they block the event loop (see LOOP_BLOCK_TARGET_MS): halves after a batch that
 * blocked it longer than the target, doubles after one far below it, between MIN_BATCH_CHUNKS and its maximum.
 */
class BatchSizer {
  size: number;
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 10 });

  /** `max`: most chunks per batch (INDEX_BATCH_CHUNKS, or less for a paced document); `startAtMax`: no ramp (PostgreSQL). */
  constructor(
    private readonly max: number,
    startAtMax: boolean,
  ) {
    this.size = startAtMax ? max : Math.min(16, max);
    this.loopDelay.enable();
  }

  startBatch(): void {
    this.loopDelay.reset();
  }

  endBatch(): void {
    const blockedMs = this.loopDelay.max / 1e6;
    if (blockedMs > LOOP_BLOCK_TARGET_MS) this.size = Math.max(MIN_BATCH_CHUNKS, Math.floor(this.size / 2));
    else if (blockedMs < LOOP_BLOCK_TARGET_MS / 3) this.size = Math.min(this.max, this.size * 2);
  }

  stop(): void {
    this.loopDelay.disable();
  }
}
