import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agent runs may stop before a write tool call until their owner approves or rejects it (API.md, "Agent runs:
 * approvals, streams and webhooks"). The new state `awaiting_approval` holds no worker and no claim: the row
 * alone carries it, so it survives restarts. `awaiting_since` drives AGENT_APPROVAL_TIMEOUT_MS; `paused_ms`
 * adds the time spent waiting to the run's own wall-clock limit, which counts working time only.
 */
export class AgentRunApprovals1764020000000 implements MigrationInterface {
  name = 'AgentRunApprovals1764020000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_status_check`);
    await queryRunner.query(`ALTER TABLE agent_runs ALTER COLUMN status TYPE varchar(32)`);
    await queryRunner.query(
      `ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_status_check CHECK (status IN ('queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'cancelled'))`,
    );
    await queryRunner.query(
      `ALTER TABLE agent_runs ADD COLUMN approval varchar(16) NOT NULL DEFAULT 'none' CHECK (approval IN ('none', 'writes'))`,
    );
    await queryRunner.query(`ALTER TABLE agent_runs ADD COLUMN awaiting_since timestamptz`);
    await queryRunner.query(`ALTER TABLE agent_runs ADD COLUMN paused_ms double precision NOT NULL DEFAULT 0`);
    await queryRunner.query(
      `CREATE INDEX agent_runs_awaiting_idx ON agent_runs (awaiting_since) WHERE status = 'awaiting_approval'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX agent_runs_awaiting_idx`);
    await queryRunner.query(
      `ALTER TABLE agent_runs DROP COLUMN paused_ms, DROP COLUMN awaiting_since, DROP COLUMN approval`,
    );
    await queryRunner.query(`ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_status_check`);
    await queryRunner.query(
      `ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_status_check CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled'))`,
    );
  }
}
