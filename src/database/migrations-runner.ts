import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { Client } from 'pg';
import type { DataSource, Migration } from 'typeorm';
import { ALL_MIGRATIONS } from '../../migrations/index.js';
import { buildDataSourceOptions, MIGRATIONS_TABLE } from './data-source-options.js';
import type { ThreadLogLine } from './migrations-thread.js';

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

/**
 * What a process runs before it serves: the names of the applied migrations are read first, and TypeORM is
 * loaded and run (under the lock) only when one of ALL_MIGRATIONS is missing. A migration commits its row in
 * `schema_migrations` with its changes, so a name found there is a migration fully applied. The first reads are
 * retried, as the database may still be starting beside the process.
 */
export async function migrateIfPending(databaseUrl: string, attempts = 3, retryDelayMs = 1000): Promise<void> {
  if (await anyPending(databaseUrl, attempts, retryDelayMs)) await applyMigrations(databaseUrl);
}

/**
 * migrateIfPending for a process that serves afterwards: a pending migration is applied in a worker thread, so
 * TypeORM is loaded and run there and the process does not carry it, unused, for the rest of its life. From the
 * TypeScript sources (ts-jest) it runs in-process: a plain Node thread cannot strip the types of all of them.
 */
export async function migrateIfPendingInThread(databaseUrl: string): Promise<void> {
  if (!(await anyPending(databaseUrl, 3, 1000))) return;
  const entry = join(__dirname, 'migrations-thread.js');
  if (!existsSync(entry)) return applyMigrations(databaseUrl);
  await new Promise<void>((resolve, reject) => {
    const thread = new Worker(entry, { workerData: { databaseUrl } });
    thread.on('message', ({ level, message, params }: ThreadLogLine) => Logger[level](message, ...params));
    thread.once('error', reject);
    thread.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`the migrations thread exited with code ${code}`)),
    );
  });
}

async function anyPending(databaseUrl: string, attempts: number, retryDelayMs: number): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await pendingMigrations(databaseUrl)).length > 0;
    } catch (error) {
      if (attempt >= attempts) throw error;
      await sleep(retryDelayMs);
    }
  }
}

/** Loads TypeORM and applies what is pending, under the lock. */
export async function applyMigrations(databaseUrl: string): Promise<void> {
  const { DataSource } = await import('typeorm');
  const dataSource = await new DataSource(buildDataSourceOptions(databaseUrl, 1)).initialize();
  try {
    await runMigrationsUnderLock(dataSource, databaseUrl);
  } finally {
    await dataSource.destroy();
  }
}

/** The names of ALL_MIGRATIONS not recorded as applied in this database. */
export async function pendingMigrations(databaseUrl: string): Promise<string[]> {
  const client = new Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const table = await client.query<{ exists: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS exists`, [
      MIGRATIONS_TABLE,
    ]);
    const applied = new Set<string>();
    if (table.rows[0]?.exists) {
      const { rows } = await client.query<{ name: string }>(`SELECT name FROM ${MIGRATIONS_TABLE}`);
      for (const row of rows) applied.add(row.name);
    }
    return ALL_MIGRATIONS.map(migrationName).filter((name) => !applied.has(name));
  } finally {
    await client.end();
  }
}

/** The name TypeORM records for a migration class: its `name` property, else the class name. */
function migrationName(migration: (typeof ALL_MIGRATIONS)[number]): string {
  const instance = new (migration as new () => { name?: string })();
  return instance.name ?? (migration as { name: string }).name;
}
