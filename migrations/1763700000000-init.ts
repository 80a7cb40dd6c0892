import type { MigrationInterface, QueryRunner } from 'typeorm';

/** pgvector, users and the shared idempotency record. */
export class Init1763700000000 implements MigrationInterface {
  name = 'Init1763700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE EXTENSION IF NOT EXISTS vector`);
    await queryRunner.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        email varchar(320) NOT NULL,
        name varchar(100) NOT NULL,
        password_hash varchar(255) NOT NULL,
        role varchar(16) NOT NULL DEFAULT 'member' CHECK (role IN ('admin', 'member')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX users_email_key ON users (lower(email))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE users`);
    await queryRunner.query(`DROP EXTENSION IF EXISTS vector`);
  }
}
