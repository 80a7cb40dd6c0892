import 'reflect-metadata';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { createHttpApp, type CreateAppOptions } from '../../src/app.factory.js';
import { JsonLogger } from '../../src/common/logging/json-logger.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { EmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { failOnOpenApiMismatches, openApiValidator, watchResponses } from './openapi-validator.js';

// Every answer an in-process app gives during a test must match the served OpenAPI document for its route
// and status; a test during which one did not fails with the mismatch (see openapi-validator.ts).
if (typeof afterEach === 'function') {
  afterEach(failOnOpenApiMismatches);
  afterAll(failOnOpenApiMismatches);
}

/**
 * Where a test file's data lives: its own fresh database on TEST_DATABASE_URL's server, or a fresh
 * in-memory embedded PostgreSQL when no server is configured. Never a shared seeded database.
 */
export interface TestDatabase {
  url: string;
  kind: 'postgres' | 'embedded';
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    const embedded = await EmbeddedPostgres.start(undefined);
    return { url: embedded.url, kind: 'embedded', drop: () => embedded.stop() };
  }
  const name = `atrium_test_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    kind: 'postgres',
    drop: async () => {
      const client = new Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * describe() for suites that run several app instances or processes on one database: an embedded
 * (in-process) database cannot be shared, so they run on the real PostgreSQL server only.
 */
export const describeOnSharedServices = process.env.TEST_DATABASE_URL ? describe : describe.skip;

/**
 * What every instance of one deployment shares, fresh for each test deployment: the secrets (a token
 * or key issued by one instance works on all) and the Redis key prefix (queues, limits).
 */
export function deploymentEnv(name: string): Record<string, string> {
  return {
    REDIS_PREFIX: `atrium-${name}-${randomBytes(4).toString('hex')}`,
    JWT_SECRET: randomBytes(32).toString('hex'),
    API_KEY_PEPPER: randomBytes(32).toString('hex'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
}

export interface TestApp {
  app: NestExpressApplication;
  config: AppConfig;
  database: TestDatabase;
  baseUrl: string;
  http: ReturnType<typeof request>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Reuse a database (e.g. to prove data survives a restart). */
  database?: TestDatabase;
  /** Listen on this loopback port (e.g. one PUBLIC_URL names) instead of a random one. */
  port?: number;
  /** Test-only feature modules booted with the app (e.g. a throw-away tool provider). */
  extraModules?: CreateAppOptions['extraModules'];
}

/** Boots the real app over HTTP on a random loopback port against real PostgreSQL (+ Redis when TEST_REDIS_URL is set). */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-test-'));
  const env: Record<string, string | undefined> = {
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
    REDIS_URL: process.env.TEST_REDIS_URL,
    REDIS_PREFIX: `atrium-test-${randomBytes(4).toString('hex')}`,
    ...options.env,
  };
  const config = loadConfig(env);
  const app = await createHttpApp({ config, databaseUrl: database.url, logger: new JsonLogger(config.logLevel), extraModules: options.extraModules });
  await app.listen(options.port ?? 0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const baseUrl = `http://127.0.0.1:${address.port}`;
  watchResponses(app.getHttpServer(), await openApiValidator(baseUrl));
  return {
    app,
    config,
    database,
    baseUrl,
    http: request(baseUrl),
    close: async () => {
      await app.close();
      if (!options.database) await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
