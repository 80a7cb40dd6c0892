import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createWorkerContext } from '../src/app.factory.js';
import { JsonLogger } from '../src/common/logging/json-logger.js';
import { loadConfig } from '../src/config/app-config.js';
import { EmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { loadBeirCollection, runEval } from './eval-rag-lib.js';

/**
 * `npm run eval:rag -- --collection ../shared/data/ir/scifact [--limit-queries N] [--limit-docs M] [--min-ndcg X] [--state FILE]`
 *
 * Boots the application (APP_ROLE=all: services and the indexing worker) against DATABASE_URL / REDIS_URL
 * when set, otherwise a throw-away embedded PostgreSQL, and prints one JSON report. With `--state FILE` and a
 * DATABASE_URL, a later run reuses the collection ingested by an earlier one (see EvalOptions.stateFile).
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string): string | undefined => {
    const index = args.indexOf(`--${name}`);
    return index >= 0 ? args[index + 1] : undefined;
  };
  const collectionDir = option('collection');
  if (!collectionDir)
    throw new Error('usage: eval:rag -- --collection <BEIR dir> [--limit-queries N] [--limit-docs M] [--min-ndcg X]');
  const limitQueries = option('limit-queries') ? Number(option('limit-queries')) : undefined;
  const limitDocs = option('limit-docs') ? Number(option('limit-docs')) : undefined;
  const minNdcg = option('min-ndcg') ? Number(option('min-ndcg')) : undefined;

  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-eval-'));
  const config = loadConfig({
    // A bulk load by one user: the per-user queue cap that keeps shares fair would only slow it down.
    INDEX_MAX_QUEUED_PER_USER: '1000000',
    ...process.env,
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    APP_ROLE: 'all',
  });
  const embedded = config.database.url ? undefined : await EmbeddedPostgres.start(undefined);
  const app = await createWorkerContext({
    config,
    databaseUrl: config.database.url ?? embedded!.url,
    logger: new JsonLogger(config.logLevel),
  });
  try {
    const collection = loadBeirCollection(resolve(collectionDir));
    const report = await runEval(app, collection, {
      limitQueries,
      limitDocs,
      stateFile: option('state'),
      log: (line) => process.stderr.write(`${line}\n`),
    });
    process.stdout.write(
      `${JSON.stringify({ collection: collectionDir, embeddings: config.embeddings.provider, ...report }, null, 2)}\n`,
    );
    const hybrid = report.modes.find((mode) => mode.mode === 'hybrid');
    if (minNdcg !== undefined && hybrid && hybrid.ndcg10 < minNdcg) {
      process.stderr.write(`hybrid nDCG@10 ${hybrid.ndcg10} is below --min-ndcg ${minNdcg}\n`);
      process.exitCode = 1;
    }
  } finally {
    await app.close();
    await embedded?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
