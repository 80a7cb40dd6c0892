import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOnce, startAppProcess } from './support/app-process.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function post(baseUrl: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/**
 * The zero-config default as a user runs it: `node dist/src/main.js` with no DATABASE_URL, data under
 * DATA_DIR. SIGTERM drains in-flight requests and exits 0; a restart keeps users and sessions.
 */
describe('process lifecycle on the embedded default', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-lifecycle-'));
  const env = { DATA_DIR: dataDir, LOG_LEVEL: 'info' };

  beforeAll(() => buildOnce(), 120_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('finishes an in-flight request on SIGTERM, exits 0, and keeps users and tokens across a restart', async () => {
    // The default drain delay (startAppProcess shortens it for processes stopped only to clean up).
    const first = await startAppProcess({ ...env, SHUTDOWN_DRAIN_DELAY_MS: '5000' });
    const health = await fetch(`${first.baseUrl}/api/health`);
    expect(health.status).toBe(200);
    const credentials = { email: 'lifecycle@example.com', password: 'lifecycle-password', name: 'Life Cycle' };
    expect((await post(first.baseUrl, '/api/auth/register', credentials)).status).toBe(201);
    const login = await post(first.baseUrl, '/api/auth/login', {
      email: credentials.email,
      password: credentials.password,
    });
    expect(login).toMatchObject({ status: 200 });
    const token = login.body.data.accessToken as string;

    // A request whose body is still arriving when SIGTERM lands must still be answered.
    const url = new URL(`${first.baseUrl}/api/auth/login`);
    const payload = JSON.stringify({ email: credentials.email, password: credentials.password });
    const inFlight = new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.write(payload.slice(0, 10));
      setTimeout(() => {
        first.child.kill('SIGTERM');
        setTimeout(() => req.end(payload.slice(10)), 300);
      }, 200);
    });
    expect(await inFlight).toBe(200);
    const started = Date.now();
    expect(await first.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(first.output()).toContain('stopped cleanly');

    const second = await startAppProcess(env);
    try {
      const me = await fetch(`${second.baseUrl}/api/auth/me`, { headers: { Authorization: `Bearer ${token}` } });
      expect(me.status).toBe(200);
      expect(((await me.json()) as { data: { email: string } }).data.email).toBe(credentials.email);
      const relogin = await post(second.baseUrl, '/api/auth/login', {
        email: credentials.email,
        password: credentials.password,
      });
      expect(relogin.status).toBe(200);
      // Secrets are never logged.
      expect(second.output() + first.output()).not.toContain(credentials.password);
      expect(second.output()).not.toContain(token);
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }
  }, 240_000);

  it('drains on SIGTERM: /api/ready answers 503 while every call in flight or arriving is still answered, then exits 0', async () => {
    // The first test's data directory: the drain does not need a first start, whose initdb and migrations the
    // first test already paid for (run alone, this test makes them).
    const app = await startAppProcess({
      ...env,
      SHUTDOWN_DRAIN_DELAY_MS: '8000',
      RATE_LIMIT_LOGIN_PER_15_MIN: '1000',
    });
    try {
      const credentials = { email: 'drain@example.com', password: 'drain-password-1', name: 'Drain' };
      expect((await post(app.baseUrl, '/api/auth/register', credentials)).status).toBe(201);
      const token = (
        await post(app.baseUrl, '/api/auth/login', { email: credentials.email, password: credentials.password })
      ).body.data.accessToken as string;

      // Readiness, polled until the listener is gone: what a Kubernetes readiness probe sees.
      const readiness: (number | 'refused')[] = [];
      const probing = (async () => {
        for (;;) {
          const status = await fetch(`${app.baseUrl}/api/ready`).then(
            (res) => res.status,
            () => 'refused' as const,
          );
          readiness.push(status);
          if (status === 'refused') return;
          await sleep(100);
        }
      })();

      // 20 logins (slow: password hashing) in flight at SIGTERM, then calls for the next 2 s (traffic the
      // load balancer still sends until readiness fails): all sent well inside the 8 s drain delay, so the
      // margin does not depend on the machine's speed.
      const failure = (error: Error & { cause?: { code?: string } }) =>
        `${error.message} (${error.cause?.code ?? 'no code'})`;
      const login = () =>
        post(app.baseUrl, '/api/auth/login', { email: credentials.email, password: credentials.password }).then(
          (res) => res.status,
          failure,
        );
      const me = () =>
        fetch(`${app.baseUrl}/api/auth/me`, { headers: { Authorization: `Bearer ${token}` } }).then(
          (res) => res.status,
          failure,
        );
      const calls: Promise<number | string>[] = Array.from({ length: 20 }, login);
      await sleep(20);
      app.child.kill('SIGTERM');
      const signalled = Date.now();
      for (let i = 0; Date.now() - signalled < 2000; i += 1) {
        calls.push(i % 2 === 0 ? me() : login());
        await sleep(50);
      }
      const answers = await Promise.all(calls);
      expect(answers.length).toBeGreaterThan(20);
      expect(answers).toEqual(answers.map(() => expect.any(Number)));
      expect(answers.filter((status) => status !== 200)).toEqual([]);

      expect(await app.exited).toBe(0);
      await probing;
      // Ready before SIGTERM, then 503 (while still answering), then the listener closed.
      const firstDraining = readiness.indexOf(503);
      expect(firstDraining).toBeGreaterThan(-1);
      expect(readiness.slice(firstDraining, -1).every((status) => status === 503)).toBe(true);
      expect(readiness[readiness.length - 1]).toBe('refused');
      expect(app.output()).toContain('"msg":"stopped cleanly"');
    } finally {
      if (app.child.exitCode === null) app.child.kill('SIGKILL');
      await app.exited;
    }
  }, 120_000);

  it('refuses to start with a bad variable, naming it in one line', async () => {
    await expect(startAppProcess({ ...env, PORT: 'eighty' }, 30_000)).rejects.toThrow(
      /Invalid configuration: PORT must be an integer/,
    );
    await expect(startAppProcess({ ...env, NODE_ENV: 'production', PORT: '0' }, 30_000)).rejects.toThrow(
      /JWT_SECRET is required/,
    );
  }, 90_000);
});
