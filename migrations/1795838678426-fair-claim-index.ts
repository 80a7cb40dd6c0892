import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The fair claim (ClaimableJobsRepository.claimNext) walks the owners and projects that have queued jobs and takes
 * each one's oldest jobs, so it needs queued jobs indexed by owner, project and age: with it a claim reads a few index
 * entries per owner and project, whatever the size of one owner's backlog. A job without an owner or project is
 * filed under the nil uuid, the same expression the claim uses.
 */
export class FairClaimIndex1795838678426 implements MigrationInterface {
  name = 'FairClaimIndex1795838678426';

  async up(queryRunner: QueryRunner): Promise<void> {
    const nil = `'00000000-0000-0000-0000-000000000000'::uuid`;
    await queryRunner.query(
      `CREATE INDEX agent_runs_waiting_idx ON agent_runs ((coalesce(user_id, ${nil})), (coalesce(project_id, ${nil})), created_at, id) WHERE status = 'queued'`,
    );
    await queryRunner.query(
      `CREATE INDEX indexing_jobs_waiting_idx ON indexing_jobs ((coalesce(created_by, ${nil})), (coalesce(project_id, ${nil})), created_at, id) WHERE status = 'queued'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS indexing_jobs_waiting_idx`);
    await queryRunner.query(`DROP INDEX IF EXISTS agent_runs_waiting_idx`);
  }
}
