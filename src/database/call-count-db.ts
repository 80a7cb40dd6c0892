import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { DatabasePool, keepCheckedOutClientErrorsHandled } from './database-pool.js';
import { EmbeddedEngine } from './embedded-engine.js';
import { KYSELY, newDb, type Db } from './kysely.provider.js';

/**
 * Where the per-call count statement runs (ApiKeyCallCounterService → ToolCredentialsRepository.addCalls): on
 * PostgreSQL, a pool of its own (CALL_COUNT_CONNECTIONS connections beside DATABASE_POOL_SIZE). Every Area A
 * call waits for its count to be committed, and the count is a group commit (one statement at a time, the calls
 * that arrive meanwhile share the next). On the shared pool that statement, though quick itself, queued behind the
 * calls' own reads for as long as the list they waited for (docs/perf/gateway.md). On the embedded engine (one session behind its
 * wire server) a second pool would gain nothing, so the count uses the shared client there.
 */
@Injectable()
export class CallCountDb implements OnApplicationShutdown {
  private readonly ownPool: Pool;
  private readonly own: Db;

  constructor(
    @Inject(KYSELY) private readonly shared: Db,
    database: DatabasePool,
    private readonly engine: EmbeddedEngine,
  ) {
    // The shared pool's settings (timeouts, statement_timeout), not its size. Connections open only when used.
    this.ownPool = new Pool({ ...database.settings(), max: CALL_COUNT_CONNECTIONS });
    keepCheckedOutClientErrorsHandled(this.ownPool);
    // An idle connection that dies (the database restarting) is dropped by the pool, which then emits 'error'
    // on itself: unheard, Node would turn that into an uncaught exception (drill-outages).
    this.ownPool.on('error', () => undefined);
    this.own = newDb(new PostgresDialect({ pool: this.ownPool }));
  }

  /** The client the count statement runs on: the own pool on PostgreSQL, the shared one on the embedded engine. */
  async lane(): Promise<Db> {
    return (await this.engine.is()) ? this.shared : this.own;
  }

  /** After the HTTP server and the counter have drained: `end` waits for a statement still running. */
  async onApplicationShutdown(): Promise<void> {
    await this.ownPool.end();
  }
}

/** One statement is in flight at a time per process (group commit); the second connection covers a reconnect. */
const CALL_COUNT_CONNECTIONS = 2;
