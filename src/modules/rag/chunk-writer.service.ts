import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { APP_CONFIG } from '../../config/app-config.token.js';
import type { AppConfig } from '../../config/app-config.js';
import { chunkText } from './chunking/chunker.js';
import { EMBEDDING_PROVIDER, toVectorLiteral, type EmbeddingProvider } from './embeddings/embedding-provider.js';
import { TEXT_SEARCH_CONFIG, TSV_TF_SQL } from './rag.constants.js';
import { IngestSandbox } from './sandbox/ingest-sandbox.service.js';
import { returningRows } from '../../database/returning-rows.js';

export interface IndexableDocument {
  id: string;
  title: string;
  sha256: string;
  text: string;
}

export type WriteOutcome = { status: 'indexed'; chunkCount: number } | { status: 'unchanged'; chunkCount: number } | { status: 'stale' };

/** Called after each committed batch with the chunks stored so far of the document's total. */
export type WriteProgress = (written: number, total: number) => Promise<void>;

/** Most chunks per statement and transaction: what one batch embeds, inserts and posts. */
export const INDEX_BATCH_CHUNKS = 64;
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
 * of a 13.5 MB text's 15,000 chunks and their postings hit the statement timeout). Batches commit in
 * chunk order under a short lock of the document row, each checking that the content is still the one
 * read; a run that was interrupted resumes after the chunks it committed (chunking is deterministic),
 * and a chunk index already present is skipped (ON CONFLICT), so two runs over one document store
 * each chunk once. Idempotent: when the stored chunks already are this content (sha256) in this vector
 * space (embedding key), complete, nothing is recomputed unless `force` is set.
 */
@Injectable()
export class ChunkWriterService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(EMBEDDING_PROVIDER) private readonly embedder: EmbeddingProvider,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly sandbox: IngestSandbox,
  ) {}

  /**
   * The chunk count when the document's stored chunks are complete for this content in this vector
   * space, else null. Complete: the document says it is indexed with exactly these chunks, or a write
   * that stored its total was interrupted after the last batch.
   */
  async isCurrent(documentId: string, sha256: string): Promise<number | null> {
    const [row] = await this.dataSource.query(
      `SELECT c.n, c.current, d.status, d.chunk_count, d.chunks_total
       FROM (SELECT count(*)::int AS n, bool_and(content_sha256 = $2 AND embedding_model = $3) AS current FROM document_chunks WHERE document_id = $1) c,
            documents d
       WHERE d.id = $1`,
      [documentId, sha256, this.embedder.key],
    );
    if (!row || row.n === 0 || !row.current) return null;
    const complete = (row.status === 'indexed' && row.chunk_count === row.n) || row.chunks_total === row.n;
    return complete ? row.n : null;
  }

  /**
   * Takes a document's outdated chunks out of the search index (their postings and the BM25 statistics
   * follow by cascade and triggers): those of earlier content, or all of them when `currentSha256` is
   * null (the title, part of every chunk's indexed text, changed). Called the moment the document
   * changes, so search never serves what the document no longer says, not while it is re-indexed and
   * not if that fails. In batches: no statement grows with the document.
   */
  async dropOutdated(documentId: string, currentSha256: string | null): Promise<void> {
    await this.deleteInBatches(`document_id = $1 AND ($2::text IS NULL OR content_sha256 <> $2)`, [documentId, currentSha256]);
  }

  async write(document: IndexableDocument, force = false, onProgress?: WriteProgress): Promise<WriteOutcome> {
    if (!force) {
      const existing = await this.isCurrent(document.id, document.sha256);
      if (existing !== null) return { status: 'unchanged', chunkCount: existing };
    }
    const options = { targetChars: this.config.embeddings.chunkTargetChars, overlapChars: this.config.embeddings.chunkOverlapChars };
    const chunks = document.text.length >= SANDBOX_CHUNKING_MIN_CHARS ? await this.sandbox.chunk(document.text, options) : chunkText(document.text, options);
    // The title travels with every chunk into the indexed text (not into the cited span): a passage
    // often only makes sense, and only matches, together with the title of its document.
    const indexTexts = chunks.map((chunk) => `${document.title}\n\n${chunk.text}`);
    if (chunks.length === 0 && document.title.trim()) indexTexts.push(document.title);
    const total = indexTexts.length;

    // What stays: chunks of this content in this vector space (a forced run rewrites even those).
    if (force) await this.deleteInBatches(`document_id = $1`, [document.id]);
    else await this.deleteInBatches(`document_id = $1 AND (content_sha256 <> $2 OR embedding_model <> $3)`, [document.id, document.sha256, this.embedder.key]);
    let from = force ? 0 : await this.committedPrefix(document.id, total);
    if (onProgress) await onProgress(from, total);

    let batchSize = 16;
    let reportedAt = performance.now();
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    try {
      while (from < total) {
        const to = Math.min(total, from + batchSize);
        const batchTexts = indexTexts.slice(from, to);
        const vectors = await this.embedder.embed(batchTexts, 'document');
        const rows = batchTexts.map((indexText, offset) => {
          const i = from + offset;
          return {
            id: randomUUID(),
            index: i,
            text: chunks[i]?.text ?? '',
            start: chunks[i]?.startOffset ?? 0,
            end: chunks[i]?.endOffset ?? 0,
            indexText,
            vector: vectors[offset].some((value) => value !== 0) ? toVectorLiteral(vectors[offset]) : null,
          };
        });
        loopDelay.reset();
        const stale = await this.insertBatch(document, rows);
        if (stale) return { status: 'stale' };
        const blockedMs = loopDelay.max / 1e6;
        if (blockedMs > LOOP_BLOCK_TARGET_MS) batchSize = Math.max(MIN_BATCH_CHUNKS, Math.floor(batchSize / 2));
        else if (blockedMs < LOOP_BLOCK_TARGET_MS / 3) batchSize = Math.min(INDEX_BATCH_CHUNKS, batchSize * 2);
        from = to;
        // Progress at most every second: on the embedded engine a batch may be a handful of chunks.
        if (onProgress && (to === total || performance.now() - reportedAt >= 1000)) {
          await onProgress(to, total);
          reportedAt = performance.now();
        }
        // Let the event loop serve requests between batches (the embedded default shares it with HTTP).
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      loopDelay.disable();
    }
    return { status: 'indexed', chunkCount: total };
  }

  /** One batch in one short transaction; true when the document's content changed since it was read. */
  private async insertBatch(
    document: IndexableDocument,
    rows: { id: string; index: number; text: string; start: number; end: number; indexText: string; vector: string | null }[],
  ): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      // Lock the document so a concurrent update or delete waits; content that changed since it was read is not indexed.
      const [current] = await manager.query(`SELECT sha256 FROM documents WHERE id = $1 FOR UPDATE`, [document.id]);
      if (!current || current.sha256 !== document.sha256) return true;
      await manager.query(
        `WITH input AS (
           SELECT * FROM unnest($2::uuid[], $3::int[], $4::text[], $5::int[], $6::int[], $7::text[], $8::text[])
             AS t(id, chunk_index, text, start_offset, end_offset, index_text, embedding)),
         prepared AS (SELECT input.*, to_tsvector('${TEXT_SEARCH_CONFIG}', index_text) AS tsv FROM input),
         inserted AS (
           INSERT INTO document_chunks (id, document_id, chunk_index, text, start_offset, end_offset, content_sha256,
                                        embedding_model, embedding_dims, embedding, tsv, token_count)
           SELECT id, $1, chunk_index, text, start_offset, end_offset, $9, $10, $11, embedding::vector, tsv,
                  (SELECT coalesce(sum(${TSV_TF_SQL}), 0) FROM unnest(tsv) u)
           FROM prepared
           ON CONFLICT (document_id, chunk_index) DO NOTHING
           RETURNING id, tsv, token_count)
         INSERT INTO rag_postings (lexeme, chunk_id, document_id, tf, dl)
         SELECT u.lexeme, inserted.id, $1, ${TSV_TF_SQL}, inserted.token_count
         FROM inserted, unnest(inserted.tsv) u
         ORDER BY u.lexeme`,
        [
          document.id,
          rows.map((row) => row.id),
          rows.map((row) => row.index),
          rows.map((row) => row.text),
          rows.map((row) => row.start),
          rows.map((row) => row.end),
          rows.map((row) => row.indexText),
          rows.map((row) => row.vector),
          document.sha256,
          this.embedder.key,
          this.embedder.dimensions,
        ],
      );
      return false;
    });
  }

  /**
   * How many leading chunks an interrupted run already committed: batches commit in order, so they are
   * chunk indexes 0..n-1; anything else (a gap, more than the text makes) is rewritten from the start.
   */
  private async committedPrefix(documentId: string, total: number): Promise<number> {
    const [row] = await this.dataSource.query(
      `SELECT count(*)::int AS n, coalesce(max(chunk_index) + 1, 0)::int AS next FROM document_chunks WHERE document_id = $1`,
      [documentId],
    );
    if (row.n === row.next && row.n <= total) return row.n;
    await this.deleteInBatches(`document_id = $1`, [documentId]);
    return 0;
  }

  private async deleteInBatches(condition: string, parameters: unknown[]): Promise<void> {
    for (;;) {
      const deleted = returningRows(
        await this.dataSource.query(
          `DELETE FROM document_chunks WHERE id IN (SELECT id FROM document_chunks WHERE ${condition} LIMIT ${DELETE_BATCH_CHUNKS}) RETURNING 1 AS gone`,
          parameters,
        ),
      );
      if (deleted.length < DELETE_BATCH_CHUNKS) return;
    }
  }

  /** Documents whose chunks are in another vector space than the configured one (provider/model/dimension changed). */
  async projectsWithStaleVectors(): Promise<{ projectId: string | null; documentIds: string[] }[]> {
    const rows: { project_id: string | null; ids: string[] }[] = await this.dataSource.query(
      `SELECT d.project_id, array_agg(DISTINCT d.id) AS ids
       FROM document_chunks c JOIN documents d ON d.id = c.document_id
       WHERE c.embedding_model <> $1
       GROUP BY d.project_id`,
      [this.embedder.key],
    );
    return rows.map((row) => ({ projectId: row.project_id, documentIds: row.ids }));
  }
}
