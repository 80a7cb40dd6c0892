import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { exitWithError, installProcessLogger } from '../common/logging/process-logger.js';
import { loadConfig } from '../config/app-config.js';
import { ConfigError } from '../config/config-error.js';
import { buildDataSourceOptions } from './data-source-options.js';
import { EmbeddedPostgres } from './embedded-postgres.js';
import { runMigrationsUnderLock } from './migrations-runner.js';

/** `npm run migration:run`: applies pending migrations to DATABASE_URL, or to the embedded store. */
async function main(): Promise<void> {
  // TypeORM's and the embedded engine's messages go through Nest's Logger: JSON lines, as in the app.
  const logger = installProcessLogger();
  const config = loadConfig();
  logger.setLevel(config.logLevel);
  const embedded = config.database.url ? undefined : await EmbeddedPostgres.start(config.dataDir);
  const url = config.database.url ?? embedded!.url;
  const dataSource = new DataSource(buildDataSourceOptions(url, 2));
  await dataSource.initialize();
  const applied = await runMigrationsUnderLock(dataSource, url);
  new Logger('Migrations').log({ msg: 'migrations applied', migrations: applied.map((m) => m.name) });
  await dataSource.destroy();
  await embedded?.stop();
}

main().catch((error: unknown) => {
  const logger = installProcessLogger();
  if (error instanceof ConfigError) {
    logger.error({ msg: error.message, variable: error.variable }, 'Config');
    process.exit(78);
  }
  exitWithError(logger, 'migrations failed', error, 1);
});
