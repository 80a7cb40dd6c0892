import { Inject, type Provider } from '@nestjs/common';
import { CamelCasePlugin, Kysely, type Dialect, PostgresDialect, type Transaction } from 'kysely';
import { applySearchSessionSettings } from '../modules/rag/search-session-settings.repository.js';
import { DatabasePool } from './database-pool.js';
import type { DB } from './database.types.js';

/**
 * The one query style of every repository: Kysely, typed end to end by `database.types.ts` (generated from
 * the migrated schema with `npm run db:types`). It runs on the process's one pool (DatabasePool); the embedded
 * default (PGlite behind its wire server) speaks the same protocol.
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
  inject: [DatabasePool],
  // DatabasePool ends the pool on shutdown, so this client is never destroyed.
  useFactory: ({ pool }: DatabasePool): Db => newDb(new PostgresDialect({ pool, onCreateConnection: onNewConnection })),
};
