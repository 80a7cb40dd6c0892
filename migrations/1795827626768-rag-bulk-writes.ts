import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A write path shaped for bulk ingest (docs/perf/ingest.md): what each posting and chunk paid without search needing it.
 *
 * - `rag_postings` is keyed by `(chunk_id, lexeme)` instead of `(lexeme, chunk_id)` with three INCLUDE columns, and
 *   that key replaces `rag_postings_chunk_idx`: search reads postings only through `rag_postings_impact_idx`, so the
 *   old key was a second wide B-tree whose inserts landed on one random leaf page per posting; the new one puts a
 *   chunk's postings on adjacent entries (one or two leaf pages per chunk) and still serves deletes by chunk.
 * - The foreign key from postings to chunks (one referential check per posting) becomes a statement trigger that
 *   deletes the postings of deleted chunks in one set-based statement: postings are only written in the statement
 *   that writes their chunk (DocumentChunksRepository.insertBatch), so no posting can name a missing chunk.
 * - `document_chunks_tsv_idx` (GIN) goes: keyword search reads postings and each chunk's tsvector by primary key,
 *   never `tsv @@ query`.
 * - The row trigger stamping a chunk's statistic scope fires only when the writer did not supply it: the chunk writer
 *   computes the scope once per batch in its statement, under the document row's lock, so it is the same value.
 *
 * Rebuilding the key reads every posting once (on a 100k-chunk index ~9 million); run it in a quiet window.
 */
export class RagBulkWrites1795827626768 implements MigrationInterface {
  name = 'RagBulkWrites1795827626768';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`DROP INDEX document_chunks_tsv_idx`);
    await queryRunner.query(`ALTER TABLE rag_postings DROP CONSTRAINT rag_postings_chunk_id_fkey`);
    await queryRunner.query(`ALTER TABLE rag_postings DROP CONSTRAINT rag_postings_pkey`);
    await queryRunner.query(`ALTER TABLE rag_postings ADD CONSTRAINT rag_postings_pkey PRIMARY KEY (chunk_id, lexeme)`);
    await queryRunner.query(`DROP INDEX rag_postings_chunk_idx`);
    await queryRunner.query(`
      CREATE FUNCTION rag_chunks_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- An array, not a join: the transition table has no statistics, and a join could be planned as a scan of every posting.
        DELETE FROM rag_postings WHERE chunk_id = ANY (ARRAY(SELECT id FROM removed));
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER rag_chunks_drop_postings AFTER DELETE ON document_chunks REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION rag_chunks_drop_postings()`,
    );
    await queryRunner.query(`DROP TRIGGER rag_chunk_stamp_scope ON document_chunks`);
    await queryRunner.query(
      `CREATE TRIGGER rag_chunk_stamp_scope BEFORE INSERT ON document_chunks FOR EACH ROW WHEN (NEW.stat_scope IS NULL) EXECUTE FUNCTION rag_chunk_stamp_scope()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`DROP TRIGGER rag_chunk_stamp_scope ON document_chunks`);
    await queryRunner.query(
      `CREATE TRIGGER rag_chunk_stamp_scope BEFORE INSERT ON document_chunks FOR EACH ROW EXECUTE FUNCTION rag_chunk_stamp_scope()`,
    );
    await queryRunner.query(`DROP TRIGGER rag_chunks_drop_postings ON document_chunks`);
    await queryRunner.query(`DROP FUNCTION rag_chunks_drop_postings()`);
    await queryRunner.query(`CREATE INDEX rag_postings_chunk_idx ON rag_postings (chunk_id)`);
    await queryRunner.query(`ALTER TABLE rag_postings DROP CONSTRAINT rag_postings_pkey`);
    await queryRunner.query(
      `ALTER TABLE rag_postings ADD CONSTRAINT rag_postings_pkey PRIMARY KEY (lexeme, chunk_id) INCLUDE (document_id, tf, dl)`,
    );
    await queryRunner.query(
      `ALTER TABLE rag_postings ADD CONSTRAINT rag_postings_chunk_id_fkey FOREIGN KEY (chunk_id) REFERENCES document_chunks(id) ON DELETE CASCADE`,
    );
    await queryRunner.query(`CREATE INDEX document_chunks_tsv_idx ON document_chunks USING gin (tsv)`);
  }
}
