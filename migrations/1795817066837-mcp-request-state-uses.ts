import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The nonces of 2026-07-28 `requestState` confirmations already used: a "confirm writes" acceptance runs its write
 * once, so the state it carries is recorded at first use and refused afterwards. Rows outlive the state's own expiry
 * briefly and are pruned with the MCP sessions.
 */
export class McpRequestStateUses1795817066837 implements MigrationInterface {
  name = 'McpRequestStateUses1795817066837';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE mcp_request_state_uses (
        nonce text COLLATE "C" PRIMARY KEY,
        expires_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX mcp_request_state_uses_expires_idx ON mcp_request_state_uses (expires_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE mcp_request_state_uses`);
  }
}
