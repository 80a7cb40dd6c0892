import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Project session tokens can be listed and revoked: a display prefix (the first characters after `atp_`, set for
 * tokens minted from now on), when the token was last used, and when it was revoked (a revoked token stays for
 * the record, and the lookup by hash refuses it).
 */
export class ProjectTokenRevocation1795817877733 implements MigrationInterface {
  name = 'ProjectTokenRevocation1795817877733';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE project_session_tokens ADD COLUMN prefix varchar(16), ADD COLUMN last_used_at timestamptz, ADD COLUMN revoked_at timestamptz`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE project_session_tokens DROP COLUMN revoked_at, DROP COLUMN last_used_at, DROP COLUMN prefix`,
    );
  }
}
