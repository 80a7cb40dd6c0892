import { bearer, makeUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

describe('auth (register, login, me)', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.close();
  });

  it('makes the first user an admin and later users members', async () => {
    const first = await makeUser(app);
    const second = await makeUser(app);
    expect(first.role).toBe('admin');
    expect(second.role).toBe('member');
  });

  it('registers, logs in and answers /me in the envelope with a traceId', async () => {
    const user = await makeUser(app, { name: 'Grace Hopper' });
    const res = await app.http.get('/api/auth/me').set(bearer(user.token)).expect(200);
    expect(res.body).toEqual({
      success: true,
      data: { id: user.id, email: user.email, name: 'Grace Hopper', role: 'member', createdAt: expect.any(String) },
      error: null,
      traceId: res.headers['x-request-id'],
    });
    expect(JSON.stringify(res.body)).not.toMatch(/password/i);
  });

  it('normalises email case and rejects a second account for the same email with 409 CONFLICT', async () => {
    const user = await makeUser(app, { email: 'Case.Test@Example.com' });
    expect(user.email).toBe('Case.Test@Example.com');
    const res = await app.http
      .post('/api/auth/register')
      .send({ email: 'case.test@example.com', password: 'another-password', name: 'Dup' })
      .expect(409);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('CONFLICT');
  });

  it.each([
    [{ email: 'not-an-email', password: '0123456789', name: 'x' }, 'email'],
    [{ email: 'short@example.com', password: 'short', name: 'x' }, 'password'],
    [{ email: 'noname@example.com', password: '0123456789' }, 'name'],
    [{ email: 'extra@example.com', password: '0123456789', name: 'x', role: 'admin' }, 'role'],
    [{ email: 42, password: '0123456789', name: 'x' }, 'email'],
  ])('rejects bad registration %j with 400 VALIDATION_FAILED naming %s', async (body, field) => {
    const res = await app.http.post('/api/auth/register').send(body).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(res.body.error.details)).toContain(field);
    expect(res.body.data).toBeNull();
  });

  it('answers malformed JSON with 400 and an oversized body with 413, both enveloped', async () => {
    const bad = await app.http
      .post('/api/auth/login')
      .set('Content-Type', 'application/json')
      .send('{"email":')
      .expect(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    expect(bad.body.traceId).toBe(bad.headers['x-request-id']);
    const huge = await app.http
      .post('/api/auth/register')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ email: 'x@example.com', password: 'x'.repeat(1024 * 1024 + 10), name: 'x' }))
      .expect(413);
    expect(huge.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(JSON.stringify(huge.body)).not.toMatch(/at .*\.js|stack/);
  });

  it('gives the same 401 for an unknown email and a wrong password', async () => {
    const user = await makeUser(app);
    const wrongPassword = await app.http
      .post('/api/auth/login')
      .send({ email: user.email, password: 'wrong-password' })
      .expect(401);
    const unknown = await app.http
      .post('/api/auth/login')
      .send({ email: 'nobody@example.com', password: 'wrong-password' })
      .expect(401);
    expect(wrongPassword.body.error).toEqual(unknown.body.error);
    expect(wrongPassword.body.error.code).toBe('AUTH_INVALID');
  });

  it('requires a token on /me, rejects a forged one, and names the expected credential for an API key', async () => {
    const missing = await app.http.get('/api/auth/me').expect(401);
    expect(missing.body.error.code).toBe('AUTH_REQUIRED');
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    const forged = await app.http
      .get('/api/auth/me')
      .set(bearer('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.bad'))
      .expect(401);
    expect(forged.body.error.code).toBe('AUTH_INVALID');
    const apiKey = await app.http
      .get('/api/auth/me')
      .set(bearer(`atr_${'a'.repeat(38)}`))
      .expect(401);
    expect(apiKey.body.error.message).toMatch(/user access token/);
  });

  it('echoes a safe incoming X-Request-Id, derives one from traceparent, and replaces an unsafe one', async () => {
    const echoed = await app.http.get('/api/health').set('X-Request-Id', 'req-123.abc').expect(200);
    expect(echoed.headers['x-request-id']).toBe('req-123.abc');
    expect(echoed.body.traceId).toBe('req-123.abc');
    const traced = await app.http
      .get('/api/health')
      .set('traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
      .expect(200);
    expect(traced.headers['x-request-id']).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    const unsafe = await app.http.get('/api/health').set('X-Request-Id', 'bad id <script>').expect(200);
    expect(unsafe.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers an unknown route with 404 NOT_FOUND in the envelope', async () => {
    const res = await app.http.get('/api/does-not-exist').expect(404);
    expect(res.body).toMatchObject({ success: false, data: null, error: { code: 'NOT_FOUND' } });
  });

  it('limits login attempts per IP and email to 10 per 15 minutes with 429 and Retry-After', async () => {
    const user = await makeUser(app);
    for (let attempt = 0; attempt < 9; attempt += 1) {
      await app.http.post('/api/auth/login').send({ email: user.email, password: 'wrong-password' }).expect(401);
    }
    // makeUser's successful login was the first attempt of this window.
    const limited = await app.http
      .post('/api/auth/login')
      .send({ email: user.email, password: user.password })
      .expect(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Area B details are camelCase, like every Area B body.
    expect(limited.body.error.details).toEqual({ retryAfterSeconds: Number(limited.headers['retry-after']) });
    // Another email from the same IP is unaffected.
    const other = await makeUser(app);
    expect(other.token).toBeTruthy();
  });

  it('serves the OpenAPI document', async () => {
    const res = await app.http.get('/api/docs/openapi.json').expect(200);
    expect(res.body.paths['/api/auth/login']).toBeDefined();
    const page = await app.http.get('/api/docs').redirects(1).expect(200);
    expect(page.text).toContain('swagger');
  });
});
