import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { buildOnce, startAppProcess, type AppProcess } from './support/app-process';
import { call } from './support/drill-helpers';
import { createTestDatabase, deploymentEnv, describeOnSharedServices, type TestDatabase } from './support/test-app';
import { waitFor } from './support/wait';

/**
 * Receivers that record, per path prefix (one per user), how many deliveries are open at once: `/<user>/silent`
 * never answers (the attempt ends at its deadline), `/<user>/good` answers 200 at once.
 */
class CountingReceivers {
  readonly open = new Map<string, number>();
  readonly mostOpen = new Map<string, number>();
  readonly arrivals: { owner: string; at: number; deliveryId: string }[] = [];
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  base = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const [, owner, kind] = (req.url ?? '').split('/');
      this.arrivals.push({ owner, at: Date.now(), deliveryId: String(req.headers['atrium-delivery-id']) });
      const now = (this.open.get(owner) ?? 0) + 1;
      this.open.set(owner, now);
      this.mostOpen.set(owner, Math.max(now, this.mostOpen.get(owner) ?? 0));
      res.on('close', () => this.open.set(owner, (this.open.get(owner) ?? 1) - 1));
      req.resume();
      if (kind === 'good') req.on('end', () => res.writeHead(200).end('ok'));
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/**
 * WEBHOOK_MAX_IN_FLIGHT_PER_USER holds across worker processes: an API process and two workers on one PostgreSQL
 * database, the per-user count kept in Redis with TEST_REDIS_URL, else in PostgreSQL (with BullMQ's PostgreSQL backend
 * as the queue). One user's receivers never answer; the other user's webhook still arrives within one attempt deadline.
 */
describeOnSharedServices(
  `fair shares across worker processes (${process.env.TEST_REDIS_URL ? 'BullMQ and leases on Redis' : 'BullMQ and leases on PostgreSQL'})`,
  () => {
    const DEADLINE_MS = 3_000;
    let database: TestDatabase;
    let db: Client;
    let receivers: CountingReceivers;
    const dataDir = mkdtempSync(join(tmpdir(), 'atrium-fair-processes-'));
    const processes: AppProcess[] = [];
    const figures: Record<string, string | number> = {};

    beforeAll(async () => {
      buildOnce();
      database = await createTestDatabase();
      db = new Client({ connectionString: database.url });
      await db.connect();
      receivers = await new CountingReceivers().start();
    }, 300_000);

    afterAll(async () => {
      for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await Promise.all(processes.map((p) => p.exited));
      await db?.end();
      await database?.drop();
      await receivers?.stop();
      rmSync(dataDir, { recursive: true, force: true });
      // eslint-disable-next-line no-console
      console.log(
        `fair-shares-processes figures:\n${Object.entries(figures)
          .map(([k, v]) => `  ${k}: ${v}`)
          .join('\n')}`,
      );
    });

    it("one user's deliveries are at most WEBHOOK_MAX_IN_FLIGHT_PER_USER (1) under way across two workers; another user's webhook is not held", async () => {
      const env = {
        NODE_ENV: 'test',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        DATABASE_URL: database.url,
        DATABASE_POOL_SIZE: '5',
        ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
        ...deploymentEnv('fair-processes'),
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_TIMEOUT_MS: String(DEADLINE_MS),
        WEBHOOK_RETRY_BASE_MS: '500',
        WEBHOOK_MAX_ATTEMPTS: '2',
        RATE_LIMIT_USER_PER_MIN: '100000',
      };
      const start = async (role: 'api' | 'worker') => {
        const p = await startAppProcess({ ...env, APP_ROLE: role });
        processes.push(p);
        return p;
      };
      const api = await start('api');
      await Promise.all([start('worker'), start('worker')]);

      const account = async (name: string) => {
        const credentials = { email: `${name}@example.com`, password: 'fair-processes-password', name };
        expect(
          (await call(api.baseUrl, { method: 'POST', path: '/api/auth/register', body: credentials })).status,
        ).toBe(201);
        const token = (
          await call(api.baseUrl, {
            method: 'POST',
            path: '/api/auth/login',
            body: { email: credentials.email, password: credentials.password },
          })
        ).json as any;
        const accessToken = token.data.accessToken as string;
        const projectId = (
          (await call(api.baseUrl, { method: 'POST', path: '/api/projects', token: accessToken, body: { name } }))
            .json as any
        ).data.id as string;
        return { token: accessToken, projectId };
      };
      const execute = async (who: { token: string; projectId: string }, webhookUrl: string) => {
        const res = await call(api.baseUrl, {
          method: 'POST',
          path: '/api/agent/execute',
          token: who.token,
          body: { projectId: who.projectId, input: 'find notes', approval: 'none', webhookUrl },
        });
        expect(res.status).toBe(202);
        return (res.json as any).data.jobId as string;
      };
      const runView = async (who: { token: string }, id: string) =>
        ((await call(api.baseUrl, { method: 'GET', path: `/api/agent/status/${id}`, token: who.token })).json as any)
          .data;

      const hostile = await account('hostile');
      const other = await account('other');
      // Eight silent receivers of one user: without a shared count each worker would hold one of them (two at once).
      const hostileRuns: string[] = [];
      for (let i = 0; i < 8; i += 1) hostileRuns.push(await execute(hostile, `${receivers.base}/hostile/silent`));
      await waitFor(
        'the hostile deliveries under way',
        async () => receivers.arrivals.filter((a) => a.owner === 'hostile').length >= 2 || undefined,
        { timeoutMs: 60_000, intervalMs: 100 },
      );

      const runId = await execute(other, `${receivers.base}/other/good`);
      const finished = await waitFor(
        'the other run finished',
        async () => {
          const view = await runView(other, runId);
          return view.status === 'succeeded' ? view : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      const arrival = await waitFor(
        'the other webhook delivered',
        async () => receivers.arrivals.find((a) => a.owner === 'other'),
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      const otherWaitMs = arrival.at - Date.parse(finished.finishedAt);
      figures["other user's webhook: run finished → delivery arrived"] = `${otherWaitMs} ms`;
      expect(otherWaitMs).toBeLessThanOrEqual(DEADLINE_MS + 1_500);

      // Long enough for several hostile attempts to run one after another (each ends at its deadline).
      await waitFor(
        'several hostile attempts',
        async () => receivers.arrivals.filter((a) => a.owner === 'hostile').length >= 4 || undefined,
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      const hostileArrivals = receivers.arrivals.filter((a) => a.owner === 'hostile');
      figures['hostile attempts seen'] = hostileArrivals.length;
      figures['hostile deliveries open at once, at most'] = receivers.mostOpen.get('hostile') ?? 0;
      expect(receivers.mostOpen.get('hostile')).toBe(1);
      const silentFailed = await waitFor(
        'a silent delivery failed at its deadline',
        async () => {
          const views = await Promise.all(hostileRuns.map((id) => runView(hostile, id)));
          return views
            .flatMap((view) => view.webhook?.deliveries ?? [])
            .find((d: { attempts: number }) => d.attempts >= 1);
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      expect(silentFailed.lastError).toMatch(new RegExp(`no answer within ${DEADLINE_MS} ms`));
      if (!process.env.TEST_REDIS_URL) {
        // The leases are rows: at most one of the hostile user's at any moment, and none left by the other user.
        const rows = (await db.query(`SELECT key, count(*)::int AS n FROM slot_leases GROUP BY key`)).rows as {
          key: string;
          n: number;
        }[];
        for (const row of rows) expect(row.n).toBeLessThanOrEqual(1);
      }
    }, 300_000);
  },
);
