import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The busy share each API instance publishes about once a second (src/common/http/api-busy-share.publisher.ts), read by
 * worker-only processes to pace large documents by the API's load. UNLOGGED: the rows are worth a few seconds, so
 * they need no WAL and may vanish in a crash; a fill factor leaves room for each row's update on its own page.
 */
export class ApiBusyShares1795860000000 implements MigrationInterface {
  name = 'ApiBusyShares1795860000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE UNLOGGED TABLE api_busy_shares (instance_id uuid PRIMARY KEY, busy_share real NOT NULL, reported_at timestamptz NOT NULL) WITH (fillfactor = 50)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE api_busy_shares`);
  }
}
