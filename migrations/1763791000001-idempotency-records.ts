import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Idempotency-Key records for every write route: a request hash and, once done, the response. */
export class IdempotencyRecords1763791000001 implements MigrationInterface {
  name = 'IdempotencyRecords1763791000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE idempotency_records (
        owner_id uuid NOT NULL,
        scope varchar(100) NOT NULL,
        key varchar(255) NOT NULL,
        request_hash char(64) NOT NULL,
        state varchar(16) NOT NULL CHECK (state IN ('pending', 'completed')),
        response jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (owner_id, scope, key)
      )`);
    await queryRunner.query(`CREATE INDEX idempotency_records_expires_idx ON idempotency_records (expires_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE idempotency_records`);
  }
}
