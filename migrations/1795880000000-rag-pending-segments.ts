import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applySqlDefinitions } from '../src/database/sql-definitions.js';

/**
 * Pending segments (docs/perf/ingest.md, "Pending segments for large uploads"): a large document's chunks are written
 * outside the main search indexes, marked by `document_chunks.segment_id`, their postings into the index-less side
 * table `rag_pending_postings`; once the document is written, the segment gets small indexes of its own (built in one
 * pass each, named after its id) and search reads them beside the main ones until a background merge moves the
 * chunks into the main indexes and drops the segment.
 *
 * The main HNSW indexes are rebuilt to leave pending rows out (`AND segment_id IS NULL`): on a large table that build
 * takes minutes (~1 ms per chunk); run it in a quiet window.
 */
export class RagPendingSegments1795880000000 implements MigrationInterface {
  name = 'RagPendingSegments1795880000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`
      CREATE TABLE rag_segments (
        id serial PRIMARY KEY,
        document_id uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        dims integer NOT NULL CHECK (dims > 0),
        state text NOT NULL DEFAULT 'writing' CHECK (state IN ('writing', 'searchable')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE INDEX rag_segments_document_idx ON rag_segments (document_id)`);
    await queryRunner.query(`ALTER TABLE document_chunks ADD COLUMN segment_id integer`);
    // A statement naming a segment whose own indexes are gone (merged) reads nothing here instead of the whole table.
    await queryRunner.query(
      `CREATE INDEX document_chunks_segment_idx ON document_chunks (segment_id) WHERE segment_id IS NOT NULL`,
    );
    await queryRunner.query(`
      CREATE TABLE rag_pending_postings (
        lexeme text NOT NULL,
        chunk_id uuid NOT NULL,
        document_id uuid NOT NULL,
        tf integer NOT NULL,
        dl integer NOT NULL,
        scope_id integer NOT NULL,
        segment_id integer NOT NULL
      )`);
    await rebuildMainVectorIndexes(queryRunner, 'AND segment_id IS NULL');
    await applySqlDefinitions(queryRunner, [
      'modules/rag/sql/scope-statistics.sql',
      'modules/rag/sql/drop-postings-of-deleted-chunks.sql',
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    // Pending chunks join the main indexes as they are (their postings with them) before the columns go.
    await queryRunner.query(`
      INSERT INTO rag_postings (lexeme, chunk_id, document_id, tf, dl, scope_id)
      SELECT lexeme, chunk_id, document_id, tf, dl, scope_id FROM rag_pending_postings`);
    const segments: { indexname: string }[] = await queryRunner.query(
      `SELECT indexname FROM pg_indexes WHERE indexname ~ '^rag_segment_[0-9]+_'`,
    );
    for (const { indexname } of segments) await queryRunner.query(`DROP INDEX ${indexname}`);
    await rebuildMainVectorIndexes(queryRunner, '');
    await queryRunner.query(`DROP TABLE rag_pending_postings`);
    await queryRunner.query(`ALTER TABLE document_chunks DROP COLUMN segment_id`);
    await queryRunner.query(`DROP TABLE rag_segments`);
  }
}

/** Rebuilds each dimension's main HNSW index (DocumentChunksRepository.ensureVectorIndex) with `extra` added to its predicate. */
async function rebuildMainVectorIndexes(queryRunner: QueryRunner, extra: string): Promise<void> {
  const indexes: { indexname: string }[] = await queryRunner.query(
    `SELECT indexname FROM pg_indexes WHERE tablename = 'document_chunks' AND indexname ~ '^document_chunks_embedding_hnsw_[0-9]+$'`,
  );
  for (const { indexname } of indexes) {
    const dims = Number(indexname.slice('document_chunks_embedding_hnsw_'.length));
    await queryRunner.query(`DROP INDEX ${indexname}`);
    await queryRunner.query(
      `CREATE INDEX ${indexname} ON document_chunks USING hnsw ((embedding::vector(${dims})) vector_cosine_ops)
         WHERE embedding_dims = ${dims} ${extra}`,
    );
  }
}
