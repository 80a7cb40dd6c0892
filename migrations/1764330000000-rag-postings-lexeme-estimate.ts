import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tells the planner that a term has many postings (about 2,000: n_distinct as a fraction of the rows, so at
 * any table size), instead of the average over every lexeme (~500 at 100k chunks, far fewer on a small
 * corpus), which is dominated by rare words. Keyword search reads each query term's best postings from
 * `rag_postings_impact_idx` in impact order and stops after KEYWORD_POSTINGS_PER_TERM (500); with the average
 * estimate the planner could prefer a bitmap scan of all the term's postings and a sort (and did on a
 * table not yet vacuumed), which is why every keyword list ran with `SET LOCAL enable_bitmapscan = off` in a
 * transaction of its own (three round trips). With this estimate the ordered scan wins on its own, also when
 * index-only scans are not possible (checked with EXPLAIN at 100k chunks), and the list is one statement.
 * The estimate is only used where a lexeme's postings are looked up: search. ANALYZE applies it at once.
 */
export class RagPostingsLexemeEstimate1764330000000 implements MigrationInterface {
  name = 'RagPostingsLexemeEstimate1764330000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`ALTER TABLE rag_postings ALTER COLUMN lexeme SET (n_distinct = -0.0005)`);
    await queryRunner.query(`ANALYZE rag_postings`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE rag_postings ALTER COLUMN lexeme RESET (n_distinct)`);
  }
}
