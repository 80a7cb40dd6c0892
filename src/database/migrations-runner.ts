import { Client } from 'pg';
import type { DataSource, Migration } from 'typeorm';

/** Advisory lock key of "schema migrations of this database": "atrium-m" in ASCII (0x61747269756d2d6d). */
export const MIGRATIONS_LOCK_KEY = '7022363516244667757';

/**
 * Applies pending migrations while holding a PostgreSQL session advisory lock, so any number of
 * processes (api + workers started together, as compose and Kubernetes do) may start at once: the
 * first applies them, the others wait and then find nothing pending. Without the lock two processes
 * both create `schema_migrations` or run the same migration (duplicate pg_type rows, double rows).
 *
 * The lock is held on its own connection, outside the data source's pool, so a pool of one
 * connection (the embedded engine) can still run the migrations themselves.
 */
export async function runMigrationsUnderLock(dataSource: DataSource, databaseUrl: string): Promise<Migration[]> {
  const lock = new Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATIONS_LOCK_KEY]);
    try {
      return await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await lock.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATIONS_LOCK_KEY]);
    }
  } finally {
    await lock.end();
  }
}
