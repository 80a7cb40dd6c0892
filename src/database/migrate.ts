import { DataSource } from 'typeorm';
import { loadConfig } from '../config/app-config.js';
import { buildDataSourceOptions } from './data-source-options.js';
import { EmbeddedPostgres } from './embedded-postgres.js';
import { runMigrationsUnderLock } from './migrations-runner.js';

/** `npm run migration:run`: applies pending migrations to DATABASE_URL, or to the embedded store. */
async function main(): Promise<void> {
  const config = loadConfig();
  const embedded = config.database.url ? undefined : await EmbeddedPostgres.start(config.dataDir);
  const url = config.database.url ?? embedded!.url;
  const dataSource = new DataSource(buildDataSourceOptions(url, 2));
  await dataSource.initialize();
  const applied = await runMigrationsUnderLock(dataSource, url);
  process.stdout.write(`${JSON.stringify({ msg: 'migrations applied', migrations: applied.map((m) => m.name) })}\n`);
  await dataSource.destroy();
  await embedded?.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
