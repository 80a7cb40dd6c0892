import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The tables whose Area B lists page by `(created_at, id)` with an opaque cursor. */
const PAGED_TABLES = ['projects', 'documents', 'github_repositories', 'agent_runs', 'api_keys'];

/**
 * Stores the creation time of every paged row at millisecond precision, the precision of the cursor (an
 * ISO-8601 timestamp). With microseconds in the column, a row created in the same millisecond as the last
 * row of a page, after it, compared below the cursor's rounded value and was never listed. Existing
 * values are rounded; rows that now share a millisecond are ordered by id, as every tie is.
 */
export class ListTimestampsMilliseconds1763796000000 implements MigrationInterface {
  name = 'ListTimestampsMilliseconds1763796000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of PAGED_TABLES) {
      await queryRunner.query(`ALTER TABLE ${table} ALTER COLUMN created_at TYPE timestamptz(3)`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of PAGED_TABLES) {
      await queryRunner.query(`ALTER TABLE ${table} ALTER COLUMN created_at TYPE timestamptz`);
    }
  }
}
