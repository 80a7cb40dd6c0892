import { createServer, get as httpGet, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { call } from './support/drill-helpers';
import { signUpWithProject, useProcessDeployment } from './support/process-deployment';
import { describeOnSharedServices } from './support/test-app';
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
    let receivers: CountingReceivers;
    const deployment = useProcessDeployment('fair-processes', {
      env: () => ({
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_TIMEOUT_MS: String(DEADLINE_MS),
        WEBHOOK_RETRY_BASE_MS: '500',
        WEBHOOK_MAX_ATTEMPTS: '2',
        RATE_LIMIT_USER_PER_MIN: '100000',
      }),
    });

    beforeAll(async () => {
      receivers = await new CountingReceivers().start();
    });

    afterAll(async () => {
      await receivers?.stop();
    });

    it('AGENT_MAX_STREAMS_PER_USER (1) holds across two API processes: a second stream on the other one is 429 until the first closes', async () => {
      const { start, db } = deployment();
      const apis = await Promise.all([0, 1].map(() => start('api', { AGENT_MAX_STREAMS_PER_USER: '1' })));
      const streamer = await signUpWithProject(apis[0].baseUrl, 'streamer');
      const executed = await call(apis[0].baseUrl, {
        method: 'POST',
        path: '/api/agent/execute',
        token: streamer.token,
        body: { projectId: streamer.projectId, input: 'stream me' },
      });
      expect(executed.status).toBe(202);
      const jobId = executed.json.data.jobId as string;
      const open = (baseUrl: string) =>
        new Promise<IncomingMessage>((resolve, reject) => {
          const req = httpGet(
            `${baseUrl}/api/agent/stream/${jobId}`,
            { headers: { authorization: `Bearer ${streamer.token}`, accept: 'text/event-stream' } },
            resolve,
          );
          req.on('error', reject);
        });
      const first = await open(apis[0].baseUrl);
      expect(first.statusCode).toBe(200); // no worker: the run stays queued and its stream open

      const refused = await open(apis[1].baseUrl);
      const body = await new Promise<string>((resolve) => {
        let text = '';
        refused.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        refused.on('close', () => resolve(text));
        if (refused.statusCode === 200) refused.destroy(); // the cap did not hold: fail below, not hang
      });
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(body).error.code).toBe('RATE_LIMITED');
      if (!process.env.TEST_REDIS_URL) {
        const { rows } = await db.query(`SELECT count(*)::int AS n FROM slot_leases WHERE key LIKE 'streams:%'`);
        expect(rows[0].n).toBe(1);
      }

      first.destroy(); // the client leaves: its slot is freed on every process
      const again = await waitFor(
        'a stream slot on the other process',
        async () => {
          const res = await open(apis[1].baseUrl);
          if (res.statusCode === 200) return res;
          res.resume();
          return undefined;
        },
        { timeoutMs: 15_000, intervalMs: 200 },
      );
      again.destroy();
      for (const api of apis) api.child.kill('SIGTERM');
      await Promise.all(apis.map((api) => api.exited));
    }, 180_000);

    it("one user's deliveries are at most WEBHOOK_MAX_IN_FLIGHT_PER_USER (1) under way across two workers; another user's webhook is not held", async () => {
      const { start, db, figures } = deployment();
      const api = await start('api');
      await Promise.all([start('worker'), start('worker')]);
      const account = (name: string) => signUpWithProject(api.baseUrl, name);
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
