import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each task carries its Area A view (`TaskView`) as JSON text, written by PostgreSQL whenever the row is written
 * (a stored generated column, so it can never disagree with the row: every INSERT and UPDATE, the foreign keys'
 * SET NULL included, computes it again). list_tasks, the gateway's hot path, then aggregates 50 stored texts into
 * its answer instead of sending 51 rows of 11 values that Node parsed (dates by regular expression), turned into
 * views and serialized again: that was about half of the gateway's Node time per call (issue 22). Rendering the
 * views at read time instead (json aggregation and `to_char` in the list statement) moved ~0.4 ms a call into
 * PostgreSQL; stored, a list costs PostgreSQL about what the plain rows did.
 *
 * The text is what `JSON.stringify` writes of the view, byte for byte (keys in TaskView's order, no spaces;
 * timestamps as `Date.prototype.toISOString` writes them: UTC, milliseconds truncated; dates as YYYY-MM-DD), and
 * every task statement reads it, so all doors show the same text (tool-api.e2e asserts both). The function is
 * declared IMMUTABLE, which a generated column needs: `to_char` is only STABLE because of its locale-dependent
 * (TM) patterns, which these formats do not use, and the conversion to UTC names its zone.
 *
 * Adding a stored column rewrites the table once (an exclusive lock for the duration: ~2 s per 100k tasks).
 */
export class TaskViewJson1765200000000 implements MigrationInterface {
  name = 'TaskViewJson1765200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL statement_timeout = 0`);
    await queryRunner.query(`
      CREATE FUNCTION task_view_json(
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
      $$`);
    await queryRunner.query(`
      ALTER TABLE tasks ADD COLUMN view_json text NOT NULL GENERATED ALWAYS AS (
        task_view_json(id, title, description, status, priority, due_date, assignee_id, creator_id, project_id, created_at, updated_at)
      ) STORED`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE tasks DROP COLUMN view_json`);
    await queryRunner.query(`DROP FUNCTION task_view_json`);
  }
}
