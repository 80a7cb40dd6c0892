import { Redis } from 'ioredis';
import { bearer, makeApiKey, makeUser } from './support/factories.js';
import { oauthTokens } from './support/oauth-helpers.js';
import { startTestApp, type TestApp } from './support/test-app.js';

describe('Area A per-key rate limit', () => {
  let app: TestApp;

  beforeAll(async () => {
    // The per-user budget (one key's by default) is tried in fair-shares.e2e-spec.ts; here only the keys' own limits.
    app = await startTestApp({ env: { RATE_LIMIT_KEY_PER_MIN: '3', RATE_LIMIT_USER_TOOLS_PER_MIN: '100000' } });
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
    expect(limited.body).toEqual({
      error: { code: 'rate_limited', message: expect.any(String), details: expect.any(Object) },
      traceId: expect.any(String),
    });
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    await app.http.get('/api/v1/public/mcp/tools').set(bearer(key)).expect(429);
    // Another key of the same user has its own budget.
    await call(await makeKey()).expect(200);
    // A bad key is rejected before it can spend anyone's budget.
    await app.http.post('/api/v1/public/mcp/call').send({ name: 'list_tasks' }).expect(401);
  });

  // The limiter's script runs by its digest (EVALSHA); a Redis that lost its scripts (a restart, SCRIPT FLUSH) gets the
  // text again, and the count goes on where it was.
  (process.env.TEST_REDIS_URL ? it : it.skip)('still counts after Redis forgets its scripts', async () => {
    const user = await makeUser(app);
    const { key } = await makeApiKey(app, user, { scopes: ['tasks:read'] });
    const call = () => app.http.post('/api/v1/public/mcp/call').set(bearer(key)).send({ name: 'list_tasks' });
    await call().expect(200);
    const redis = new Redis(process.env.TEST_REDIS_URL!, { maxRetriesPerRequest: 1 });
    try {
      await redis.script('FLUSH');
    } finally {
      redis.disconnect();
    }
    await call().expect(200);
    await call().expect(200);
    expect((await call().expect(429)).body.error.code).toBe('rate_limited');
  });

  it('an OAuth grant has a budget of its own, shared by every access token of that grant', async () => {
    const user = await makeUser(app);
    const tokens = await oauthTokens(app, user, ['tasks:read']);
    const call = (token: string) =>
      app.http.post('/api/v1/public/mcp/call').set(bearer(token)).send({ name: 'list_tasks' });
    for (let i = 0; i < 3; i += 1) await call(tokens.access_token).expect(200);
    const limited = await call(tokens.access_token).expect(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // A refreshed token is the same grant: still limited. Another grant of the same user is not.
    const rotated = await app.http
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: tokens.clientId })
      .expect(200);
    await call(rotated.body.access_token).expect(429);
    await call((await oauthTokens(app, user, ['tasks:read'])).access_token).expect(200);
  });
});
