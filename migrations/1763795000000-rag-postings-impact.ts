import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Impact-ordered access to the BM25 postings: an index on `(lexeme, impact DESC)` where impact is the BM25
 * term-frequency component `tf / (tf + k1·(1 − b) + k1·b·dl / 100)` (k1 1.2, b 0.75, a fixed reference
 * chunk length of 100 tokens). Within one lexeme the IDF is a constant, so this is the order of a posting's
 * contribution to the score; keyword search reads only the best postings of a very common term from it
 * instead of summing all of them (see RagSearchService.keywordCandidates). Scores are still computed
 * exactly at query time from tf, dl and the current corpus statistics: the reference length only orders
 * postings, so a drifting average chunk length changes which postings are read first, never a score.
 *
 * The expression must stay identical to POSTING_IMPACT_SQL in src/modules/rag/rag.constants.ts, or the
 * planner cannot use the index. Index-only scans: chunk_id, document_id, tf and dl are included.
 */
export class RagPostingsImpact1763795000000 implements MigrationInterface {
  name = 'RagPostingsImpact1763795000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Building over millions of postings can outlast the pool's 30 s statement timeout.
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(
      `CREATE INDEX IF NOT EXISTS rag_postings_impact_idx ON rag_postings
         (lexeme, (tf::float8 / (tf::float8 + 0.3::float8 + 0.009::float8 * dl::float8)) DESC)
         INCLUDE (chunk_id, document_id, tf, dl)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS rag_postings_impact_idx`);
  }
}
