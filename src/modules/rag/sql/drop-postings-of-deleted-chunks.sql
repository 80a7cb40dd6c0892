-- A chunk's postings leave with it, in one statement per DELETE: postings carry no foreign key (one referential
-- check per posting on the bulk write path), and are written only by the statement that writes their chunk.
CREATE OR REPLACE FUNCTION rag_chunks_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- An array, not a join: the transition table has no statistics, and a join could be planned as a scan of every posting.
  DELETE FROM rag_postings WHERE chunk_id = ANY (ARRAY(SELECT id FROM removed));
  -- A pending segment's chunks (rag-segments.repository.ts) have theirs in the side table, read by segment.
  IF EXISTS (SELECT 1 FROM removed WHERE segment_id IS NOT NULL) THEN
    DELETE FROM rag_pending_postings
    WHERE segment_id = ANY (ARRAY(SELECT DISTINCT segment_id FROM removed WHERE segment_id IS NOT NULL))
      AND chunk_id = ANY (ARRAY(SELECT id FROM removed WHERE segment_id IS NOT NULL));
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS rag_chunks_drop_postings ON document_chunks;
CREATE TRIGGER rag_chunks_drop_postings AFTER DELETE ON document_chunks REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION rag_chunks_drop_postings();
