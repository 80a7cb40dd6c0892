import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * MCP sessions of the 2025-era Streamable HTTP door (issued to clients that declared `elicitation`, so a write of a
 * "confirm writes" credential can be confirmed mid-call), kept in PostgreSQL so any instance serves any session.
 * Only a SHA-256 of the `Mcp-Session-Id` is stored. A session belongs to the credential (API key or OAuth grant id)
 * that opened it. `mcp_elicitations` holds the questions waiting for the client's answer: the answer is written
 * once (answered_at IS NULL → set) by whichever instance receives it and consumed once (DELETE … RETURNING) by the
 * instance whose tools/call waits on it; pg_notify only wakes that instance.
 */
export class McpSessions1764210600000 implements MigrationInterface {
  name = 'McpSessions1764210600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE mcp_sessions (
        id_hash bytea PRIMARY KEY,
        credential_id uuid NOT NULL,
        protocol_version text NOT NULL,
        client_capabilities jsonb NOT NULL,
        client_name text NOT NULL,
        client_version text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX mcp_sessions_expires_at_idx ON mcp_sessions (expires_at)`);
    await queryRunner.query(`
      CREATE TABLE mcp_elicitations (
        request_id text PRIMARY KEY,
        session_hash bytea NOT NULL REFERENCES mcp_sessions (id_hash) ON DELETE CASCADE,
        answer jsonb,
        answered_at timestamptz,
        expires_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX mcp_elicitations_session_idx ON mcp_elicitations (session_hash)`);
    await queryRunner.query(`CREATE INDEX mcp_elicitations_expires_at_idx ON mcp_elicitations (expires_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE mcp_elicitations`);
    await queryRunner.query(`DROP TABLE mcp_sessions`);
  }
}
