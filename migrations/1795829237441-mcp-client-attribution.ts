import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every MCP call names its client: the usage logs of keys and grants keep the client's name and version, and the audit
 * log the version beside the name it already had.
 */
export class McpClientAttribution1795829237441 implements MigrationInterface {
  name = 'McpClientAttribution1795829237441';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE api_key_usage ADD COLUMN client_name text, ADD COLUMN client_version text`);
    await queryRunner.query(
      `ALTER TABLE oauth_grant_usage ADD COLUMN client_name text, ADD COLUMN client_version text`,
    );
    await queryRunner.query(`ALTER TABLE audit_log ADD COLUMN client_version text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE audit_log DROP COLUMN client_version`);
    await queryRunner.query(`ALTER TABLE oauth_grant_usage DROP COLUMN client_version, DROP COLUMN client_name`);
    await queryRunner.query(`ALTER TABLE api_key_usage DROP COLUMN client_version, DROP COLUMN client_name`);
  }
}
