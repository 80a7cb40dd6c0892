import { DynamicModule, Module } from '@nestjs/common';
import { CallCountDb } from './call-count-db.js';
import { DatabasePool } from './database-pool.js';
import { EmbeddedEngine } from './embedded-engine.js';
import { kyselyProvider } from './kysely.provider.js';
import { migrateIfPendingInThread } from './migrations-runner.js';
import { namedStatementsProvider } from './named-statements.js';

/**
 * The pool in a module of its own, one level below DatabaseModule, so Nest's shutdown hooks end it after those of
 * the features that still write while they drain.
 */
@Module({})
class DatabasePoolModule {
  static forRoot(databaseUrl: string, poolSize: number): DynamicModule {
    return {
      module: DatabasePoolModule,
      global: true,
      providers: [
        {
          provide: DatabasePool,
          // Migrations run before the app serves, under an advisory lock (several processes may start at once), in a thread.
          useFactory: async () => {
            await migrateIfPendingInThread(databaseUrl);
            return new DatabasePool(databaseUrl, poolSize);
          },
        },
      ],
      exports: [DatabasePool],
    };
  }
}

@Module({})
export class DatabaseModule {
  static forRoot(databaseUrl: string, poolSize: number): DynamicModule {
    return {
      module: DatabaseModule,
      // Global: every feature module's repositories inject the one Kysely client (InjectDb).
      global: true,
      providers: [kyselyProvider, EmbeddedEngine, namedStatementsProvider, CallCountDb],
      exports: [kyselyProvider, namedStatementsProvider, CallCountDb],
      imports: [DatabasePoolModule.forRoot(databaseUrl, poolSize)],
    };
  }
}
