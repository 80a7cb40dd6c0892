import type { INestApplicationContext } from '@nestjs/common';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWorkerContext } from '../src/app.factory';
import { JsonLogger } from '../src/common/logging/json-logger';
import { loadConfig } from '../src/config/app-config';
import { KYSELY, type Db } from '../src/database/kysely.provider';
import { IndexingPacer, REQUEST_LOAD, type RequestLoad } from '../src/modules/rag/indexing-pacer';
import {
  createTestDatabase,
  deploymentEnv,
  describeOnSharedServices,
  startTestApp,
  testAppEnv,
  type TestApp,
  type TestDatabase,
} from './support/test-app';
import { holdApiBusy } from './support/busy-api';
import { waitFor } from './support/wait';

/** A pacer as the chunk writer makes one for a large document (duty 0.5, batches of 16 while paced, up to 256). */
const pacerOf = (load: RequestLoad) => new IndexingPacer(0.5, 16, 256, load);

/**
 * The Kubernetes / compose shape: an APP_ROLE=api app and an APP_ROLE=worker context on one PostgreSQL database. The
 * worker serves no HTTP, yet its pacer follows the API's load as the API publishes it: full speed while the API is
 * idle, paced while it serves a request, and paced again once no API instance reports.
 */
describeOnSharedServices('indexing pace of a worker-only process follows the API instances', () => {
  let database: TestDatabase;
  let api: TestApp | undefined;
  let worker: INestApplicationContext;
  let workerDir: string;
  let load: RequestLoad;
  let db: Db;
  const held: (() => void)[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const shared = { ...deploymentEnv('pacing'), DATABASE_URL: database.url };
    api = await startTestApp({ database, env: { ...shared, APP_ROLE: 'api' } });
    workerDir = mkdtempSync(join(tmpdir(), 'atrium-pacing-worker-'));
    const config = loadConfig(testAppEnv(workerDir, { ...shared, APP_ROLE: 'worker' }));
    worker = await createWorkerContext({ config, databaseUrl: database.url, logger: new JsonLogger(config.logLevel) });
    load = worker.get<RequestLoad>(REQUEST_LOAD);
    db = worker.get<Db>(KYSELY);
  }, 120_000);

  afterAll(async () => {
    for (const release of held) release();
    await api?.close();
    await worker?.close();
    await database?.drop();
    rmSync(workerDir, { recursive: true, force: true });
  });

  /** Waits until a fresh pacer of the worker decides `busy` (the reader refreshes itself about once a second). */
  const workerDecides = (busy: boolean) =>
    waitFor(`worker pacer busy=${busy}`, () => Promise.resolve(pacerOf(load).busy() === busy), {
      timeoutMs: 20_000,
      intervalMs: 200,
    });

  it('runs at full speed while the API is idle: batches double to the largest, no pause', async () => {
    await workerDecides(false);
    const pacer = pacerOf(load);
    expect([pacer.batchChunks(), pacer.batchChunks(), pacer.batchChunks(), pacer.batchChunks()]).toEqual([
      32, 64, 128, 256,
    ]);
    expect(pacer.pauseAfter(100)).toBe(0);
  });

  it('paces while the API serves a request: short batches, a pause as long as the work', async () => {
    // A request whose body never ends stays in flight: the API spends all of its last second serving it.
    const release = holdApiBusy(api!.baseUrl);
    held.push(release);
    await workerDecides(true);
    const pacer = pacerOf(load);
    expect([pacer.batchChunks(), pacer.batchChunks()]).toEqual([16, 16]);
    expect(pacer.pauseAfter(100)).toBe(100);

    release();
    await workerDecides(false);
  });

  it('paces once no API instance reports (the API stopped and removed its row)', async () => {
    await api!.close();
    api = undefined;
    const rows = await db.selectFrom('apiBusyShares').selectAll().execute();
    expect(rows).toEqual([]);
    await workerDecides(true);
    expect(load.serving).toBe(false);
    expect(pacerOf(load).batchChunks()).toBe(16);
  });
});
