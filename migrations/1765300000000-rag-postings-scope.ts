import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each BM25 posting carries the statistic scope of its chunk (`scope_id`, a small integer for the scope's text
 * `rag_stat_scope(…)`, kept in `rag_scopes`), included in `rag_postings_impact_idx`, so keyword search filters the
 * postings it reads by the caller's scopes with an integer comparison inside the index-only scan, instead of
 * probing a hash of every visible document per posting (RAG README, issue 15 session 11: at 100k chunks building
 * and probing that hash was ~1.3 ms of a ~3.7 ms keyword statement).
 *
 * `rag_scope_id(scope)` gives a scope's id, adding the scope on first use; ids are never reused. A chunk's
 * postings get the id of its document's scope when they are written (in the same statement as the chunk, under
 * the chunk writer's lock on the document row), and `rag_document_scope_changed` now moves the postings with their
 * chunks when a document changes visibility, in the same transaction.
 *
 * The postings are copied into a new table with the column (one pass; an UPDATE of every row would leave every
 * index and the heap twice their size until a VACUUM FULL), then the keys and indexes of the old table are built
 * again under the same names. Measured on the 100k-chunk bench database (9.2 million postings): ~40 s, during
 * which keyword search and indexing wait (the old table's exclusive lock); run it in a quiet window.
 */
export class RagPostingsScope1765300000000 implements MigrationInterface {
  name = 'RagPostingsScope1765300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`
      CREATE TABLE rag_scopes (
        id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        scope text COLLATE "C" NOT NULL UNIQUE
      )`);
    // Looked up first, so that an existing scope never draws a value from the identity's sequence.
    await queryRunner.query(`
      CREATE FUNCTION rag_scope_id(wanted text) RETURNS integer LANGUAGE plpgsql AS $$
      DECLARE
        found integer;
      BEGIN
        SELECT s.id INTO found FROM rag_scopes s WHERE s.scope = wanted;
        IF found IS NULL THEN
          INSERT INTO rag_scopes (scope) VALUES (wanted) ON CONFLICT (scope) DO NOTHING RETURNING id INTO found;
          -- A concurrent transaction added it first (ON CONFLICT waited for its commit): read its id.
          IF found IS NULL THEN
            SELECT s.id INTO found FROM rag_scopes s WHERE s.scope = wanted;
          END IF;
        END IF;
        RETURN found;
      END $$`);
    await queryRunner.query(
      `INSERT INTO rag_scopes (scope) SELECT DISTINCT stat_scope FROM document_chunks ORDER BY 1`,
    );

    await queryRunner.query(`
      CREATE TABLE rag_postings_scoped (
        lexeme text NOT NULL,
        chunk_id uuid NOT NULL,
        document_id uuid NOT NULL,
        tf integer NOT NULL,
        dl integer NOT NULL,
        scope_id integer NOT NULL
      )`);
    await queryRunner.query(`
      INSERT INTO rag_postings_scoped (lexeme, chunk_id, document_id, tf, dl, scope_id)
      SELECT p.lexeme, p.chunk_id, p.document_id, p.tf, p.dl, s.id
      FROM rag_postings p JOIN document_chunks c ON c.id = p.chunk_id JOIN rag_scopes s ON s.scope = c.stat_scope`);
    await queryRunner.query(`DROP TABLE rag_postings`);
    await queryRunner.query(`ALTER TABLE rag_postings_scoped RENAME TO rag_postings`);
    await queryRunner.query(
      `ALTER TABLE rag_postings ADD CONSTRAINT rag_postings_pkey PRIMARY KEY (lexeme, chunk_id) INCLUDE (document_id, tf, dl)`,
    );
    await queryRunner.query(
      `ALTER TABLE rag_postings ADD CONSTRAINT rag_postings_chunk_id_fkey FOREIGN KEY (chunk_id) REFERENCES document_chunks(id) ON DELETE CASCADE`,
    );
    await queryRunner.query(`CREATE INDEX rag_postings_chunk_idx ON rag_postings (chunk_id)`);
    // The expression must stay identical to POSTING_IMPACT_SQL (rag.constants.ts), as in migration 1763795000000.
    await queryRunner.query(
      `CREATE INDEX rag_postings_impact_idx ON rag_postings
         (lexeme, (tf::float8 / (tf::float8 + 0.3::float8 + 0.009::float8 * dl::float8)) DESC)
         INCLUDE (chunk_id, document_id, tf, dl, scope_id)`,
    );
    // The planner's estimate of postings per term (migration 1764330000000) belongs to the column, which is new.
    await queryRunner.query(`ALTER TABLE rag_postings ALTER COLUMN lexeme SET (n_distinct = -0.0005)`);
    await queryRunner.query(`ANALYZE rag_postings`);

    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION rag_document_scope_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        moved_to text := rag_stat_scope(NEW.is_public, NEW.author_id, NEW.project_id);
        moved_to_id integer := rag_scope_id(moved_to);
      BEGIN
        UPDATE document_chunks SET stat_scope = moved_to WHERE document_id = NEW.id;
        UPDATE rag_postings p SET scope_id = moved_to_id
        FROM document_chunks c WHERE c.document_id = NEW.id AND p.chunk_id = c.id;
        RETURN NULL;
      END $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION rag_document_scope_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE document_chunks SET stat_scope = rag_stat_scope(NEW.is_public, NEW.author_id, NEW.project_id) WHERE document_id = NEW.id;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`DROP INDEX rag_postings_impact_idx`);
    await queryRunner.query(`ALTER TABLE rag_postings DROP COLUMN scope_id`);
    await queryRunner.query(
      `CREATE INDEX rag_postings_impact_idx ON rag_postings
         (lexeme, (tf::float8 / (tf::float8 + 0.3::float8 + 0.009::float8 * dl::float8)) DESC)
         INCLUDE (chunk_id, document_id, tf, dl)`,
    );
    await queryRunner.query(`DROP FUNCTION rag_scope_id(text)`);
    await queryRunner.query(`DROP TABLE rag_scopes`);
  }
}
