import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { ALL_MIGRATIONS } from '../migrations/index.js';
import { buildOnce, startAppProcess, type AppProcess } from './support/app-process.js';
import { createTestDatabase, deploymentEnv, describeOnSharedServices, type TestDatabase } from './support/test-app.js';

/**
 * How operators run the built server (`node dist/src/main.js`): its logs, the embedded engine's lock and
 * access, the workers' probes, and several processes starting at once on one fresh database.
 */
const stop = async (app: AppProcess) => {
  if (app.child.exitCode === null) app.child.kill('SIGTERM');
  return app.exited;
};

describe('operations of the built server', () => {
  const dirs: string[] = [];
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'atrium-ops-'));
    dirs.push(dir);
    return dir;
  };

  // One data directory for both tests: the lock test needs a directory, not a first start, so it skips the
  // embedded engine's initdb and migrations that the logging test already paid for (it makes its own when run alone).
  let embeddedDir: string | undefined;
  const sharedDir = () => (embeddedDir ??= freshDir());

  beforeAll(() => buildOnce(), 180_000);
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('logs JSON lines from the first line on, routes at debug, and one access line per request without secrets', async () => {
    const app = await startAppProcess({ DATA_DIR: sharedDir(), LOG_LEVEL: 'info' });
    const secretKey = 'atr_SecretSecretSecretSecretSecretSecret00';
    const secretPassword = 'hunter2-very-secret-password';
    const requests: { method: string; path: string; init: RequestInit; status: number; route: string | null }[] = [
      {
        method: 'GET',
        path: '/api/v1/public/mcp/tools',
        init: { headers: { Authorization: `Bearer ${secretKey}` } },
        status: 401,
        route: '/api/v1/public/mcp/tools',
      },
      {
        method: 'GET',
        path: '/api/auth/me',
        init: { headers: { Authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.not-a-real-token' } },
        status: 401,
        route: '/api/auth/me',
      },
      {
        method: 'POST',
        path: '/api/auth/register',
        init: {
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ email: 'not-an-email', password: secretPassword, name: 'x' }),
        },
        status: 400,
        route: '/api/auth/register',
      },
      { method: 'GET', path: `/api/no-such-route?token=${secretPassword}`, init: {}, status: 404, route: null },
    ];
    const ids: string[] = [];
    try {
      for (const r of requests) {
        const res = await fetch(`${app.baseUrl}${r.path}`, { method: r.method, ...r.init });
        expect(res.status).toBe(r.status);
        ids.push(res.headers.get('x-request-id')!);
      }
      // A signed-in call names its credential (kind and id).
      const email = `ops-${Date.now()}@example.com`;
      await fetch(`${app.baseUrl}/api/auth/register`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email, password: secretPassword, name: 'Ops' }),
      });
      const login = (await (
        await fetch(`${app.baseUrl}/api/auth/login`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ email, password: secretPassword }),
        })
      ).json()) as any;
      const me = await fetch(`${app.baseUrl}/api/auth/me`, {
        headers: { Authorization: `Bearer ${login.data.accessToken}` },
      });
      expect(me.status).toBe(200);
      const userId = ((await me.json()) as any).data.id as string;
      const meId = me.headers.get('x-request-id')!;

      expect(await stop(app)).toBe(0);
      const lines = app
        .output()
        .split('\n')
        .filter((line) => line.length > 0);
      const entries = lines.map((line) => {
        try {
          return JSON.parse(line) as Record<string, any>;
        } catch {
          throw new Error(`not a JSON line: ${line}`);
        }
      });
      expect(entries[0]).toMatchObject({ level: 'info', time: expect.any(String), msg: expect.any(String) });
      // Nest's module and route wiring is debug, not info.
      expect(entries.filter((e) => ['RouterExplorer', 'RoutesResolver', 'InstanceLoader'].includes(e.context))).toEqual(
        [],
      );

      const access = entries.filter((e) => e.context === 'Access');
      for (const [i, r] of requests.entries()) {
        const line = access.find((e) => e.requestId === ids[i]);
        expect(line).toMatchObject({
          method: r.method,
          route: r.route,
          status: r.status,
          durationMs: expect.any(Number),
          credential: null,
        });
      }
      expect(access.find((e) => e.requestId === meId)).toMatchObject({
        method: 'GET',
        route: '/api/auth/me',
        status: 200,
        credential: { kind: 'user-token', id: userId },
      });
      const everything = app.output();
      for (const secret of [secretKey, secretPassword, login.data.accessToken, 'not-a-real-token', 'Bearer'])
        expect(everything).not.toContain(secret);
    } finally {
      await stop(app);
    }
  }, 120_000);

  it('locks DATA_DIR: a second process stops at once naming the directory and the holder; a dead holder is taken over', async () => {
    const dataDir = sharedDir();
    const first = await startAppProcess({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
    try {
      const started = Date.now();
      const second = startAppProcess({ DATA_DIR: dataDir, LOG_LEVEL: 'info' }, 60_000);
      await expect(second).rejects.toThrow(
        new RegExp(
          `app exited with 75 before listening:[\\s\\S]*DATA_DIR ${dataDir} is in use by process ${first.child.pid}`,
        ),
      );
      expect(Date.now() - started).toBeLessThan(30_000);
      // Only the owning process can open a session on the embedded engine: the port is on loopback,
      // but a client without the generated password is refused.
      const port = /"address":"127\.0\.0\.1:(\d+)"/.exec(first.output())![1];
      const intruder = new Client({
        connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres`,
        password: 'guess',
      });
      await expect(intruder.connect()).rejects.toThrow(/password authentication failed/);
      await intruder.end().catch(() => undefined);
      expect(first.output()).not.toMatch(/postgresql:\/\/postgres:/);
    } finally {
      expect(await stop(first)).toBe(0);
    }
    // A lock left by a process that died (kill -9) is taken over.
    writeFileSync(
      join(dataDir, 'atrium.lock'),
      JSON.stringify({ pid: 2 ** 22 + 12345, host: hostname(), since: '2026-01-01T00:00:00Z' }),
    );
    const third = await startAppProcess({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
    expect((await fetch(`${third.baseUrl}/api/ready`)).status).toBe(200);
    expect(await stop(third)).toBe(0);
  }, 180_000);
});

describeOnSharedServices('several processes at once on PostgreSQL', () => {
  let database: TestDatabase;
  const processes: AppProcess[] = [];

  beforeAll(async () => {
    buildOnce();
    // Empty: the processes started below apply the migrations themselves (that is what is tested).
    database = await createTestDatabase({ schema: 'empty' });
  }, 180_000);
  afterAll(async () => {
    await Promise.all(processes.map(stop));
    await database.drop();
  }, 60_000);

  it('api + two workers started together on a fresh database apply each migration once, and all three answer their probes', async () => {
    const env = {
      ...deploymentEnv('migrate'),
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'atrium-ops-')),
      ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
    };
    const started = await Promise.all([
      startAppProcess({ ...env, APP_ROLE: 'api' }),
      startAppProcess({ ...env, APP_ROLE: 'worker' }),
      startAppProcess({ ...env, APP_ROLE: 'worker' }),
    ]);
    processes.push(...started);
    for (const p of started) expect(p.output()).not.toMatch(/Migration .* failed|duplicate key/);

    const db = new Client({ connectionString: database.url });
    await db.connect();
    const rows = (
      await db.query<{ name: string; count: string }>('SELECT name, count(*) FROM schema_migrations GROUP BY name')
    ).rows;
    await db.end();
    expect(rows.map((r) => r.name).sort()).toEqual(ALL_MIGRATIONS.map((m) => m.name).sort());
    expect(rows.every((r) => r.count === '1')).toBe(true);

    for (const p of started) {
      expect(p.baseUrl).not.toBe('');
      const health = await fetch(`${p.baseUrl}/api/health`);
      expect(health.status).toBe(200);
      expect(((await health.json()) as any).data.checks.database.status).toBe('up');
      expect((await fetch(`${p.baseUrl}/api/ready`)).status).toBe(200);
    }
    // The worker's port serves nothing else.
    const worker = started[1];
    const other = await fetch(`${worker.baseUrl}/api/auth/me`);
    expect(other.status).toBe(404);
    expect(((await other.json()) as any).error.code).toBe('NOT_FOUND');
    // A draining worker says so on /api/ready before it stops.
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  }, 240_000);
});
