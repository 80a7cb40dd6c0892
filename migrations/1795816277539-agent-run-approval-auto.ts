import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agent runs get the approval mode `auto` (API.md, "Agent authority (revision 3)"): writes run without asking until
 * the run has read text its starter did not write. It becomes the column default, as it is the route's.
 */
export class AgentRunApprovalAuto1795816277539 implements MigrationInterface {
  name = 'AgentRunApprovalAuto1795816277539';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_approval_check`);
    await queryRunner.query(
      `ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_approval_check CHECK (approval IN ('auto', 'writes', 'none'))`,
    );
    await queryRunner.query(`ALTER TABLE agent_runs ALTER COLUMN approval SET DEFAULT 'auto'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE agent_runs SET approval = 'writes' WHERE approval = 'auto'`);
    await queryRunner.query(`ALTER TABLE agent_runs ALTER COLUMN approval SET DEFAULT 'none'`);
    await queryRunner.query(`ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_approval_check`);
    await queryRunner.query(
      `ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_approval_check CHECK (approval IN ('none', 'writes'))`,
    );
  }
}
