import type { DataSourceOptions } from 'typeorm';
import { ALL_MIGRATIONS } from '../../migrations/index.js';
import { TypeOrmJsonLogger } from './typeorm-json-logger.js';

/**
 * The one definition of how Atrium talks to PostgreSQL, used by the app, the migration CLI,
 * tests and benchmarks. Schema changes happen only through migrations.
 */
export function buildDataSourceOptions(url: string, poolSize: number): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    migrations: ALL_MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    logger: new TypeOrmJsonLogger(),
    extra: {
      max: poolSize,
      // Fail fast when PostgreSQL is unreachable instead of hanging a request.
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30_000,
      // A bad query must never hold a pooled connection for ever.
      statement_timeout: 30_000,
    },
  };
}
