import { Inject, type Provider } from '@nestjs/common';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import { applySearchSessionSettings } from '../modules/rag/search-session-settings.repository.js';
import { DatabasePool } from './database-pool.js';
import type { DB } from './database.types.js';

/**
 * The one query style of every repository: Kysely, typed end to end by `database.types.ts` (generated from
 * the migrated schema with `npm run db:types`). It runs on the process's one pool (DatabasePool); the embedded
 * default (PGlite behind its wire server) speaks the same protocol.
 * See docs/CONVENTIONS.md, "Data access".
 */
export type Db = Kysely<DB>;

/** What a repository method runs on: the shared client, or the transaction a service opened around several calls. */
export type DbExecutor = Kysely<DB> | Transaction<DB>;

export const KYSELY = Symbol('Kysely');

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
  useFactory: ({ pool }: DatabasePool): Db =>
    new Kysely<DB>({ dialect: new PostgresDialect({ pool, onCreateConnection: onNewConnection }) }),
};
