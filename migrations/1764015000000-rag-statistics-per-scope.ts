import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * BM25 statistics per visibility scope instead of one global set (API.md, "Search statistics are per viewer").
 *
 * With one global document frequency per word, a caller's keyword score for a word moved when somebody else's
 * private document contained it: anyone could test whether a word appears in anybody's private documents.
 * Now every chunk belongs to one statistic scope, derived from its document:
 *
 * - `u:<author>:<project or empty>` for a private document (visible to its author only);
 * - `p:<project or empty>` for a public one (visible to the project's members, or to everyone without a project).
 *
 * `rag_scope_stats` keeps each scope's chunk count and token total, `rag_scope_lexicon` each scope's document
 * frequency per lexeme. A search sums the scopes its caller may see (RagSearchService), so N, avgdl, every df
 * and so every score are functions of the query and the caller's visible documents only. A few index probes
 * per query term and scope replace the one global lookup.
 *
 * Maintenance stays in the database, exact under cascades: a BEFORE INSERT trigger stamps a chunk with its
 * document's scope, statement triggers add and subtract chunks, and a document that changes visibility
 * (is_public) moves its chunks to the new scope in the same transaction. Locks are taken in scope/lexeme order
 * in one statement per table, so concurrent writers cannot deadlock. Scope values compare bytewise (COLLATE
 * "C") so a caller's private scopes are one index range.
 */
export class RagStatisticsPerScope1764015000000 implements MigrationInterface {
  name = 'RagStatisticsPerScope1764015000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Stamping and counting every existing chunk can outlast the pool's statement timeout on a large index.
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`
      CREATE FUNCTION rag_stat_scope(is_public boolean, author_id uuid, project_id uuid) RETURNS text
      LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE WHEN is_public THEN 'p:' || coalesce(project_id::text, '')
                    ELSE 'u:' || author_id::text || ':' || coalesce(project_id::text, '') END
      $$`);
    await queryRunner.query(`ALTER TABLE document_chunks ADD COLUMN stat_scope text COLLATE "C"`);
    await queryRunner.query(`
      UPDATE document_chunks c SET stat_scope = rag_stat_scope(d.is_public, d.author_id, d.project_id)
      FROM documents d WHERE d.id = c.document_id`);
    await queryRunner.query(`ALTER TABLE document_chunks ALTER COLUMN stat_scope SET NOT NULL`);

    await queryRunner.query(`
      CREATE TABLE rag_scope_stats (
        scope text COLLATE "C" PRIMARY KEY,
        chunk_count bigint NOT NULL,
        total_tokens bigint NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE rag_scope_lexicon (
        scope text COLLATE "C" NOT NULL,
        lexeme text NOT NULL,
        df integer NOT NULL,
        PRIMARY KEY (scope, lexeme)
      )`);
    await queryRunner.query(`
      INSERT INTO rag_scope_stats (scope, chunk_count, total_tokens)
      SELECT stat_scope, count(*), coalesce(sum(token_count), 0) FROM document_chunks GROUP BY stat_scope`);
    await queryRunner.query(`
      INSERT INTO rag_scope_lexicon (scope, lexeme, df)
      SELECT c.stat_scope, u.lexeme, count(*) FROM document_chunks c, unnest(c.tsv) u GROUP BY 1, 2`);

    // The global statistics and their triggers go.
    await queryRunner.query(`DROP TRIGGER rag_postings_added ON rag_postings`);
    await queryRunner.query(`DROP TRIGGER rag_postings_removed ON rag_postings`);
    await queryRunner.query(`DROP TRIGGER rag_chunks_added ON document_chunks`);
    await queryRunner.query(`DROP TRIGGER rag_chunks_removed ON document_chunks`);
    await queryRunner.query(
      `DROP FUNCTION rag_postings_added(), rag_postings_removed(), rag_chunks_added(), rag_chunks_removed()`,
    );
    await queryRunner.query(`DROP TABLE rag_lexicon`);
    await queryRunner.query(`DROP TABLE rag_corpus_stats`);

    await queryRunner.query(`
      CREATE FUNCTION rag_chunk_stamp_scope() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        SELECT rag_stat_scope(d.is_public, d.author_id, d.project_id) INTO NEW.stat_scope FROM documents d WHERE d.id = NEW.document_id;
        RETURN NEW;
      END $$`);
    // One function for every change: the rows that enter a scope count +1, the rows that leave one -1.
    const inserted = `SELECT stat_scope AS scope, 1 AS sign, token_count, tsv FROM added`;
    const deleted = `SELECT stat_scope AS scope, -1 AS sign, token_count, tsv FROM removed`;
    const moved = `SELECT n.stat_scope AS scope, 1 AS sign, n.token_count, n.tsv FROM added n JOIN removed o ON o.id = n.id WHERE o.stat_scope <> n.stat_scope
                   UNION ALL
                   SELECT o.stat_scope, -1, o.token_count, o.tsv FROM removed o JOIN added n ON n.id = o.id WHERE o.stat_scope <> n.stat_scope`;
    await queryRunner.query(`
      CREATE FUNCTION rag_scope_statistics_apply() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN ${applyDeltaSql(inserted)}
        ELSIF TG_OP = 'DELETE' THEN ${applyDeltaSql(deleted)}
        ELSE ${applyDeltaSql(moved)}
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION rag_document_scope_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE document_chunks SET stat_scope = rag_stat_scope(NEW.is_public, NEW.author_id, NEW.project_id) WHERE document_id = NEW.id;
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER rag_chunk_stamp_scope BEFORE INSERT ON document_chunks FOR EACH ROW EXECUTE FUNCTION rag_chunk_stamp_scope()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER rag_chunks_added AFTER INSERT ON document_chunks REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION rag_scope_statistics_apply()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER rag_chunks_removed AFTER DELETE ON document_chunks REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION rag_scope_statistics_apply()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER rag_chunks_moved AFTER UPDATE ON document_chunks REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION rag_scope_statistics_apply()`,
    );
    await queryRunner.query(`
      CREATE TRIGGER rag_document_scope_changed AFTER UPDATE OF is_public, author_id, project_id ON documents FOR EACH ROW
      WHEN (rag_stat_scope(OLD.is_public, OLD.author_id, OLD.project_id) IS DISTINCT FROM rag_stat_scope(NEW.is_public, NEW.author_id, NEW.project_id))
      EXECUTE FUNCTION rag_document_scope_changed()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`DROP TRIGGER rag_document_scope_changed ON documents`);
    await queryRunner.query(`DROP TRIGGER rag_chunks_moved ON document_chunks`);
    await queryRunner.query(`DROP TRIGGER rag_chunks_removed ON document_chunks`);
    await queryRunner.query(`DROP TRIGGER rag_chunks_added ON document_chunks`);
    await queryRunner.query(`DROP TRIGGER rag_chunk_stamp_scope ON document_chunks`);
    await queryRunner.query(
      `DROP FUNCTION rag_document_scope_changed(), rag_scope_statistics_apply(), rag_chunk_stamp_scope()`,
    );
    await queryRunner.query(`CREATE TABLE rag_lexicon (lexeme text PRIMARY KEY, df integer NOT NULL)`);
    await queryRunner.query(`INSERT INTO rag_lexicon SELECT lexeme, sum(df) FROM rag_scope_lexicon GROUP BY lexeme`);
    await queryRunner.query(
      `CREATE TABLE rag_corpus_stats (id smallint PRIMARY KEY CHECK (id = 1), chunk_count bigint NOT NULL, total_tokens bigint NOT NULL)`,
    );
    await queryRunner.query(
      `INSERT INTO rag_corpus_stats SELECT 1, coalesce(sum(chunk_count), 0), coalesce(sum(total_tokens), 0) FROM rag_scope_stats`,
    );
    await queryRunner.query(`
      CREATE FUNCTION rag_postings_added() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO rag_lexicon (lexeme, df) SELECT lexeme, count(*) FROM added GROUP BY lexeme ORDER BY lexeme
          ON CONFLICT (lexeme) DO UPDATE SET df = rag_lexicon.df + EXCLUDED.df;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION rag_postings_removed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO rag_lexicon (lexeme, df) SELECT lexeme, -count(*) FROM removed GROUP BY lexeme ORDER BY lexeme
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
    await queryRunner.query(`DROP TABLE rag_scope_lexicon`);
    await queryRunner.query(`DROP TABLE rag_scope_stats`);
    await queryRunner.query(`ALTER TABLE document_chunks DROP COLUMN stat_scope`);
    await queryRunner.query(`DROP FUNCTION rag_stat_scope(boolean, uuid, uuid)`);
  }
}

/** Adds a delta of chunks (`scope, sign, token_count, tsv`) to both statistics tables, each in scope/lexeme order. */
function applyDeltaSql(delta: string): string {
  return `
          WITH delta AS (${delta})
          INSERT INTO rag_scope_stats AS s (scope, chunk_count, total_tokens)
            SELECT scope, sum(sign), sum(sign * token_count) FROM delta GROUP BY scope ORDER BY scope
            ON CONFLICT (scope) DO UPDATE SET chunk_count = s.chunk_count + EXCLUDED.chunk_count, total_tokens = s.total_tokens + EXCLUDED.total_tokens;
          WITH delta AS (${delta})
          INSERT INTO rag_scope_lexicon AS l (scope, lexeme, df)
            SELECT d.scope, u.lexeme, sum(d.sign) FROM delta d, unnest(d.tsv) u GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (scope, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df;`;
}
