import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Atrium as the OAuth 2.1 authorization server of its MCP endpoint: registered clients, grants (an
 * authorised client of one user, with the scopes and pins chosen at consent, counted like an API key),
 * authorization codes and tokens. Secrets (client secrets, codes, tokens) are stored only as HMACs.
 */
export class OAuth1764018000000 implements MigrationInterface {
  name = 'OAuth1764018000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE oauth_clients (
        client_id varchar(64) PRIMARY KEY,
        client_secret_hash bytea,
        client_name varchar(200),
        redirect_uris text[] NOT NULL,
        token_endpoint_auth_method varchar(32) NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE oauth_grants (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        client_id text NOT NULL,
        client_name varchar(200) NOT NULL,
        redirect_uri text NOT NULL,
        resource text NOT NULL,
        scopes text[] NOT NULL,
        project_ids uuid[],
        repos text[],
        expires_at timestamptz,
        revoked_at timestamptz,
        last_used_at timestamptz,
        call_count bigint NOT NULL DEFAULT 0,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE INDEX oauth_grants_user_idx ON oauth_grants (user_id, created_at DESC, id DESC)`);
    await queryRunner.query(`
      CREATE TABLE oauth_grant_usage (
        id bigserial PRIMARY KEY,
        grant_id uuid NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
        at timestamptz NOT NULL,
        tool varchar(100),
        status smallint NOT NULL,
        duration_ms integer NOT NULL
      )`);
    await queryRunner.query(
      `CREATE INDEX oauth_grant_usage_grant_idx ON oauth_grant_usage (grant_id, at DESC, id DESC)`,
    );
    // A code carries what the user approved; the grant is created when it is exchanged (grant_id set then).
    await queryRunner.query(`
      CREATE TABLE oauth_codes (
        code_hash bytea PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        client_id text NOT NULL,
        client_name varchar(200) NOT NULL,
        redirect_uri text NOT NULL,
        code_challenge varchar(128) NOT NULL,
        resource text NOT NULL,
        scopes text[] NOT NULL,
        project_ids uuid[],
        repos text[],
        grant_expires_at timestamptz,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        grant_id uuid REFERENCES oauth_grants(id) ON DELETE CASCADE
      )`);
    await queryRunner.query(`CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires_at)`);
    await queryRunner.query(`
      CREATE TABLE oauth_tokens (
        token_hash bytea PRIMARY KEY,
        grant_id uuid NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
        kind varchar(8) NOT NULL CHECK (kind IN ('access', 'refresh')),
        expires_at timestamptz,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE oauth_tokens`);
    await queryRunner.query(`DROP TABLE oauth_codes`);
    await queryRunner.query(`DROP TABLE oauth_grant_usage`);
    await queryRunner.query(`DROP TABLE oauth_grants`);
    await queryRunner.query(`DROP TABLE oauth_clients`);
  }
}
