import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * RAG: document chunks with embeddings and full-text vectors, a BM25 inverted index, and indexing jobs.
 *
 * Vector column design: `embedding` is an unconstrained `vector`, and every chunk records the vector
 * space it was embedded in (`embedding_model` = provider:model:dimensions, plus `embedding_dims`).
 * HNSW needs a fixed dimension, so the index is a *partial expression* index,
 * `((embedding::vector(N)) vector_cosine_ops) WHERE embedding_dims = N`, one per configured N: the
 * default N = 768 is created here, and the RAG module creates the index for any other configured
 * dimension at start-up (RagSchemaService) before serving. Why not `vector(768)`: changing the provider
 * or dimension would need a migration and a table rewrite before the app could even start; here a new
 * configuration starts, detects chunks of another `embedding_model`, and reindexes them in the
 * background, and vectors of two models are never compared because every query filters on the key.
 *
 * Keyword ranking is BM25 over an inverted index kept in SQL (`rag_postings`: lexeme → chunk, term
 * frequency, chunk length; `rag_lexicon`: document frequency; `rag_corpus_stats`: N and total length),
 * maintained by statement triggers so cascaded deletes keep the statistics exact. `tsv` with its GIN
 * index stays for boolean full-text filtering and ad-hoc use; ts_rank alone measured weaker on SciFact.
 */
export class Rag1763792000000 implements MigrationInterface {
  name = 'Rag1763792000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE document_chunks (
        id uuid PRIMARY KEY,
        document_id uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        chunk_index integer NOT NULL,
        text text NOT NULL,
        start_offset integer NOT NULL,
        end_offset integer NOT NULL,
        content_sha256 char(64) NOT NULL,
        embedding_model varchar(300) NOT NULL,
        embedding_dims integer NOT NULL,
        embedding vector,
        tsv tsvector NOT NULL,
        token_count integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT document_chunks_offsets_check CHECK (start_offset >= 0 AND end_offset >= start_offset),
        CONSTRAINT document_chunks_document_index_key UNIQUE (document_id, chunk_index)
      )`);
    await queryRunner.query(`CREATE INDEX document_chunks_tsv_idx ON document_chunks USING gin (tsv)`);
    await queryRunner.query(`CREATE INDEX document_chunks_model_idx ON document_chunks (embedding_model)`);
    await queryRunner.query(
      `CREATE INDEX document_chunks_embedding_hnsw_768 ON document_chunks USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE embedding_dims = 768`,
    );

    await queryRunner.query(`
      CREATE TABLE rag_postings (
        lexeme text NOT NULL,
        chunk_id uuid NOT NULL REFERENCES document_chunks(id) ON DELETE CASCADE,
        document_id uuid NOT NULL,
        tf integer NOT NULL,
        dl integer NOT NULL,
        PRIMARY KEY (lexeme, chunk_id) INCLUDE (document_id, tf, dl)
      )`);
    await queryRunner.query(`CREATE INDEX rag_postings_chunk_idx ON rag_postings (chunk_id)`);
    await queryRunner.query(`CREATE TABLE rag_lexicon (lexeme text PRIMARY KEY, df integer NOT NULL)`);
    await queryRunner.query(`
      CREATE TABLE rag_corpus_stats (
        id smallint PRIMARY KEY CHECK (id = 1),
        chunk_count bigint NOT NULL,
        total_tokens bigint NOT NULL
      )`);
    await queryRunner.query(`INSERT INTO rag_corpus_stats (id, chunk_count, total_tokens) VALUES (1, 0, 0)`);
    // Rows are locked in lexeme order so concurrent writers cannot deadlock on the lexicon.
    await queryRunner.query(`
      CREATE FUNCTION rag_postings_added() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO rag_lexicon (lexeme, df)
          SELECT lexeme, count(*) FROM added GROUP BY lexeme ORDER BY lexeme
          ON CONFLICT (lexeme) DO UPDATE SET df = rag_lexicon.df + EXCLUDED.df;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION rag_postings_removed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO rag_lexicon (lexeme, df)
          SELECT lexeme, -count(*) FROM removed GROUP BY lexeme ORDER BY lexeme
          ON CONFLICT (lexeme) DO UPDATE SET df = rag_lexicon.df + EXCLUDED.df;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION rag_chunks_added() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE rag_corpus_stats SET chunk_count = chunk_count + s.n, total_tokens = total_tokens + s.t
          FROM (SELECT count(*) AS n, coalesce(sum(token_count), 0) AS t FROM added) s WHERE id = 1 AND s.n > 0;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION rag_chunks_removed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE rag_corpus_stats SET chunk_count = chunk_count - s.n, total_tokens = total_tokens - s.t
          FROM (SELECT count(*) AS n, coalesce(sum(token_count), 0) AS t FROM removed) s WHERE id = 1 AND s.n > 0;
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER rag_postings_added AFTER INSERT ON rag_postings REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION rag_postings_added()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER rag_postings_removed AFTER DELETE ON rag_postings REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION rag_postings_removed()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER rag_chunks_added AFTER INSERT ON document_chunks REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION rag_chunks_added()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER rag_chunks_removed AFTER DELETE ON document_chunks REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION rag_chunks_removed()`,
    );

    await queryRunner.query(`
      CREATE TABLE indexing_jobs (
        id uuid PRIMARY KEY,
        project_id uuid REFERENCES projects(id) ON DELETE CASCADE,
        created_by uuid REFERENCES users(id) ON DELETE SET NULL,
        kind varchar(16) NOT NULL CHECK (kind IN ('ingest', 'reindex')),
        status varchar(16) NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        document_ids uuid[] NOT NULL,
        total integer NOT NULL DEFAULT 0,
        done integer NOT NULL DEFAULT 0,
        failed integer NOT NULL DEFAULT 0,
        errors jsonb NOT NULL DEFAULT '[]'::jsonb,
        error text,
        trace_id varchar(128),
        attempts integer NOT NULL DEFAULT 0,
        heartbeat_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz
      )`);
    await queryRunner.query(
      `CREATE INDEX indexing_jobs_project_idx ON indexing_jobs (project_id, created_at DESC, id DESC)`,
    );
    await queryRunner.query(
      `CREATE INDEX indexing_jobs_open_idx ON indexing_jobs (status) WHERE status IN ('queued', 'running')`,
    );
    // One reindex per project at a time: a second one is a unique violation, answered 409 STATE_CONFLICT.
    await queryRunner.query(
      `CREATE UNIQUE INDEX indexing_jobs_one_reindex_key ON indexing_jobs (project_id) WHERE kind = 'reindex' AND status IN ('queued', 'running')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE indexing_jobs`);
    await queryRunner.query(`DROP TABLE rag_postings`);
    await queryRunner.query(`DROP TABLE document_chunks`);
    await queryRunner.query(`DROP TABLE rag_lexicon`);
    await queryRunner.query(`DROP TABLE rag_corpus_stats`);
    await queryRunner.query(
      `DROP FUNCTION rag_postings_added(), rag_postings_removed(), rag_chunks_added(), rag_chunks_removed()`,
    );
  }
}
