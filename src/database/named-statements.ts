import { createHash } from 'node:crypto';
import { Inject, type Provider } from '@nestjs/common';
import type { CompiledQuery, DatabaseConnection, QueryResult, RawBuilder } from 'kysely';
import type { ClientBase, Pool, PoolClient, QueryResult as PgQueryResult } from 'pg';
import { phaseClock, phaseSince } from '../common/timing/phase-timer.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/app-config.token.js';
import { DatabasePool } from './database-pool.js';
import { EmbeddedEngine } from './embedded-engine.js';
import { columnNames, KYSELY, onNewConnection, type Db } from './kysely.provider.js';

export const NAMED_STATEMENTS = Symbol('NamedStatements');

/** Injects the shared {@link NamedStatements}. */
export const InjectNamedStatements = (): ParameterDecorator => Inject(NAMED_STATEMENTS);

/**
 * Runs a hot statement as a named (prepared) statement of the connection it lands on, so that PostgreSQL parses,
 * analyses and rewrites its text once per connection, and may keep a generic plan for it, instead of doing all of
 * that on every call, a large share of a hot statement's time (docs/perf/gateway.md, docs/perf/rag.md). The name is
 * a hash of the text, so each distinct text is its own statement.
 *
 * Only for statements whose text does not vary with input: values go in parameters, limits and other code
 * constants are inlined (a generic plan with a parameterised LIMIT or a `$n IS NULL OR …` filter can lose the
 * index scans that make the statement cheap; docs/perf/rag.md). Each connection keeps at most a handful.
 *
 * Not used (the statement runs as an ordinary unnamed one through Kysely) on the embedded engine (PGlite, known
 * by its version string, asked once), whose connections share one session (a second Parse of a name on another
 * connection would fail), or with `DATABASE_NAMED_STATEMENTS=false` (a pooler in transaction mode that does not
 * carry prepared statements).
 */
export class NamedStatements {
  private readonly prepared = new WeakSet<PoolClient>();
  /** Statement name by text: a handful of texts (one per list and scope shape), hashed once instead of per call. */
  private readonly names = new Map<string, string>();
  /** usablePool's answer once known (it does not change in a process): no await on the hot path. */
  private pool: Pool | null | undefined;

  constructor(
    private readonly db: Db,
    /** The process's pool when named statements are on (DATABASE_NAMED_STATEMENTS), else null. */
    private readonly configuredPool: Pool | null,
    private readonly engine: EmbeddedEngine,
  ) {}

  /** The pool when named statements are on and the server gives each connection its own session. */
  private async usablePool(): Promise<Pool | null> {
    if (!this.configuredPool) return null;
    return (this.pool = (await this.engine.is()) ? null : this.configuredPool);
  }

  private nameOf(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) {
      name = `atrium_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
      if (this.names.size < MAX_NAMES) this.names.set(text, name);
    }
    return name;
  }

  /** The rows of `query`, run on a pooled connection as a named statement (or through Kysely when disabled). */
  async rows<R>(query: RawBuilder<R>): Promise<R[]> {
    const clock = phaseClock();
    const compiled = query.compile(this.db);
    phaseSince('compile', clock);
    return this.compiledRows(compiled);
  }

  /** The rows of a statement compiled before (e.g. once per shape, as TasksRepository keeps its list statements). */
  async compiledRows<R>(compiled: CompiledQuery<R>): Promise<R[]> {
    let clock = phaseClock();
    const pool = this.pool !== undefined ? this.pool : await this.usablePool();
    phaseSince('engine', clock);
    if (!pool) return (await this.db.executeQuery<R>(compiled)).rows;
    clock = phaseClock();
    const name = this.nameOf(compiled.sql);
    phaseSince('name', clock);
    clock = phaseClock();
    const client = await pool.connect();
    phaseSince('connect', clock);
    let failure: unknown;
    try {
      // The same per-connection set-up as Kysely gives a connection it takes first (the search session settings).
      if (!this.prepared.has(client)) {
        clock = phaseClock();
        await onNewConnection(asKyselyConnection(client));
        this.prepared.add(client);
        phaseSince('setup', clock);
      }
      clock = phaseClock();
      // pg's callback form into a Promise of our own: its promise form kept every result (a list's whole text)
      // alive through young collections until the next full one (docs/perf/gateway.md, "the collector").
      const result = await new Promise<PgQueryResult<R & object>>((resolve, reject) =>
        client.query<R & object>(
          { name, text: compiled.sql, values: [...compiled.parameters] },
          (error: Error, answer: PgQueryResult<R & object>) => (error ? reject(error) : resolve(answer)),
        ),
      );
      phaseSince('query', clock);
      // Past Kysely, so past its result plugins: the rows named as Kysely names them.
      return result.rows.map((row) => columnNames.row<R>(row));
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      // A connection that failed mid-statement may be broken: pg-pool discards it rather than handing it out again.
      client.release(failure instanceof Error && isConnectionError(failure) ? failure : undefined);
    }
  }
}

/** Names remembered by text (the search statements and list_tasks' up to 64 filter shapes fit); beyond that they are hashed per call. */
const MAX_NAMES = 256;

/** Errors after which a connection is not reused (no SQLSTATE: the socket or the protocol failed, not the statement). */
function isConnectionError(error: Error): boolean {
  return (
    !('code' in error) ||
    typeof (error as { code?: unknown }).code !== 'string' ||
    !/^[0-9A-Z]{5}$/.test((error as { code: string }).code)
  );
}

/** The minimal Kysely connection over a pg client that a connection set-up function needs (executeQuery). */
export function asKyselyConnection(client: ClientBase): DatabaseConnection {
  return {
    async executeQuery<R>(compiled: { sql: string; parameters: readonly unknown[] }): Promise<QueryResult<R>> {
      const result = await client.query(compiled.sql, [...compiled.parameters]);
      return { rows: result.rows as R[] };
    },
    // eslint-disable-next-line require-yield
    async *streamQuery() {
      throw new Error('not supported');
    },
  };
}

export const namedStatementsProvider: Provider = {
  provide: NAMED_STATEMENTS,
  inject: [KYSELY, DatabasePool, APP_CONFIG, EmbeddedEngine],
  // The process's one pool, as for Kysely (kysely.provider.ts).
  useFactory: (db: Db, { pool }: DatabasePool, config: AppConfig, engine: EmbeddedEngine): NamedStatements =>
    new NamedStatements(db, config.database.namedStatements ? pool : null, engine),
};
