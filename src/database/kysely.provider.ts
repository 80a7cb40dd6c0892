import { Inject, type Provider } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import { CamelCasePlugin, Kysely, PostgresDialect, type Dialect, type Transaction } from 'kysely';
import type { Pool, PoolClient } from 'pg';
import type { DataSource } from 'typeorm';
import { applySearchSessionSettings } from '../modules/rag/search-session-settings.repository.js';
import type { DB } from './database.types.js';

/**
 * The one query style of every repository: Kysely, typed end to end by `database.types.ts` (generated from
 * the migrated schema with `npm run db:types`). It runs on TypeORM's own pg pool, so there is one pool per
 * process, the embedded default (PGlite behind its wire server) works unchanged, and migrations stay TypeORM's.
 * Code names tables and columns in camelCase; {@link columnNames} maps them to the schema's snake_case.
 * See docs/CONVENTIONS.md, "Data access".
 */
export type Db = Kysely<DB>;

/** What a repository method runs on: the shared client, or the transaction a service opened around several calls. */
export type DbExecutor = Kysely<DB> | Transaction<DB>;

export const KYSELY = Symbol('Kysely');

/**
 * The one place snake_case meets camelCase: every identifier Kysely writes (tables, columns, aliases, `sql.ref`,
 * `sql.id`) is written in snake_case, and every result row's top-level keys come back in camelCase, raw `sql`
 * statements' rows included (`SELECT count(*) AS chunk_count` reads as `chunkCount`). SQL text inside `sql`
 * templates is not touched. A JSON value's own keys are kept as stored (maintainNestedObjectKeys): metadata,
 * audit details and tool arguments are the users' data, and a `jsonb_build_object` is read as written. Digits
 * take no underscore of their own (`contentSha256` is `content_sha256`).
 */
class ColumnNames extends CamelCasePlugin {
  constructor() {
    super({ maintainNestedObjectKeys: true });
  }

  /** A row read outside Kysely (a named statement run on a pg client), named as Kysely would name it. */
  row<R>(row: object): R {
    return this.mapRow(row as Record<string, unknown>) as R;
  }
}

export const columnNames = new ColumnNames();

/** A Kysely client over `dialect` with the naming every client of the schema shares ({@link columnNames}). */
export function newDb(dialect: Dialect): Db {
  return new Kysely<DB>({ dialect, plugins: [columnNames] });
}

/** Injects the shared {@link Db}. */
export const InjectDb = (): ParameterDecorator => Inject(KYSELY);

/**
 * What every pooled connection runs once, when it is first taken (by Kysely, or by NamedStatements): the settings
 * search wants (HNSW; see applySearchSessionSettings), once per connection, instead of a transaction with SET
 * LOCALs around every vector list.
 */
export const onNewConnection = applySearchSessionSettings;

export const kyselyProvider: Provider = {
  provide: KYSELY,
  inject: [getDataSourceToken()],
  useFactory: (dataSource: DataSource): Db => {
    // TypeORM's postgres driver keeps its pg.Pool as `master`; TypeORM ends it on shutdown, so this client is never destroyed.
    const pool = (dataSource.driver as unknown as { master: Pool }).master;
    keepCheckedOutClientErrorsHandled(pool);
    return newDb(new PostgresDialect({ pool, onCreateConnection: onNewConnection }));
  },
};

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
