import 'reflect-metadata';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createHash, randomBytes } from 'node:crypto';
import {
  globSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { createHttpApp, type CreateAppOptions } from '../../src/app.factory.js';
import { JsonLogger } from '../../src/common/logging/json-logger.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { EmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { migrateIfPending } from '../../src/database/migrations-runner.js';
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

export interface TestDatabaseOptions {
  /**
   * `migrated` (default): a copy of a template that already holds every migration, so the app's start-up finds
   * nothing pending: on PostgreSQL a database made with `CREATE DATABASE … TEMPLATE`, on the embedded engine an
   * in-memory PGlite loaded from a tarball of a migrated one (no initdb, no migrations per file). `empty`: a
   * database with no tables, for tests of the migrations themselves and of a first start.
   */
  schema?: 'migrated' | 'empty';
}

export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    const embedded = await EmbeddedPostgres.start(undefined, {
      loadDataDir: await embeddedCluster(options.schema ?? 'migrated'),
    });
    return { url: embedded.url, kind: 'embedded', drop: () => embedded.stop() };
  }
  const name = `atrium_test_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    if (options.schema === 'empty') await admin.query(`CREATE DATABASE ${name}`);
    else await createFromTemplate(admin, serverUrl, name);
  } finally {
    await admin.end();
  }
  const url = withDatabase(serverUrl, name);
  return {
    url,
    kind: 'postgres',
    drop: async () => {
      const client = new Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

function withDatabase(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

const SOURCES_ROOT = join(__dirname, '..', '..');
const MIGRATIONS_DIR = join(SOURCES_ROOT, 'migrations');
const TEMPLATE_PREFIX = 'atrium_test_tpl_';
/** Advisory lock (on the server's maintenance database) held while a process builds or prunes templates. */
const TEMPLATE_LOCK_KEY = '7022363516244667758';
const KEPT_TEMPLATES = 8;

/**
 * The template's name follows the migrations' sources and the `.sql` definitions they load (src/…/sql/), so a
 * changed or added migration or definition gets a new template.
 */
function templateName(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(MIGRATIONS_DIR).sort())
    hash.update(file).update(readFileSync(join(MIGRATIONS_DIR, file)));
  for (const file of globSync('src/**/*.sql', { cwd: SOURCES_ROOT }).sort())
    hash.update(file).update(readFileSync(join(SOURCES_ROOT, file)));
  return `${TEMPLATE_PREFIX}${hash.digest('hex').slice(0, 16)}`;
}

let template: Promise<string> | undefined;

/**
 * CREATE DATABASE … TEMPLATE the migrated template, building the template first when this server lacks it
 * (once per set of migrations; other test processes wait on the advisory lock and reuse it). The template is
 * migrated under a temporary name and renamed when complete, so a half-built one is never copied. Only the
 * newest few templates are kept; a run whose template was pruned meanwhile builds it again.
 */
async function createFromTemplate(admin: Client, serverUrl: string, name: string): Promise<void> {
  template ??= ensureTemplate(serverUrl).catch((error) => {
    template = undefined;
    throw error;
  });
  const source = await template;
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${source}`);
  } catch (error) {
    // 3D000: pruned by a process with other migrations since this one built or found it: build it again, once.
    if ((error as { code?: string }).code !== '3D000') throw error;
    template = ensureTemplate(serverUrl);
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${await template}`);
  }
}

async function ensureTemplate(serverUrl: string): Promise<string> {
  const name = templateName();
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query('SELECT pg_advisory_lock($1::bigint)', [TEMPLATE_LOCK_KEY]);
    // Newest first (database oids grow with creation).
    const existing = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY oid DESC`,
      [TEMPLATE_PREFIX],
    );
    if (!existing.rows.some((row) => row.datname === name)) {
      const building = `${name}_building`;
      await admin.query(`DROP DATABASE IF EXISTS ${building}`);
      await admin.query(`CREATE DATABASE ${building}`);
      await migrateIfPending(withDatabase(serverUrl, building));
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    }
    // Keep the templates of the last few migration sets (branches tested side by side on one server), drop older ones.
    const stale = existing.rows
      .map((row) => row.datname)
      .filter((datname) => datname !== name && !datname.endsWith('_building'))
      .slice(KEPT_TEMPLATES - 1);
    for (const datname of stale) {
      // Fails while someone copies it: then it stays until a later run.
      await admin.query(`DROP DATABASE IF EXISTS ${datname}`).catch(() => undefined);
    }
    return name;
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1::bigint)', [TEMPLATE_LOCK_KEY]).catch(() => undefined);
    await admin.end();
  }
}

/** Migrated embedded clusters, one tarball per set of migrations and PGlite version, shared by worktrees and runs. */
const EMBEDDED_TEMPLATE_DIR = join(tmpdir(), 'atrium-test-pglite');

/**
 * The tarball of an embedded cluster, `migrated` (every migration applied) or `empty` (a bare initdb), built on first
 * use and kept on disk, so a file pays PGlite's initdb (seconds of CPU, a minute on a loaded machine) and the
 * migrations once per machine instead of once per file. Written under a temporary name and renamed, so a reader never
 * sees half a file; two processes building at once both write a complete one. The newest few are kept, as on
 * PostgreSQL.
 */
export async function embeddedCluster(schema: 'migrated' | 'empty'): Promise<Blob> {
  const pglite = JSON.parse(
    readFileSync(join(__dirname, '..', '..', 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8'),
  ) as { version: string };
  const name = schema === 'migrated' ? templateName() : 'empty';
  const file = join(EMBEDDED_TEMPLATE_DIR, `${name}-pglite-${pglite.version}.tar`);
  try {
    return new Blob([readFileSync(file)]);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOENT') throw error;
  }
  const engine = await EmbeddedPostgres.start(undefined);
  let tarball: Blob;
  try {
    if (schema === 'migrated') {
      await migrateIfPending(engine.url);
    }
    tarball = await engine.dumpDataDir();
  } finally {
    await engine.stop();
  }
  mkdirSync(EMBEDDED_TEMPLATE_DIR, { recursive: true });
  const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  writeFileSync(partial, Buffer.from(await tarball.arrayBuffer()));
  renameSync(partial, file);
  const stale = readdirSync(EMBEDDED_TEMPLATE_DIR)
    .filter((entry) => entry.endsWith('.tar') && !entry.startsWith('empty-'))
    .map((entry) => ({
      path: join(EMBEDDED_TEMPLATE_DIR, entry),
      mtime: statSync(join(EMBEDDED_TEMPLATE_DIR, entry), { throwIfNoEntry: false })?.mtimeMs ?? 0,
    }))
    .sort((a, b) => b.mtime - a.mtime)
    .slice(KEPT_TEMPLATES);
  for (const { path } of stale) rmSync(path, { force: true });
  return tarball;
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

/** The environment of an in-process test app: its own DATA_DIR and Redis prefix, TEST_REDIS_URL, quiet logs; then `overrides`. */
export function testAppEnv(
  dataDir: string,
  overrides: Record<string, string> = {},
): Record<string, string | undefined> {
  return {
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
    REDIS_URL: process.env.TEST_REDIS_URL,
    REDIS_PREFIX: `atrium-test-${randomBytes(4).toString('hex')}`,
    ...overrides,
  };
}

/** Boots the real app over HTTP on a random loopback port against real PostgreSQL (+ Redis when TEST_REDIS_URL is set). */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-test-'));
  const config = loadConfig(testAppEnv(dataDir, options.env));
  const app = await createHttpApp({
    config,
    databaseUrl: database.url,
    logger: new JsonLogger(config.logLevel),
    extraModules: options.extraModules,
  });
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
