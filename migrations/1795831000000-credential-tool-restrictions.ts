import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A tool credential (API key, OAuth grant, and the authorization code a grant is made from) may narrow its scopes to
 * an allowlist of tool names and to read-only tools.
 */
export class CredentialToolRestrictions1795831000000 implements MigrationInterface {
  name = 'CredentialToolRestrictions1795831000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['api_keys', 'oauth_grants', 'oauth_codes'])
      await queryRunner.query(
        `ALTER TABLE ${table} ADD COLUMN tools text[], ADD COLUMN read_only boolean NOT NULL DEFAULT false`,
      );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['oauth_codes', 'oauth_grants', 'api_keys'])
      await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN read_only, DROP COLUMN tools`);
  }
}
