import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agent runs. The row is the truth users read (status, ordered steps, output, error); BullMQ only
 * carries "run X". `claim_token` fences a run to the one worker that claimed it, and `heartbeat_at`
 * tells a live worker from a dead one.
 */
export class AgentRuns1763793000000 implements MigrationInterface {
  name = 'AgentRuns1763793000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE agent_runs (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        project_id uuid NOT NULL,
        status varchar(16) NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        input text NOT NULL,
        output text,
        error text,
        steps jsonb NOT NULL DEFAULT '[]'::jsonb,
        provider varchar(64) NOT NULL,
        model varchar(200) NOT NULL,
        tools text[],
        scopes text[] NOT NULL DEFAULT '{}',
        actor jsonb NOT NULL,
        max_steps int NOT NULL,
        cancel_requested boolean NOT NULL DEFAULT false,
        claim_token uuid,
        heartbeat_at timestamptz,
        attempts int NOT NULL DEFAULT 0,
        trace_id varchar(128),
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz
      )`);
    await queryRunner.query(`CREATE INDEX agent_runs_user_idx ON agent_runs (user_id, created_at DESC, id DESC)`);
    await queryRunner.query(
      `CREATE INDEX agent_runs_active_idx ON agent_runs (status, heartbeat_at) WHERE status IN ('queued', 'running')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE agent_runs`);
  }
}
