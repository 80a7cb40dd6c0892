import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fair shares between users: a worker picks the next job of a kind by who has the fewest running jobs and was
 * served longest ago (ClaimableJobsRepository.claimNext), so each job row records when it was last claimed
 * (`claimed_at`), and the owner's newest claim is an index lookup. An indexing job that yields after a slice of
 * work goes back to `queued`; `slices` counts those hand-backs so they are not mistaken for interruptions.
 */
export class FairShares1795816340645 implements MigrationInterface {
  name = 'FairShares1795816340645';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE agent_runs ADD COLUMN claimed_at timestamptz`);
    await queryRunner.query(`ALTER TABLE indexing_jobs ADD COLUMN claimed_at timestamptz`);
    await queryRunner.query(`ALTER TABLE indexing_jobs ADD COLUMN slices integer NOT NULL DEFAULT 0`);
    await queryRunner.query(`CREATE INDEX agent_runs_user_claimed_idx ON agent_runs (user_id, claimed_at)`);
    await queryRunner.query(`CREATE INDEX agent_runs_project_claimed_idx ON agent_runs (project_id, claimed_at)`);
    await queryRunner.query(
      `CREATE INDEX agent_runs_user_active_idx ON agent_runs (user_id, status) WHERE status IN ('queued', 'running')`,
    );
    await queryRunner.query(`CREATE INDEX indexing_jobs_creator_claimed_idx ON indexing_jobs (created_by, claimed_at)`);
    await queryRunner.query(`CREATE INDEX indexing_jobs_project_claimed_idx ON indexing_jobs (project_id, claimed_at)`);
    await queryRunner.query(
      `CREATE INDEX indexing_jobs_creator_active_idx ON indexing_jobs (created_by, status) WHERE status IN ('queued', 'running')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS indexing_jobs_creator_active_idx`);
    await queryRunner.query(`DROP INDEX IF EXISTS indexing_jobs_project_claimed_idx`);
    await queryRunner.query(`DROP INDEX IF EXISTS indexing_jobs_creator_claimed_idx`);
    await queryRunner.query(`DROP INDEX IF EXISTS agent_runs_user_active_idx`);
    await queryRunner.query(`DROP INDEX IF EXISTS agent_runs_project_claimed_idx`);
    await queryRunner.query(`DROP INDEX IF EXISTS agent_runs_user_claimed_idx`);
    await queryRunner.query(`ALTER TABLE indexing_jobs DROP COLUMN slices`);
    await queryRunner.query(`ALTER TABLE indexing_jobs DROP COLUMN claimed_at`);
    await queryRunner.query(`ALTER TABLE agent_runs DROP COLUMN claimed_at`);
  }
}
