import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Key rolling and the admin policy. A rolled key names its successor and keeps working until its revocation time,
 * which may lie in the future (the overlap); a credential may be limited to client addresses; the admin policy is
 * one row (absent: today's behaviour).
 */
export class KeyRollingAndAdminPolicy1795830000000 implements MigrationInterface {
  name = 'KeyRollingAndAdminPolicy1795830000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE api_keys ADD COLUMN rolled_to uuid REFERENCES api_keys(id) ON DELETE SET NULL, ADD COLUMN allowed_ips text[]`,
    );
    await queryRunner.query(`ALTER TABLE oauth_grants ADD COLUMN allowed_ips text[]`);
    await queryRunner.query(`CREATE TABLE admin_policy (
      id boolean PRIMARY KEY DEFAULT true CHECK (id),
      max_key_lifetime_days integer CHECK (max_key_lifetime_days > 0),
      allowed_key_scopes text[],
      require_confirm_writes_for_write_scopes boolean NOT NULL DEFAULT false,
      allowed_ips text[],
      allowed_oauth_clients text[],
      max_credentials_per_user integer CHECK (max_credentials_per_user > 0),
      updated_at timestamptz NOT NULL DEFAULT now(),
      updated_by uuid REFERENCES users(id) ON DELETE SET NULL
    )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE admin_policy`);
    await queryRunner.query(`ALTER TABLE oauth_grants DROP COLUMN allowed_ips`);
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN allowed_ips, DROP COLUMN rolled_to`);
  }
}
