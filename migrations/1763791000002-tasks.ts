import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tasks. `project_id` has no foreign key yet: projects arrive in their own migration, and a later
 * migration adds the constraint once both exist.
 */
export class Tasks1763791000002 implements MigrationInterface {
  name = 'Tasks1763791000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE tasks (
        id uuid PRIMARY KEY,
        title varchar(200) NOT NULL,
        description text NOT NULL DEFAULT '',
        status varchar(16) NOT NULL DEFAULT 'todo' CHECK (status IN ('todo', 'in_progress', 'in_review', 'done', 'cancelled')),
        priority varchar(16) NOT NULL DEFAULT 'medium' CHECK (priority IN ('low', 'medium', 'high', 'urgent')),
        due_date date,
        assignee_id uuid REFERENCES users(id) ON DELETE SET NULL,
        creator_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        project_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        search_vector tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || description)) STORED
      )`);
    // Visibility is "creator or assignee": each side has its own index in list order.
    await queryRunner.query(`CREATE INDEX tasks_creator_idx ON tasks (creator_id, created_at DESC, id DESC)`);
    await queryRunner.query(
      `CREATE INDEX tasks_assignee_idx ON tasks (assignee_id, created_at DESC, id DESC) WHERE assignee_id IS NOT NULL`,
    );
    await queryRunner.query(`CREATE INDEX tasks_status_idx ON tasks (status)`);
    await queryRunner.query(`CREATE INDEX tasks_due_date_idx ON tasks (due_date) WHERE due_date IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX tasks_project_idx ON tasks (project_id) WHERE project_id IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX tasks_search_idx ON tasks USING gin (search_vector)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE tasks`);
  }
}
