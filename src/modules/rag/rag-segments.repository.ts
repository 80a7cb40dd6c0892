import { Injectable } from '@nestjs/common';
import { sql, type RawBuilder } from 'kysely';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';

/** A pending segment search reads beside the main indexes: its id and the vector dimension of its chunks. */
export interface SearchableSegment {
  id: number;
  dims: number;
}

/** A segment whose chunks wait to be merged into the main indexes. */
export interface SegmentToMerge {
  id: number;
  documentId: string;
}

/** The names of a segment's own indexes: its chunks' vectors, its postings in impact order, its postings by chunk. */
function segmentIndexes(segmentId: number): { vectors: string; impact: string; chunks: string } {
  return {
    vectors: `rag_segment_${segmentId}_vectors`,
    impact: `rag_segment_${segmentId}_impact`,
    chunks: `rag_segment_${segmentId}_chunks`,
  };
}

/**
 * A segment id written into a statement's text: an integer the database generated (`rag_segments.id`), never input.
 * A literal, because the planner only uses a segment's partial indexes (`WHERE segment_id = <id>`) for a statement
 * whose own condition names that id.
 */
export function segmentLiteral(segmentId: number): RawBuilder<number> {
  if (!Number.isSafeInteger(segmentId) || segmentId <= 0) throw new Error(`not a segment id: ${segmentId}`);
  return sql.lit(segmentId);
}

/**
 * Pending segments (migration 1795880000000, docs/perf/ingest.md): a large document's chunks are written with a
 * `segment_id` (out of the main HNSW index, whose predicate excludes them) and their postings into the index-less
 * `rag_pending_postings`; once written, the segment's own partial indexes are built in one pass each and it becomes
 * searchable; later its chunks move into the main indexes a slice at a time and the segment is dropped. A chunk is
 * in exactly one of the two places at every snapshot: a slice moves the chunk rows and their postings in one
 * transaction. The only place their SQL lives (search reads them through RagSearchRepository's arms).
 */
@Injectable()
export class RagSegmentsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /** The document's segment still being written in this dimension (a resumed write continues it), else a new one. */
  async openFor(documentId: string, dims: number): Promise<number> {
    const { rows } = await sql<{ id: number }>`
      WITH existing AS (
        SELECT id FROM rag_segments WHERE document_id = ${documentId} AND dims = ${dims} AND state = 'writing'
        ORDER BY id DESC LIMIT 1),
      created AS (
        INSERT INTO rag_segments (document_id, dims) SELECT ${documentId}, ${dims}
        WHERE NOT EXISTS (SELECT 1 FROM existing) RETURNING id)
      SELECT id FROM existing UNION ALL SELECT id FROM created`.execute(this.db);
    return rows[0].id;
  }

  /** The document's segment still being written in this dimension, if any (one whose last batch is stored but not yet published). */
  async writingOf(documentId: string, dims: number): Promise<number | undefined> {
    const { rows } = await sql<{ id: number }>`
      SELECT id FROM rag_segments WHERE document_id = ${documentId} AND dims = ${dims} AND state = 'writing'
      ORDER BY id DESC LIMIT 1`.execute(this.db);
    return rows[0]?.id;
  }

  /** How many chunks a segment holds. */
  async chunkCount(segmentId: number): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM document_chunks WHERE segment_id = ${segmentLiteral(segmentId)}`.execute(this.db);
    return rows[0].n;
  }

  /**
   * Builds a written segment's indexes and makes it searchable (a failure leaves it `writing`, its missing indexes
   * built by the write that resumes it). Each build reads the segment's rows once; the HNSW build also scans the
   * chunk table's heap and holds off other chunk writes while it runs. `spread`: the three are built at the same
   * time, each on its own connection (every core, for a service nobody is calling); else one after another on one,
   * in the transaction that publishes the segment.
   */
  async publish(segmentId: number, dims: number, spread: boolean): Promise<void> {
    if (!Number.isInteger(dims) || dims <= 0) throw new Error(`not a dimension: ${dims}`);
    const builds = [
      (trx: DbExecutor) => this.buildVectorIndex(trx, segmentId, dims),
      (trx: DbExecutor) => this.buildImpactIndex(trx, segmentId),
      (trx: DbExecutor) => this.buildChunkIndex(trx, segmentId),
    ];
    const markSearchable = (executor: DbExecutor) =>
      sql`UPDATE rag_segments SET state = 'searchable' WHERE id = ${segmentId}`.execute(executor);
    if (!spread) {
      await this.db.transaction().execute(async (trx) => {
        for (const build of builds) await build(trx);
        await markSearchable(trx);
      });
      return;
    }
    const built = await Promise.allSettled(builds.map((build) => this.db.transaction().execute(build)));
    // All settled first: a failed build leaves no statement of another running when the write is retried.
    for (const outcome of built) if (outcome.status === 'rejected') throw outcome.reason;
    await markSearchable(this.db);
  }

  /** A segment's HNSW graph over its chunks' vectors. */
  private async buildVectorIndex(trx: DbExecutor, segmentId: number, dims: number): Promise<void> {
    await this.oneCoreBuild(trx);
    // A segment's graph is small and lives until its merge: half the default construction effort.
    await sql`CREATE INDEX IF NOT EXISTS ${sql.id(segmentIndexes(segmentId).vectors)} ON document_chunks
                USING hnsw ((embedding::vector(${sql.lit(dims)})) vector_cosine_ops) WITH (ef_construction = 32)
                WHERE segment_id = ${segmentLiteral(segmentId)} AND embedding_dims = ${sql.lit(dims)}`.execute(trx);
  }

  /** A segment's postings in impact order, what keyword search reads: the shape of rag_postings_impact_idx. */
  private async buildImpactIndex(trx: DbExecutor, segmentId: number): Promise<void> {
    await this.oneCoreBuild(trx);
    await sql`CREATE INDEX IF NOT EXISTS ${sql.id(segmentIndexes(segmentId).impact)} ON rag_pending_postings
                (lexeme, (tf::float8 / (tf::float8 + 0.3::float8 + 0.009::float8 * dl::float8)) DESC)
                INCLUDE (chunk_id, document_id, tf, dl, scope_id) WHERE segment_id = ${segmentLiteral(segmentId)}`.execute(
      trx,
    );
  }

  /** A segment's postings by chunk, what its merge and chunk deletes find them by. */
  private async buildChunkIndex(trx: DbExecutor, segmentId: number): Promise<void> {
    await this.oneCoreBuild(trx);
    await sql`CREATE INDEX IF NOT EXISTS ${sql.id(segmentIndexes(segmentId).chunks)} ON rag_pending_postings (chunk_id)
                WHERE segment_id = ${segmentLiteral(segmentId)}`.execute(trx);
  }

  /** A build's settings: no statement timeout, and no parallel workers (a parallel HNSW build would take every core). */
  private async oneCoreBuild(trx: DbExecutor): Promise<void> {
    await sql`SET LOCAL statement_timeout = 0`.execute(trx);
    await sql`SET LOCAL max_parallel_maintenance_workers = 0`.execute(trx);
  }

  /** Every searchable segment, oldest first. */
  async searchable(): Promise<SearchableSegment[]> {
    const { rows } = await sql<SearchableSegment>`
      SELECT id, dims FROM rag_segments WHERE state = 'searchable' ORDER BY id`.execute(this.db);
    return rows;
  }

  /** The oldest searchable segment, to merge next. */
  async nextToMerge(): Promise<SegmentToMerge | undefined> {
    const { rows } = await sql<SegmentToMerge>`
      SELECT id, document_id FROM rag_segments WHERE state = 'searchable' ORDER BY id LIMIT 1`.execute(this.db);
    return rows[0];
  }

  /**
   * Moves up to `limit` of a segment's chunks into the main indexes: the rows lose their segment (the main HNSW
   * index takes them) and their postings move from the side table to `rag_postings`, in one transaction. The
   * document row is held (FOR SHARE) so a visibility change, whose trigger moves postings of both tables to the new
   * scope, runs wholly before or after. Chunks another merge holds are skipped. Returns how many moved.
   */
  async mergeSlice(segment: SegmentToMerge, limit: number): Promise<number> {
    const id = segmentLiteral(segment.id);
    return this.db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM documents WHERE id = ${segment.documentId} FOR SHARE`.execute(trx);
      const { rows } = await sql<{ moved: number }>`
        WITH picked AS (
          SELECT id FROM document_chunks WHERE segment_id = ${id} LIMIT ${sql.lit(limit)} FOR UPDATE SKIP LOCKED),
        moved AS (
          UPDATE document_chunks c SET segment_id = NULL FROM picked WHERE c.id = picked.id RETURNING c.id),
        gone AS (
          DELETE FROM rag_pending_postings p WHERE p.segment_id = ${id} AND p.chunk_id IN (SELECT id FROM moved)
          RETURNING p.lexeme, p.chunk_id, p.document_id, p.tf, p.dl, p.scope_id),
        posted AS (
          INSERT INTO rag_postings (lexeme, chunk_id, document_id, tf, dl, scope_id)
          SELECT lexeme, chunk_id, document_id, tf, dl, scope_id FROM gone RETURNING 1)
        SELECT (SELECT count(*) FROM moved)::int AS moved, (SELECT count(*) FROM posted)::int AS posted`.execute(trx);
      return rows[0].moved;
    });
  }

  /**
   * Drops a segment that has no chunk left (all merged, or deleted): its row, then its indexes. True when it was
   * dropped; false when chunks remain (another merge holds some, or a write added more).
   */
  async dropIfEmpty(segmentId: number): Promise<boolean> {
    const result = await sql`
      DELETE FROM rag_segments s WHERE s.id = ${segmentId}
        AND NOT EXISTS (SELECT 1 FROM document_chunks WHERE segment_id = ${segmentLiteral(segmentId)})`.execute(
      this.db,
    );
    if (Number(result.numAffectedRows ?? 0) === 0) return false;
    await this.dropIndexes(segmentId);
    return true;
  }

  /**
   * Drops the indexes of segments that no longer exist (merged, or gone with their document), and segments still
   * `writing` that hold no chunk a day after they were opened (a write that never stored anything).
   */
  async dropLeftovers(): Promise<number> {
    await sql`
      DELETE FROM rag_segments s WHERE s.state = 'writing' AND s.created_at < now() - interval '1 day'
        AND NOT EXISTS (SELECT 1 FROM document_chunks c WHERE c.segment_id = s.id)`.execute(this.db);
    const { rows } = await sql<{ id: number }>`
      SELECT DISTINCT substring(indexname FROM '^rag_segment_([0-9]+)_')::int AS id FROM pg_indexes
      WHERE schemaname = current_schema() AND indexname ~ '^rag_segment_[0-9]+_'
        AND NOT EXISTS (SELECT 1 FROM rag_segments s WHERE s.id = substring(indexname FROM '^rag_segment_([0-9]+)_')::int)`.execute(
      this.db,
    );
    for (const { id } of rows) await this.dropIndexes(id);
    return rows.length;
  }

  /** Concurrently: a search still planned with the index finishes first, and no chunk write waits for the drop. */
  private async dropIndexes(segmentId: number): Promise<void> {
    for (const name of Object.values(segmentIndexes(segmentId)))
      await sql`DROP INDEX CONCURRENTLY IF EXISTS ${sql.id(name)}`.execute(this.db);
  }
}
