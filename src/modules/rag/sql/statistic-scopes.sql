-- The BM25 statistic scope of a document (docs/api.md, "Search statistics are per viewer"; RAG README): every chunk
-- belongs to one scope derived from its document, `u:<author>:<project or empty>` for a private document (its
-- author's only) and `p:<project or empty>` for a public one (the project's members, or everyone without a project).
-- Search sums the statistics of the scopes its caller may see (viewerStatScopes in src/common/access/access-rules.ts),
-- so no score depends on a document the caller cannot see. In SQL because the statistics triggers
-- (scope-statistics.sql) and the postings' scope ids are computed inside the statements that write chunks.
--
-- Loaded by migrations (src/database/sql-definitions.ts); a change here needs a new migration that loads it again.
CREATE OR REPLACE FUNCTION rag_stat_scope(is_public boolean, author_id uuid, project_id uuid) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN is_public THEN 'p:' || coalesce(project_id::text, '')
              ELSE 'u:' || author_id::text || ':' || coalesce(project_id::text, '') END
$$;

-- A scope's small integer id (rag_scopes), carried by each posting so keyword search filters postings by the
-- caller's scopes inside the index scan; adds the scope on first use, ids are never reused. Looked up first, so
-- that an existing scope never draws a value from the identity's sequence.
CREATE OR REPLACE FUNCTION rag_scope_id(wanted text) RETURNS integer LANGUAGE plpgsql AS $$
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
END $$;
