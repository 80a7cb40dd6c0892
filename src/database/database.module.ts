import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { buildDataSourceOptions } from './data-source-options.js';

@Module({})
export class DatabaseModule {
  /** Migrations run before the app serves; `migrationsRun` keeps that in TypeORM's own start-up. */
  static forRoot(databaseUrl: string, poolSize: number): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRoot({
          ...buildDataSourceOptions(databaseUrl, poolSize),
          migrationsRun: true,
          autoLoadEntities: true,
          retryAttempts: 3,
          retryDelay: 1000,
        }),
      ],
    };
  }
}
