import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Personal API keys (only an HMAC of the key is stored) and their usage log. */
export class ApiKeys1763791000000 implements MigrationInterface {
  name = 'ApiKeys1763791000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        name varchar(100) NOT NULL,
        scopes text[] NOT NULL,
        prefix varchar(8) NOT NULL,
        key_hash bytea NOT NULL,
        project_ids uuid[],
        repos text[],
        expires_at timestamptz,
        revoked_at timestamptz,
        last_used_at timestamptz,
        call_count bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX api_keys_key_hash_key ON api_keys (key_hash)`);
    await queryRunner.query(`CREATE INDEX api_keys_user_idx ON api_keys (user_id, created_at DESC, id DESC)`);
    await queryRunner.query(`
      CREATE TABLE api_key_usage (
        id bigserial PRIMARY KEY,
        api_key_id uuid NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        at timestamptz NOT NULL,
        tool varchar(100),
        status smallint NOT NULL,
        duration_ms integer NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX api_key_usage_key_idx ON api_key_usage (api_key_id, at DESC, id DESC)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE api_key_usage`);
    await queryRunner.query(`DROP TABLE api_keys`);
  }
}
