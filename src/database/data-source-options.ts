import type { DataSourceOptions } from 'typeorm';
import { ALL_MIGRATIONS } from '../../migrations/index.js';
import { connectionSettings } from './database-pool.js';
import { TypeOrmJsonLogger } from './typeorm-json-logger.js';

/**
 * How TypeORM reaches PostgreSQL to apply migrations (the migration CLI, the app when one is pending, the test
 * templates). Schema changes happen only through migrations; queries go through DatabasePool.
 */
export function buildDataSourceOptions(url: string, poolSize: number): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    migrations: ALL_MIGRATIONS,
    migrationsTableName: MIGRATIONS_TABLE,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    logger: new TypeOrmJsonLogger(),
    extra: { ...connectionSettings(), max: poolSize },
  };
}

export const MIGRATIONS_TABLE = 'schema_migrations';
