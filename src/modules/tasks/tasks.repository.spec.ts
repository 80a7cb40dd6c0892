import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import type { Actor } from '../../common/auth/actor.js';
import type { DB } from '../../database/database.types.js';
import { TasksRepository } from './tasks.repository.js';

/** The SQL the tasks repository emits, without a database (Kysely's DummyDriver answers every statement with no rows). */
function recordingRepository(): { repository: TasksRepository; statements: { sql: string; parameters: readonly unknown[] }[] } {
  const statements: { sql: string; parameters: readonly unknown[] }[] = [];
  const db = new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (kysely) => new PostgresIntrospector(kysely),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    log: (event) => {
      statements.push({ sql: event.query.sql, parameters: event.query.parameters });
    },
  });
  return { repository: new TasksRepository(db), statements };
}

const unpinned: Actor = { userId: '00000000-0000-4000-8000-000000000001', projectIds: null, repos: null };
const pinned: Actor = { ...unpinned, projectIds: ['00000000-0000-4000-8000-0000000000aa'] };

describe('TasksRepository SQL', () => {
  it('lists tasks (the Area A list_tasks hot path) in one statement, the access rule in its WHERE', async () => {
    const { repository, statements } = recordingRepository();
    await repository.list(unpinned, { status: 'todo' }, 51);
    expect(statements).toEqual([
      {
        sql:
          'select "t"."id", "t"."title", "t"."description", "t"."status", "t"."priority", "t"."assignee_id", "t"."creator_id", "t"."project_id", "t"."created_at", "t"."updated_at", t.due_date::text as "due_date" ' +
          'from "tasks" as "t" where (("t"."creator_id" = $1 OR "t"."assignee_id" = $2) AND true) and "t"."status" = $3 order by "t"."created_at" desc, "t"."id" desc limit $4',
        parameters: [unpinned.userId, unpinned.userId, 'todo', 51],
      },
    ]);
  });

  it('keeps a pinned caller inside its projects in the same statement', async () => {
    const { repository, statements } = recordingRepository();
    await repository.list(pinned, {}, 51);
    expect(statements).toHaveLength(1);
    expect(statements[0].sql).toContain('AND "t"."project_id" = ANY($3::uuid[]))');
    expect(statements[0].parameters).toEqual([pinned.userId, pinned.userId, pinned.projectIds, 51]);
  });
});
