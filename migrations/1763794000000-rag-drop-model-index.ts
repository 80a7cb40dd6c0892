import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Drops document_chunks_model_idx: every row of a healthy installation has the same embedding_model, so
 * the index never narrows anything, and the planner combined it (BitmapAnd) with the document index in
 * a per-document nested loop instead of using the HNSW index (3.2 s instead of 15 ms on SciFact).
 */
export class RagDropModelIndex1763794000000 implements MigrationInterface {
  name = 'RagDropModelIndex1763794000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS document_chunks_model_idx`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX IF NOT EXISTS document_chunks_model_idx ON document_chunks (embedding_model)`,
    );
  }
}
