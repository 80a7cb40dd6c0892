import { createTestDatabase, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { TcpProxy } from './support/tcp-proxy.js';

describe('health and readiness', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let app: TestApp;

  beforeAll(async () => {
    database = await createTestDatabase();
    const target = new URL(database.url);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.open();
    const viaProxy = new URL(database.url);
    viaProxy.port = String(proxy.port);
    app = await startTestApp({ database: { ...database, url: viaProxy.toString(), drop: async () => undefined } });
  });

  afterAll(async () => {
    await proxy.open().catch(() => undefined);
    await app.close();
    await proxy.cut();
    await database.drop();
  });

  it('reports every dependency up with latencies, version and uptime', async () => {
    const res = await app.http.get('/api/health').expect(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data.status).toBe('ok');
    expect(res.body.data.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(res.body.data.uptimeSeconds).toBeGreaterThanOrEqual(0);
    for (const name of ['database', 'vector', 'queue']) {
      expect(res.body.data.checks[name]).toEqual(
        expect.objectContaining({ status: 'up', latencyMs: expect.any(Number) }),
      );
    }
    if (process.env.TEST_REDIS_URL) expect(res.body.data.checks.redis.status).toBe('up');
    const ready = await app.http.get('/api/ready').expect(200);
    expect(ready.body.data.status).toBe('ready');
  });

  it('answers /api/ready with 503 DEPENDENCY_UNAVAILABLE while the database is unreachable, and recovers by itself', async () => {
    await proxy.cut();
    const ready = await app.http.get('/api/ready').expect(503);
    expect(ready.body.success).toBe(false);
    expect(ready.body.error.code).toBe('DEPENDENCY_UNAVAILABLE');
    expect(ready.body.error.details.checks.database.status).toBe('down');
    expect(JSON.stringify(ready.body)).not.toContain('postgres');
    const health = await app.http.get('/api/health').expect(200);
    expect(health.body.data.status).toBe('degraded');
    expect(health.body.data.checks.database.status).toBe('down');

    await proxy.open();
    let recovered = false;
    for (let attempt = 0; attempt < 30 && !recovered; attempt += 1) {
      const res = await app.http.get('/api/ready');
      recovered = res.status === 200;
      if (!recovered) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(recovered).toBe(true);
  });
});
