import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Counted leases shared by every instance when no Redis is configured (src/common/leases): one row per holder of a
 * slot, dropped when released or once expired, so an instance that died frees its slots within one lease.
 */
export class SlotLeases1795827591618 implements MigrationInterface {
  name = 'SlotLeases1795827591618';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE slot_leases (key text NOT NULL, member uuid NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (key, member))`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE slot_leases`);
  }
}
