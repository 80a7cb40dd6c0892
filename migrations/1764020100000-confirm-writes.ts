import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * "Confirm writes" on an Area A credential (API.md, "Confirmation on the MCP door"): a write tool called with
 * such a key or grant is confirmed with the user before it runs. The consent's choice rides the code to the grant.
 */
export class ConfirmWrites1764020100000 implements MigrationInterface {
  name = 'ConfirmWrites1764020100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN confirm_writes boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`ALTER TABLE oauth_grants ADD COLUMN confirm_writes boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`ALTER TABLE oauth_codes ADD COLUMN confirm_writes boolean NOT NULL DEFAULT false`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE oauth_codes DROP COLUMN confirm_writes`);
    await queryRunner.query(`ALTER TABLE oauth_grants DROP COLUMN confirm_writes`);
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN confirm_writes`);
  }
}
