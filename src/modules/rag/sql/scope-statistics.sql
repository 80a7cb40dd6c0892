-- Keeps the BM25 statistics of each statistic scope (statistic-scopes.sql) exact in the same transaction as every
-- change of chunks: rag_scope_stats (chunk count and token total per scope) and rag_scope_lexicon (document
-- frequency per scope and lexeme). Triggers, because chunks are also removed by cascades (a deleted document or
-- project) that no application code sees, and a document that changes visibility moves its chunks and postings to
-- the new scope in the same statement. Locks are taken in scope/lexeme order in one statement per table
-- (ORDER BY below), so concurrent writers cannot deadlock.
--
-- Loaded by migrations (src/database/sql-definitions.ts); a change here needs a new migration that loads it again.

-- A chunk gets its document's scope when it is written.
CREATE OR REPLACE FUNCTION rag_chunk_stamp_scope() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT rag_stat_scope(d.is_public, d.author_id, d.project_id) INTO NEW.stat_scope FROM documents d WHERE d.id = NEW.document_id;
  RETURN NEW;
END $$;

-- One function for every change of chunks: the rows that enter a scope count +1, the rows that leave one -1.
CREATE OR REPLACE FUNCTION rag_scope_statistics_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    WITH delta AS (SELECT stat_scope AS scope, 1 AS sign, token_count, tsv FROM added)
    INSERT INTO rag_scope_stats AS s (scope, chunk_count, total_tokens)
      SELECT scope, sum(sign), sum(sign * token_count) FROM delta GROUP BY scope ORDER BY scope
      ON CONFLICT (scope) DO UPDATE SET chunk_count = s.chunk_count + EXCLUDED.chunk_count, total_tokens = s.total_tokens + EXCLUDED.total_tokens;
    WITH delta AS (SELECT stat_scope AS scope, 1 AS sign, token_count, tsv FROM added)
    INSERT INTO rag_scope_lexicon AS l (scope, lexeme, df)
      SELECT d.scope, u.lexeme, sum(d.sign) FROM delta d, unnest(d.tsv) u GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (scope, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df;
  ELSIF TG_OP = 'DELETE' THEN
    WITH delta AS (SELECT stat_scope AS scope, -1 AS sign, token_count, tsv FROM removed)
    INSERT INTO rag_scope_stats AS s (scope, chunk_count, total_tokens)
      SELECT scope, sum(sign), sum(sign * token_count) FROM delta GROUP BY scope ORDER BY scope
      ON CONFLICT (scope) DO UPDATE SET chunk_count = s.chunk_count + EXCLUDED.chunk_count, total_tokens = s.total_tokens + EXCLUDED.total_tokens;
    WITH delta AS (SELECT stat_scope AS scope, -1 AS sign, token_count, tsv FROM removed)
    INSERT INTO rag_scope_lexicon AS l (scope, lexeme, df)
      SELECT d.scope, u.lexeme, sum(d.sign) FROM delta d, unnest(d.tsv) u GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (scope, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df;
  ELSE
    -- An UPDATE: only chunks whose scope changed move, out of the old scope and into the new one.
    WITH delta AS (SELECT n.stat_scope AS scope, 1 AS sign, n.token_count, n.tsv FROM added n JOIN removed o ON o.id = n.id WHERE o.stat_scope <> n.stat_scope
                   UNION ALL
                   SELECT o.stat_scope, -1, o.token_count, o.tsv FROM removed o JOIN added n ON n.id = o.id WHERE o.stat_scope <> n.stat_scope)
    INSERT INTO rag_scope_stats AS s (scope, chunk_count, total_tokens)
      SELECT scope, sum(sign), sum(sign * token_count) FROM delta GROUP BY scope ORDER BY scope
      ON CONFLICT (scope) DO UPDATE SET chunk_count = s.chunk_count + EXCLUDED.chunk_count, total_tokens = s.total_tokens + EXCLUDED.total_tokens;
    WITH delta AS (SELECT n.stat_scope AS scope, 1 AS sign, n.token_count, n.tsv FROM added n JOIN removed o ON o.id = n.id WHERE o.stat_scope <> n.stat_scope
                   UNION ALL
                   SELECT o.stat_scope, -1, o.token_count, o.tsv FROM removed o JOIN added n ON n.id = o.id WHERE o.stat_scope <> n.stat_scope)
    INSERT INTO rag_scope_lexicon AS l (scope, lexeme, df)
      SELECT d.scope, u.lexeme, sum(d.sign) FROM delta d, unnest(d.tsv) u GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (scope, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df;
  END IF;
  RETURN NULL;
END $$;

-- A document that changes visibility moves its chunks (and so their statistics) and its postings to the new scope.
CREATE OR REPLACE FUNCTION rag_document_scope_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  moved_to text := rag_stat_scope(NEW.is_public, NEW.author_id, NEW.project_id);
  moved_to_id integer := rag_scope_id(moved_to);
BEGIN
  UPDATE document_chunks SET stat_scope = moved_to WHERE document_id = NEW.id;
  UPDATE rag_postings p SET scope_id = moved_to_id
  FROM document_chunks c WHERE c.document_id = NEW.id AND p.chunk_id = c.id;
  -- Postings of a pending segment (rag-segments.repository.ts) are in the side table, found by document.
  IF EXISTS (SELECT 1 FROM rag_segments WHERE document_id = NEW.id) THEN
    UPDATE rag_pending_postings SET scope_id = moved_to_id WHERE document_id = NEW.id;
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS rag_chunk_stamp_scope ON document_chunks;
CREATE TRIGGER rag_chunk_stamp_scope BEFORE INSERT ON document_chunks
  FOR EACH ROW WHEN (NEW.stat_scope IS NULL) EXECUTE FUNCTION rag_chunk_stamp_scope();
DROP TRIGGER IF EXISTS rag_chunks_added ON document_chunks;
CREATE TRIGGER rag_chunks_added AFTER INSERT ON document_chunks REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION rag_scope_statistics_apply();
DROP TRIGGER IF EXISTS rag_chunks_removed ON document_chunks;
CREATE TRIGGER rag_chunks_removed AFTER DELETE ON document_chunks REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION rag_scope_statistics_apply();
DROP TRIGGER IF EXISTS rag_chunks_moved ON document_chunks;
CREATE TRIGGER rag_chunks_moved AFTER UPDATE ON document_chunks REFERENCING OLD TABLE AS removed NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION rag_scope_statistics_apply();
DROP TRIGGER IF EXISTS rag_document_scope_changed ON documents;
CREATE TRIGGER rag_document_scope_changed AFTER UPDATE OF is_public, author_id, project_id ON documents FOR EACH ROW
  WHEN (rag_stat_scope(OLD.is_public, OLD.author_id, OLD.project_id) IS DISTINCT FROM rag_stat_scope(NEW.is_public, NEW.author_id, NEW.project_id))
  EXECUTE FUNCTION rag_document_scope_changed();
