import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './data-source-options.js';
import { CallCountDb } from './call-count-db.js';
import { EmbeddedEngine } from './embedded-engine.js';
import { kyselyProvider } from './kysely.provider.js';
import { namedStatementsProvider } from './named-statements.js';
import { runMigrationsUnderLock } from './migrations-runner.js';

@Module({})
export class DatabaseModule {
  /** Migrations run before the app serves, under an advisory lock (several processes may start at once). */
  static forRoot(databaseUrl: string, poolSize: number): DynamicModule {
    return {
      module: DatabaseModule,
      // Global: every feature module's repositories inject the one Kysely client (InjectDb).
      global: true,
      providers: [kyselyProvider, EmbeddedEngine, namedStatementsProvider, CallCountDb],
      exports: [kyselyProvider, namedStatementsProvider, CallCountDb],
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => ({
            ...buildDataSourceOptions(databaseUrl, poolSize),
            autoLoadEntities: true,
            retryAttempts: 3,
            retryDelay: 1000,
          }),
          dataSourceFactory: async (options) => {
            const dataSource = await new DataSource(options!).initialize();
            try {
              await runMigrationsUnderLock(dataSource, databaseUrl);
            } catch (error) {
              await dataSource.destroy();
              throw error;
            }
            return dataSource;
          },
        }),
      ],
    };
  }
}
