import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Projects with their members, project session tokens (atp_…), and documents.
 *
 * Documents keep their original bytes (bytea) so every instance can read them, and their extracted text.
 * The RAG module's `document_chunks.document_id` must reference `documents(id) ON DELETE CASCADE`, so that
 * deleting a document removes its chunks in the same transaction.
 */
export class ProjectsDocuments1763701000000 implements MigrationInterface {
  name = 'ProjectsDocuments1763701000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE projects (
        id uuid PRIMARY KEY,
        name varchar(100) NOT NULL,
        description text NOT NULL DEFAULT '',
        owner_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE project_members (
        project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role varchar(16) NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_id, user_id)
      )`);
    await queryRunner.query(`CREATE INDEX project_members_user_idx ON project_members (user_id, project_id)`);

    await queryRunner.query(`
      CREATE TABLE project_session_tokens (
        id uuid PRIMARY KEY,
        project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        created_by uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        name varchar(100) NOT NULL,
        role varchar(16) NOT NULL CHECK (role IN ('editor', 'viewer')),
        token_hash char(64) NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX project_session_tokens_hash_key ON project_session_tokens (token_hash)`,
    );
    await queryRunner.query(`CREATE INDEX project_session_tokens_project_idx ON project_session_tokens (project_id)`);

    await queryRunner.query(`
      CREATE TABLE documents (
        id uuid PRIMARY KEY,
        project_id uuid REFERENCES projects(id) ON DELETE CASCADE,
        author_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        title varchar(300) NOT NULL,
        mime_type varchar(100) NOT NULL,
        size_bytes integer NOT NULL,
        sha256 char(64) NOT NULL,
        is_public boolean NOT NULL DEFAULT false,
        origin varchar(16) NOT NULL CHECK (origin IN ('upload', 'text')),
        status varchar(16) NOT NULL DEFAULT 'uploaded' CHECK (status IN ('uploaded', 'processing', 'indexed', 'failed')),
        error text,
        content bytea NOT NULL,
        text_content text,
        chunk_count integer NOT NULL DEFAULT 0,
        indexed_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE INDEX documents_project_idx ON documents (project_id, created_at DESC, id DESC)`);
    await queryRunner.query(`CREATE INDEX documents_author_idx ON documents (author_id, created_at DESC, id DESC)`);
    // The same bytes uploaded twice by one author into one project are a conflict; text created by tools is not.
    await queryRunner.query(
      `CREATE UNIQUE INDEX documents_upload_dedup_key ON documents (author_id, project_id, sha256) WHERE origin = 'upload' AND project_id IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE documents`);
    await queryRunner.query(`DROP TABLE project_session_tokens`);
    await queryRunner.query(`DROP TABLE project_members`);
    await queryRunner.query(`DROP TABLE projects`);
  }
}
