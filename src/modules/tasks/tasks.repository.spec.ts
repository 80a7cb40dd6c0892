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
          'select "t"."id", "t"."title", "t"."description", "t"."status", "t"."priority", "t"."assignee_id", "t"."creator_id", "t"."project_id", ' +
          `to_char("t"."created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "created_at", to_char("t"."updated_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "updated_at", ` +
          't.due_date::text as "due_date" ' +
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

  it('renders the list_tasks answer in the same statement: the list inside one aggregate, cut to what it shows', async () => {
    const { repository, statements } = recordingRepository();
    await repository.listRendered(pinned, { status: 'todo' }, 50).catch(() => undefined); // the DummyDriver answers no row
    expect(statements).toHaveLength(1);
    const [{ sql, parameters }] = statements;
    expect(sql).toMatch(/^SELECT coalesce\(array_to_json\(\(array_agg\(v ORDER BY s\.sort_key DESC, s\.id DESC\)\)\[1:\$1::int\]\)::text, '\[\]'\) AS items, count\(\*\)::int AS found/);
    expect(sql).toContain('AND "t"."project_id" = ANY($4::uuid[]))');
    expect(sql).toContain('order by "t"."created_at" desc, "t"."id" desc limit $6) AS s, LATERAL (SELECT "s"."id", "s"."title", "s"."description", "s"."status", "s"."priority", "s"."due_date", "s"."assignee_id", "s"."creator_id", "s"."project_id", "s"."created_at", "s"."updated_at") AS v');
    expect(parameters).toEqual([50, pinned.userId, pinned.userId, pinned.projectIds, 'todo', 51]);
    // Compiled once per shape: the second call sends the same text with its own values.
    await repository.listRendered(unpinned, {}, 10).catch(() => undefined);
    await repository.listRendered(unpinned, {}, 20).catch(() => undefined);
    expect(statements[2].sql).toBe(statements[1].sql);
    expect(statements[2].parameters).toEqual([20, unpinned.userId, unpinned.userId, 21]);
  });
});
