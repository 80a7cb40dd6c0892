/**
 * Child process of the gateway benchmark: the real Atrium app (APP_ROLE=api) exactly as production
 * builds it, on a random port. Prints `PORT <n>` once listening.
 */
import 'reflect-metadata';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp } from '../src/app.factory.js';
import { JsonLogger } from '../src/common/logging/json-logger.js';
import { loadConfig } from '../src/config/app-config.js';
import { BENCH_PEPPER, BENCH_POOL_SIZE } from './bench-env.js';

async function main(): Promise<void> {
  const databaseUrl = process.env.BENCH_DB_URL!;
  const config = loadConfig({
    NODE_ENV: 'development',
    APP_ROLE: 'api',
    LOG_LEVEL: 'error',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'atrium-bench-')),
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: String(BENCH_POOL_SIZE),
    // Set per child by gateway.bench.ts: one gateway on Redis, one on the in-memory limiter.
    REDIS_URL: process.env.BENCH_GATEWAY_REDIS_URL || undefined,
    REDIS_PREFIX: process.env.BENCH_GATEWAY_REDIS_PREFIX || 'atrium-bench',
    API_KEY_PEPPER: BENCH_PEPPER,
    RATE_LIMIT_KEY_PER_MIN: '1000000',
    RATE_LIMIT_USER_TOOLS_PER_MIN: '10000000',
    // Metrics are on by default, as in production; BENCH_METRICS=false measures the gateway without them.
    METRICS_ENABLED: process.env.BENCH_METRICS ?? 'true',
  });
  const app = await createHttpApp({ config, databaseUrl, logger: new JsonLogger('error') });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  process.stdout.write(`PORT ${port}\n`);
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

void main().catch((error) => {
  console.error(error);
  process.exit(1);
});
