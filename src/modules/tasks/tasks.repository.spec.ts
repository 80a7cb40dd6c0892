import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import type { Actor } from '../../common/auth/actor.js';
import type { DB } from '../../database/database.types.js';
import type { EmbeddedEngine } from '../../database/embedded-engine.js';
import { columnNames } from '../../database/kysely.provider.js';
import { NamedStatements } from '../../database/named-statements.js';
import { TasksRepository } from './tasks.repository.js';

/** NamedStatements asks whether the engine is embedded only when it has a pool. */
const NOT_ASKED = { is: () => Promise.reject(new Error('not asked without a pool')) } as unknown as EmbeddedEngine;

/** The SQL the tasks repository emits, without a database (Kysely's DummyDriver answers every statement with no rows). */
function recordingRepository(): {
  repository: TasksRepository;
  statements: { sql: string; parameters: readonly unknown[] }[];
} {
  const statements: { sql: string; parameters: readonly unknown[] }[] = [];
  const db = new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (kysely) => new PostgresIntrospector(kysely),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    plugins: [columnNames],
    log: (event) => {
      statements.push({ sql: event.query.sql, parameters: event.query.parameters });
    },
  });
  // Without a pool (as with DATABASE_NAMED_STATEMENTS=false) the list statement runs through Kysely, which logs it.
  return { repository: new TasksRepository(db, new NamedStatements(db, null, NOT_ASKED)), statements };
}

const unpinned: Actor = { userId: '00000000-0000-4000-8000-000000000001', projectIds: null, repos: null };
const pinned: Actor = { ...unpinned, projectIds: ['00000000-0000-4000-8000-0000000000aa'] };

describe('TasksRepository SQL', () => {
  it('lists tasks (the Area A list_tasks hot path) in one statement: the stored views aggregated in list order, the access rule in its WHERE', async () => {
    const { repository, statements } = recordingRepository();
    await repository.listRendered(unpinned, { status: 'todo' }, 50).catch(() => undefined); // the DummyDriver answers no row
    expect(statements).toEqual([
      {
        sql:
          `SELECT '[' || coalesce(array_to_string((array_agg(s.view_json ORDER BY s.created_at DESC, s.id DESC))[1:$1::int], ','), '') || ']' AS items, count(*)::int AS found ` +
          'FROM (select "t"."id", "t"."created_at", "t"."view_json" from "tasks" as "t" where (("t"."creator_id" = $2 OR "t"."assignee_id" = $3) AND true) and "t"."status" = $4 ' +
          'order by "t"."created_at" desc, "t"."id" desc limit $5) AS s',
        parameters: [50, unpinned.userId, unpinned.userId, 'todo', 51],
      },
    ]);
  });

  it('keeps a pinned caller inside its projects in the same statement, compiled once per filter shape', async () => {
    const { repository, statements } = recordingRepository();
    await repository.listRendered(pinned, {}, 50).catch(() => undefined);
    await repository.listRendered(pinned, {}, 20).catch(() => undefined);
    expect(statements).toHaveLength(2);
    expect(statements[0].sql).toContain('AND "t"."project_id" = ANY($4::uuid[]))');
    expect(statements[1].sql).toBe(statements[0].sql);
    expect(statements.map((statement) => statement.parameters)).toEqual([
      [50, pinned.userId, pinned.userId, pinned.projectIds, 51],
      [20, pinned.userId, pinned.userId, pinned.projectIds, 21],
    ]);
  });
});
