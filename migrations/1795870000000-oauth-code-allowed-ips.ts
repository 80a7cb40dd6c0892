import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The consent may limit a grant to client addresses: the authorization code carries that choice until its exchange. */
export class OAuthCodeAllowedIps1795870000000 implements MigrationInterface {
  name = 'OAuthCodeAllowedIps1795870000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE oauth_codes ADD COLUMN allowed_ips text[]`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE oauth_codes DROP COLUMN allowed_ips`);
  }
}
