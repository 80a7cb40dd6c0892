import { bearer, makeApiKey, makeUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

describe('Area A per-key rate limit', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ env: { RATE_LIMIT_KEY_PER_MIN: '3' } });
  }, 180_000);
  afterAll(async () => {
    await app.close();
  });

  it('answers 429 rate_limited with Retry-After once a key exceeds RATE_LIMIT_KEY_PER_MIN, per key', async () => {
    const user = await makeUser(app);
    const makeKey = async () => (await makeApiKey(app, user, { scopes: ['tasks:read'] })).key;
    const key = await makeKey();
    const call = (k: string) => app.http.post('/api/v1/public/mcp/call').set(bearer(k)).send({ name: 'list_tasks' });
    for (let i = 0; i < 3; i += 1) await call(key).expect(200);
    const limited = await call(key).expect(429);
    expect(limited.body).toEqual({ error: { code: 'rate_limited', message: expect.any(String), details: expect.any(Object) }, traceId: expect.any(String) });
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    await app.http.get('/api/v1/public/mcp/tools').set(bearer(key)).expect(429);
    // Another key of the same user has its own budget.
    await call(await makeKey()).expect(200);
    // A bad key is rejected before it can spend anyone's budget.
    await app.http.post('/api/v1/public/mcp/call').send({ name: 'list_tasks' }).expect(401);
  });
});
