import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { buildOnce, startAppProcess, type AppProcess } from './app-process';
import { call } from './drill-helpers';
import { createTestDatabase, deploymentEnv, type TestDatabase } from './test-app';

/** One deployment of real processes (`node dist/src/main.js`) for a test file: see {@link useProcessDeployment}. */
export interface ProcessDeployment {
  /** The fresh database every process shares, and a client on it for the test's own reads. */
  database: TestDatabase;
  db: Client;
  dataDir: string;
  processes: AppProcess[];
  /** Figures printed after the file's tests, one line each. */
  figures: Record<string, string | number>;
  /** Starts a process: the deployment's environment, then the file's (`env`), then `extra`. */
  start(role: 'api' | 'worker' | 'all', extra?: Record<string, string>): Promise<AppProcess>;
}

/**
 * Registers beforeAll/afterAll for a deployment of real processes on one fresh PostgreSQL database (TEST_DATABASE_URL;
 * Redis with TEST_REDIS_URL, else BullMQ's PostgreSQL backend), as the process and drill suites run them inside
 * `describeOnSharedServices`: the build, the database, a DATA_DIR, the shared secrets and Redis prefix; after the
 * tests every process still alive is killed, the database dropped and the figures printed. `env` is read at each
 * start, so it may name fake servers the file starts in its own beforeAll.
 */
export function useProcessDeployment(
  name: string,
  options: { env?: () => Record<string, string> } = {},
): () => ProcessDeployment {
  let deployment: ProcessDeployment | undefined;

  beforeAll(async () => {
    buildOnce();
    const database = await createTestDatabase();
    const db = new Client({ connectionString: database.url });
    await db.connect();
    const dataDir = mkdtempSync(join(tmpdir(), `atrium-${name}-`));
    const shared = {
      NODE_ENV: 'test',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      DATABASE_URL: database.url,
      DATABASE_POOL_SIZE: '5',
      ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
      ...deploymentEnv(name),
    };
    const processes: AppProcess[] = [];
    deployment = {
      database,
      db,
      dataDir,
      processes,
      figures: {},
      start: async (role, extra = {}) => {
        const started = await startAppProcess({ ...shared, ...options.env?.(), APP_ROLE: role, ...extra });
        processes.push(started);
        return started;
      },
    };
  }, 300_000);

  afterAll(async () => {
    if (!deployment) return;
    const { processes, db, database, dataDir, figures } = deployment;
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await db.end();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
    if (Object.keys(figures).length > 0)
      // eslint-disable-next-line no-console
      console.log(
        `${name} figures:\n${Object.entries(figures)
          .map(([k, v]) => `  ${k}: ${v}`)
          .join('\n')}`,
      );
  }, 60_000);

  return () => {
    if (!deployment) throw new Error('the deployment is not started (call useProcessDeployment() inside describe)');
    return deployment;
  };
}

/** A user signed up and in through a process's HTTP API (`<name>@example.com`): their access token. */
export async function signUp(baseUrl: string, name: string): Promise<string> {
  const credentials = { email: `${name}@example.com`, password: `${name}-test-password`, name };
  const registered = await call(baseUrl, { method: 'POST', path: '/api/auth/register', body: credentials });
  if (registered.status !== 201) throw new Error(`register ${name} → ${registered.status} ${registered.text}`);
  const login = await call(baseUrl, {
    method: 'POST',
    path: '/api/auth/login',
    body: { email: credentials.email, password: credentials.password },
  });
  if (login.status !== 200) throw new Error(`login ${name} → ${login.status} ${login.text}`);
  return login.json.data.accessToken as string;
}

/** A user signed up (see {@link signUp}) with a project of their own, named after them unless told. */
export async function signUpWithProject(
  baseUrl: string,
  name: string,
  projectName = name,
): Promise<{ token: string; projectId: string }> {
  const token = await signUp(baseUrl, name);
  const project = await call(baseUrl, { method: 'POST', path: '/api/projects', token, body: { name: projectName } });
  if (project.status !== 201) throw new Error(`project ${projectName} → ${project.status} ${project.text}`);
  return { token, projectId: project.json.data.id as string };
}
