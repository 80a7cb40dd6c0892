import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import type { VectorBatch } from './embeddings/embedding-provider.js';
import { TEXT_SEARCH_CONFIG, TSV_TF_SQL } from './rag.constants.js';

/** One chunk as a batch writes it. */
export interface NewChunk {
  id: string;
  index: number;
  text: string;
  start: number;
  end: number;
  /** The text indexed for BM25 (title and chunk), which is not the cited span. */
  indexText: string;
}

/** The vector space a batch of chunks is embedded in. */
export interface VectorSpace {
  embeddingModel: string;
  embeddingDims: number;
}

/** The content and vector space a batch of chunks is computed for. */
export interface ChunkSource extends VectorSpace {
  documentId: string;
  sha256: string;
  /** The pending segment the chunks go to (rag-segments.repository.ts); absent: straight into the main indexes. */
  segmentId?: number;
}

/** A chunk with the document and content it is of, as a batch of several documents writes it. */
export interface DocumentChunk extends NewChunk {
  documentId: string;
  sha256: string;
}

/** A document's stored chunks against its index marks, to tell whether they are complete for a content. */
export interface StoredChunkState {
  /** Chunks stored. */
  count: number;
  /** Every stored chunk is of this content in this vector space (null when none is stored). */
  allCurrent: boolean | null;
  documentStatus: string;
  documentChunkCount: number;
  documentChunksTotal: number | null;
}

/**
 * `document_chunks` and its BM25 postings (`rag_postings`, written with the chunks they come from): the only
 * place their SQL lives, search statements aside (rag-search.repository.ts). The BM25 statistics per scope
 * follow by statement triggers (migration 1764015000000), exact under deletes and cascades, as do the postings of
 * deleted chunks (migration 1795827626768).
 */
@Injectable()
export class DocumentChunksRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /** Null when the document is gone. */
  async storedState(documentId: string, sha256: string, embeddingModel: string): Promise<StoredChunkState | null> {
    const { rows } = await sql<{
      n: number;
      current: boolean | null;
      status: string;
      chunkCount: number;
      chunksTotal: number | null;
    }>`
      SELECT c.n, c.current, d.status, d.chunk_count, d.chunks_total
      FROM (SELECT count(*)::int AS n, bool_and(content_sha256 = ${sha256} AND embedding_model = ${embeddingModel}) AS current
            FROM document_chunks WHERE document_id = ${documentId}) c,
           documents d
      WHERE d.id = ${documentId}`.execute(this.db);
    const row = rows[0];
    if (!row) return null;
    return {
      count: row.n,
      allCurrent: row.current,
      documentStatus: row.status,
      documentChunkCount: row.chunkCount,
      documentChunksTotal: row.chunksTotal,
    };
  }

  /** The documents among `documentIds` that have stored chunks (of any content). */
  async documentsWithChunks(documentIds: readonly string[]): Promise<Set<string>> {
    const rows = await this.db
      .selectFrom('documentChunks')
      .select('documentId')
      .distinct()
      .where(sql<boolean>`document_id = ANY(${[...documentIds]}::uuid[])`)
      .execute();
    return new Set(rows.map((row) => row.documentId));
  }

  /**
   * Deletes up to `limit` chunks of a document, except those of the content and vector space in `keep`
   * (nothing kept when it is empty); returns how many went. Their postings follow by trigger.
   */
  async deleteSome(
    documentId: string,
    keep: { sha256?: string; embeddingModel?: string },
    limit: number,
  ): Promise<number> {
    const result = await this.db
      .deleteFrom('documentChunks')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('documentChunks')
          .select('id')
          .where('documentId', '=', documentId)
          .$if(keep.sha256 !== undefined || keep.embeddingModel !== undefined, (qb) =>
            qb.where((inner) =>
              inner.or([
                ...(keep.sha256 !== undefined ? [inner('contentSha256', '<>', keep.sha256)] : []),
                ...(keep.embeddingModel !== undefined ? [inner('embeddingModel', '<>', keep.embeddingModel)] : []),
              ]),
            ),
          )
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** How many chunks a document has and one past its highest chunk index. */
  async extent(documentId: string): Promise<{ count: number; next: number }> {
    const row = await this.db
      .selectFrom('documentChunks')
      .select([sql<number>`count(*)::int`.as('count'), sql<number>`coalesce(max(chunk_index) + 1, 0)::int`.as('next')])
      .where('documentId', '=', documentId)
      .executeTakeFirstOrThrow();
    return row;
  }

  /**
   * One batch of a document's chunks and their postings in one statement; see insertDocumentsBatch. Runs in the
   * caller's transaction.
   */
  async insertBatch(
    source: ChunkSource,
    chunks: readonly NewChunk[],
    vectors: VectorBatch,
    executor: DbExecutor,
  ): Promise<void> {
    const { documentId, sha256, segmentId, ...space } = source;
    // A document's batches are derived data, written again after the committed prefix if lost: their commits need
    // not wait for the WAL flush. A crash loses at most the last batches, in order, and the durable commit that marks
    // the document indexed (or publishes its segment) flushes every batch before it.
    await sql`SET LOCAL synchronous_commit = off`.execute(executor);
    await this.insertDocumentsBatch(
      space,
      chunks.map((chunk) => ({ ...chunk, documentId, sha256 })),
      vectors,
      executor,
      segmentId,
    );
  }

  /**
   * One batch of chunks of one or more documents and their postings in one statement (rows passed as arrays and
   * unnested: one round trip per batch); a chunk index already stored is skipped. The statistics triggers then run
   * once for the whole batch, so a lexeme shared by its documents is counted in one upsert. `vectors` holds chunk
   * i's vector at slice i of one binary real[] parameter (see VectorBatch); a chunk without a present vector stores
   * NULL. Runs in the caller's transaction, which must hold the row lock of every document in the batch. With a
   * `segmentId` the chunks are marked as that pending segment's and their postings go to `rag_pending_postings`,
   * which has no index while the segment is written (see RagSegmentsRepository).
   */
  async insertDocumentsBatch(
    space: VectorSpace,
    chunks: readonly DocumentChunk[],
    vectors: VectorBatch,
    executor: DbExecutor,
    segmentId?: number,
  ): Promise<void> {
    if (vectors.present.length !== chunks.length || vectors.dimensions !== space.embeddingDims)
      throw new Error('the vector batch does not match its chunks');
    if (chunks.length === 0) return;
    const dims = vectors.dimensions;
    await sql`
      WITH input AS (
        SELECT t.id, t.document_id, t.content_sha256, t.chunk_index, t.text, t.start_offset, t.end_offset, t.index_text,
               CASE WHEN t.has_vector THEN (${Buffer.from(vectors.values.buffer, vectors.values.byteOffset, vectors.values.byteLength)}::real[])
                                            [(t.ord - 1) * ${dims}::int + 1 : t.ord * ${dims}::int]::vector END AS embedding
        FROM unnest(${chunks.map((chunk) => chunk.id)}::uuid[], ${chunks.map((chunk) => chunk.documentId)}::uuid[],
                    ${chunks.map((chunk) => chunk.sha256)}::text[], ${chunks.map((chunk) => chunk.index)}::int[],
                    ${chunks.map((chunk) => chunk.text)}::text[], ${chunks.map((chunk) => chunk.start)}::int[],
                    ${chunks.map((chunk) => chunk.end)}::int[], ${chunks.map((chunk) => chunk.indexText)}::text[],
                    ${vectors.present}::boolean[])
          WITH ORDINALITY AS t(id, document_id, content_sha256, chunk_index, text, start_offset, end_offset, index_text, has_vector, ord)),
      -- The statistic scope of each document, once per batch (the caller holds the documents' row locks, so their
      -- visibility cannot change in between): stamped on the chunks (their row trigger then stays idle) and, by id,
      -- on the postings, which keyword search filters by it.
      scope AS MATERIALIZED (
        SELECT s.document_id, s.scope, rag_scope_id(s.scope) AS id
        FROM (SELECT d.id AS document_id, rag_stat_scope(d.is_public, d.author_id, d.project_id) AS scope
              FROM documents d WHERE d.id IN (SELECT DISTINCT document_id FROM input)) s),
      prepared AS (SELECT input.*, to_tsvector(${sql.lit(TEXT_SEARCH_CONFIG)}, index_text) AS tsv FROM input),
      -- Each chunk's terms, unnested once: they are its postings, and their frequencies sum to its token count.
      terms AS (SELECT prepared.id, u.lexeme, ${TSV_TF_SQL} AS tf FROM prepared, unnest(prepared.tsv) u),
      lengths AS (SELECT id, sum(tf)::int AS token_count FROM terms GROUP BY id),
      inserted AS (
        INSERT INTO document_chunks (id, document_id, chunk_index, text, start_offset, end_offset, content_sha256,
                                     embedding_model, embedding_dims, embedding, tsv, token_count, stat_scope, segment_id)
        SELECT prepared.id, prepared.document_id, chunk_index, text, start_offset, end_offset, content_sha256,
               ${space.embeddingModel}, ${space.embeddingDims}, embedding, tsv, coalesce(lengths.token_count, 0), scope.scope,
               ${segmentId ?? null}::int
        FROM prepared JOIN scope ON scope.document_id = prepared.document_id LEFT JOIN lengths ON lengths.id = prepared.id
        ON CONFLICT (document_id, chunk_index) DO NOTHING
        RETURNING id, document_id, token_count)
      ${
        segmentId === undefined
          ? sql`INSERT INTO rag_postings (lexeme, chunk_id, document_id, tf, dl, scope_id)
                SELECT terms.lexeme, inserted.id, inserted.document_id, terms.tf, inserted.token_count, scope.id`
          : sql`INSERT INTO rag_pending_postings (lexeme, chunk_id, document_id, tf, dl, scope_id, segment_id)
                SELECT terms.lexeme, inserted.id, inserted.document_id, terms.tf, inserted.token_count, scope.id, ${segmentId}::int`
      }
      FROM inserted JOIN terms ON terms.id = inserted.id JOIN scope ON scope.document_id = inserted.document_id`.execute(
      executor,
    );
  }

  /** Documents (by project) with chunks in another vector space than `embeddingModel`. */
  async documentsOutsideVectorSpace(
    embeddingModel: string,
  ): Promise<{ projectId: string | null; documentIds: string[] }[]> {
    const rows = await this.db
      .selectFrom('documentChunks as c')
      .innerJoin('documents as d', 'd.id', 'c.documentId')
      .select(['d.projectId', sql<string[]>`array_agg(DISTINCT d.id)`.as('ids')])
      .where('c.embeddingModel', '<>', embeddingModel)
      .groupBy('d.projectId')
      .execute();
    return rows.map((row) => ({ projectId: row.projectId, documentIds: row.ids }));
  }

  /**
   * The partial HNSW index of a vector dimension (`dims` from config, checked by the caller; identifiers and
   * the predicate are literals because the planner matches the index by its expression and predicate), without the
   * chunks of pending segments, which have their own until they are merged (RagSegmentsRepository).
   */
  async ensureVectorIndex(dims: number): Promise<void> {
    if (!Number.isInteger(dims)) throw new Error(`not a dimension: ${dims}`);
    await sql`CREATE INDEX IF NOT EXISTS ${sql.id(`document_chunks_embedding_hnsw_${dims}`)} ON document_chunks
                USING hnsw ((embedding::vector(${sql.lit(dims)})) vector_cosine_ops)
                WHERE embedding_dims = ${sql.lit(dims)} AND segment_id IS NULL`.execute(this.db);
  }
}
