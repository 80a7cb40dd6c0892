import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Pool, type PoolClient, type PoolConfig, type QueryResultRow } from 'pg';

/**
 * The process's one pool of connections to the app's database: Kysely, named statements and the LISTEN
 * connections all start from it (or from its settings). Migrations are TypeORM's, and TypeORM is loaded only
 * when one is pending (migrations-runner.ts), so a process that finds the schema current never loads it.
 */
export class DatabasePool implements OnApplicationShutdown {
  readonly pool: Pool;
  private readonly logger = new Logger(DatabasePool.name);

  constructor(
    /** The connection string every extra connection of this process uses (LISTEN, the call-count pool). */
    readonly url: string,
    size: number,
  ) {
    this.pool = new Pool({ ...this.settings(), max: size });
    keepCheckedOutClientErrorsHandled(this.pool);
    // An idle connection that dies (the database restarting) is dropped by the pool, which then emits 'error' on
    // itself: unheard, Node would turn that into an uncaught exception.
    this.pool.on('error', (error) =>
      this.logger.warn({ msg: 'an idle database connection failed', error: error.message }),
    );
  }

  /** The settings of every connection of this process to the database, its size aside. */
  settings(): PoolConfig {
    return { connectionString: this.url, ...connectionSettings() };
  }

  /** Rows of one statement: for scripts, benches and tests that read or poke the database directly. */
  async query<Row extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<Row[]> {
    return (await this.pool.query<Row>(text, values)).rows;
  }

  /** After the HTTP server and the workers have drained: `end` waits for the statements still running. */
  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}

/** How every connection behaves, whichever pool opens it (the app's, the call count's, a migration's). */
export function connectionSettings(): Pick<
  PoolConfig,
  'connectionTimeoutMillis' | 'idleTimeoutMillis' | 'statement_timeout'
> {
  return {
    // Fail fast when PostgreSQL is unreachable instead of hanging a request.
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    // A bad query must never hold a pooled connection for ever.
    statement_timeout: 30_000,
  };
}

const guardedClients = new WeakSet<PoolClient>();

/**
 * pg-pool takes its own 'error' listener off a client while it is checked out. If the connection dies then, between
 * two statements of a transaction or while the client waits for its next one, pg emits 'error' on a client nobody
 * listens to, and Node turns that into an uncaught exception: a database restart or a cut connection would take the
 * process down (the outage drill caught it). The failure still reaches the caller: the client is no longer
 * queryable, its next statement fails, and pg-pool discards it on release.
 */
export function keepCheckedOutClientErrorsHandled(pool: Pool): void {
  pool.on('acquire', (client) => {
    if (guardedClients.has(client)) return;
    guardedClients.add(client);
    client.on('error', () => undefined);
  });
}
