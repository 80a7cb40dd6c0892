-- A task's view (TaskView in task.model.ts) as the JSON text `JSON.stringify` writes of it, byte for byte: keys in
-- TaskView's order, no spaces, timestamps as Date.prototype.toISOString writes them (UTC, milliseconds), dates as
-- YYYY-MM-DD. The stored generated column tasks.view_json calls it, so the text can never disagree with the row and
-- list_tasks aggregates stored texts instead of rendering rows in Node (docs/perf/ holds the measurements). It stays
-- in PostgreSQL because a generated column can only call a database function.
--
-- IMMUTABLE, which a generated column needs: to_char is only STABLE because of its locale-dependent (TM) patterns,
-- which these formats do not use, and the conversion to UTC names its zone. Replacing the body does not recompute
-- stored rows: a change of the text needs a migration that also rewrites the column (drop and add it again).
--
-- Loaded by migrations (src/database/sql-definitions.ts); a change here needs a new migration that loads it again.
CREATE OR REPLACE FUNCTION task_view_json(
        id uuid, title text, description text, status text, priority text, due_date date,
        assignee_id uuid, creator_id uuid, project_id uuid, created_at timestamptz, updated_at timestamptz
      ) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT row_to_json(v)::text FROM (SELECT
          id, title, description, status, priority,
          to_char(due_date, 'YYYY-MM-DD') AS due_date,
          assignee_id, creator_id, project_id,
          to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
          to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
        ) AS v
      $$;
