import { Client } from 'pg';
import { ALL_MIGRATIONS } from '../../migrations/index.js';
import { migrateIfPending, pendingMigrations } from '../../src/database/migrations-runner.js';
import { createTestDatabase, type TestDatabase } from '../support/test-app.js';

/**
 * What every process runs before it serves: a first start migrates an empty database, several processes starting
 * together apply each migration once, and a current database is read, not migrated again.
 */
describe('migrations before a process serves', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase({ schema: 'empty' });
  });

  afterAll(async () => {
    await database?.drop();
  });

  const appliedNames = async (): Promise<string[]> => {
    const client = new Client({ connectionString: database.url });
    await client.connect();
    try {
      return (await client.query<{ name: string }>(`SELECT name FROM schema_migrations ORDER BY id`)).rows.map(
        (row) => row.name,
      );
    } finally {
      await client.end();
    }
  };

  it('finds every migration pending in an empty database, and applies each once when processes start together', async () => {
    expect(await pendingMigrations(database.url)).toHaveLength(ALL_MIGRATIONS.length);
    // The embedded engine serves one session at a time; real processes race only on PostgreSQL.
    const starts = database.kind === 'postgres' ? 3 : 1;
    await Promise.all(Array.from({ length: starts }, () => migrateIfPending(database.url)));
    expect(await pendingMigrations(database.url)).toEqual([]);
    const applied = await appliedNames();
    expect(applied).toHaveLength(ALL_MIGRATIONS.length);
    expect(new Set(applied).size).toBe(applied.length);
  });

  it('leaves a current database as it is', async () => {
    const before = await appliedNames();
    await migrateIfPending(database.url);
    expect(await appliedNames()).toEqual(before);
  });

  it('gives up with the connection error when the database cannot be reached', async () => {
    const unreachable = new URL(database.url);
    unreachable.port = '9';
    await expect(migrateIfPending(unreachable.toString(), 2, 10)).rejects.toThrow(/ECONNREFUSED|connect/);
  });
});
