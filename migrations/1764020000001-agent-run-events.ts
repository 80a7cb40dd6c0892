import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event log behind `GET /api/agent/stream/:jobId` (API.md, "Agent runs: approvals, streams and webhooks").
 *
 * A trigger on `agent_runs` records, in the same transaction as the change, one `step` event per step that
 * appeared or changed and one `status` event per status change, numbered per run (`seq`, the SSE id). Every
 * writer of a run (runner, cancel, approve, sweeps) is covered without having to remember it, and numbering is
 * commit-ordered because updates of one run serialise on its row lock: a reader resuming after `seq` N never
 * misses an event that commits later with a smaller number. The trigger also `pg_notify`s the run id (delivered
 * at commit) so open streams on any instance re-read at once. Only changed steps are compared; heartbeats
 * (no step or status change) record nothing.
 */
export class AgentRunEvents1764020000001 implements MigrationInterface {
  name = 'AgentRunEvents1764020000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE agent_runs ADD COLUMN event_seq int NOT NULL DEFAULT 0`);
    await queryRunner.query(`
      CREATE TABLE agent_run_events (
        run_id uuid NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
        seq int NOT NULL,
        type varchar(16) NOT NULL CHECK (type IN ('step', 'status')),
        data jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, seq)
      )`);
    await queryRunner.query(`
      CREATE FUNCTION agent_run_events_record() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        seq int := CASE WHEN TG_OP = 'INSERT' THEN 0 ELSE OLD.event_seq END;
        first_seq int := seq;
        i int;
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.steps IS DISTINCT FROM OLD.steps THEN
          FOR i IN 0 .. jsonb_array_length(NEW.steps) - 1 LOOP
            IF TG_OP = 'INSERT' OR OLD.steps -> i IS DISTINCT FROM NEW.steps -> i THEN
              seq := seq + 1;
              INSERT INTO agent_run_events (run_id, seq, type, data) VALUES (NEW.id, seq, 'step', NEW.steps -> i);
            END IF;
          END LOOP;
        END IF;
        IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status THEN
          seq := seq + 1;
          INSERT INTO agent_run_events (run_id, seq, type, data) VALUES (NEW.id, seq, 'status', jsonb_build_object('status', NEW.status));
        END IF;
        IF seq <> first_seq THEN
          NEW.event_seq := seq;
          PERFORM pg_notify('agent_run_events', NEW.id::text);
        END IF;
        RETURN NEW;
      END
      $fn$`);
    await queryRunner.query(
      `CREATE TRIGGER agent_run_events_record BEFORE INSERT OR UPDATE ON agent_runs FOR EACH ROW EXECUTE FUNCTION agent_run_events_record()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER agent_run_events_record ON agent_runs`);
    await queryRunner.query(`DROP FUNCTION agent_run_events_record()`);
    await queryRunner.query(`DROP TABLE agent_run_events`);
    await queryRunner.query(`ALTER TABLE agent_runs DROP COLUMN event_seq`);
  }
}
