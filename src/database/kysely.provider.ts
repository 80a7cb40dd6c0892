import { Inject, type Provider } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import type { Pool, PoolClient } from 'pg';
import type { DataSource } from 'typeorm';
import { applySearchSessionSettings } from '../modules/rag/search-session-settings.repository.js';
import type { DB } from './database.types.js';

/**
 * The one query style of every repository: Kysely, typed end to end by `database.types.ts` (generated from
 * the migrated schema with `npm run db:types`). It runs on TypeORM's own pg pool, so there is one pool per
 * process, the embedded default (PGlite behind its wire server) works unchanged, and migrations stay TypeORM's.
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
  inject: [getDataSourceToken()],
  useFactory: (dataSource: DataSource): Db => {
    // TypeORM's postgres driver keeps its pg.Pool as `master`; TypeORM ends it on shutdown, so this client is never destroyed.
    const pool = (dataSource.driver as unknown as { master: Pool }).master;
    keepCheckedOutClientErrorsHandled(pool);
    return new Kysely<DB>({ dialect: new PostgresDialect({ pool, onCreateConnection: onNewConnection }) });
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
function keepCheckedOutClientErrorsHandled(pool: Pool): void {
  pool.on('acquire', (client) => {
    if (guardedClients.has(client)) return;
    guardedClients.add(client);
    client.on('error', () => undefined);
  });
}
