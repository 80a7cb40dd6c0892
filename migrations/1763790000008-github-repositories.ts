import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Repositories an admin registered for the GitHub tools; the optional token is stored encrypted. */
export class GithubRepositories1763790000008 implements MigrationInterface {
  name = 'GithubRepositories1763790000008';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE github_repositories (
        id uuid PRIMARY KEY,
        owner varchar(100) NOT NULL,
        name varchar(100) NOT NULL,
        full_name varchar(201) NOT NULL,
        github_id bigint NOT NULL,
        default_branch varchar(255) NOT NULL,
        description text,
        is_private boolean NOT NULL DEFAULT false,
        token_ciphertext text,
        created_by uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX github_repositories_full_name_key ON github_repositories (lower(full_name))`,
    );
    await queryRunner.query(
      `CREATE INDEX github_repositories_created_idx ON github_repositories (created_at DESC, id DESC)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE github_repositories`);
  }
}
