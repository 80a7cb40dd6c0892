import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `rag_postings` loses its primary key `(chunk_id, lexeme)` for a plain index on `chunk_id` (docs/perf/ingest.md): the
 * key's only readers are deletes and scope moves by chunk, which the index serves, and its uniqueness holds by
 * construction (a chunk's postings are the lexemes of its tsvector, written once, by the statement that writes the
 * chunk). A key with the lexeme compared every posting's text on insert; the index on `chunk_id` alone holds one
 * deduplicated entry list per chunk, so a batch's postings cost fewer index tuples and less WAL.
 *
 * Building the index reads every posting once (on a 100k-chunk index ~9 million); run it in a quiet window.
 */
export class RagPostingsChunkIndex1795850374092 implements MigrationInterface {
  name = 'RagPostingsChunkIndex1795850374092';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`CREATE INDEX rag_postings_chunk_idx ON rag_postings (chunk_id)`);
    await queryRunner.query(`ALTER TABLE rag_postings DROP CONSTRAINT rag_postings_pkey`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`ALTER TABLE rag_postings ADD CONSTRAINT rag_postings_pkey PRIMARY KEY (chunk_id, lexeme)`);
    await queryRunner.query(`DROP INDEX rag_postings_chunk_idx`);
  }
}
