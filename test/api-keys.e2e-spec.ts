import { DatabasePool } from '../src/database/database-pool.js';
import { Client } from 'pg';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import {
  createTestDatabase,
  deploymentEnv,
  describeOnSharedServices,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from './support/test-app.js';

/** A tasks key with any extra body fields merged in; returns the whole creation answer (prefix, expiresAt too). */
async function makeApiKey(app: TestApp, user: TestUser, body: Record<string, unknown> = {}) {
  const res = await app.http
    .post('/api/api-keys')
    .set(bearer(user.token))
    .send({ name: 'test key', scopes: ['tasks:read', 'tasks:write'], expiresIn: 'never', ...body })
    .expect(201);
  return res.body.data as { id: string; key: string; prefix: string; expiresAt: string | null };
}

describe('API keys (/api/api-keys) and key authentication on Area A', () => {
  let app: TestApp;
  let db: DatabasePool;

  beforeAll(async () => {
    app = await startTestApp();
    db = app.app.get(DatabasePool);
  }, 180_000);
  afterAll(async () => {
    await app.close();
  });

  const callTool = (key: string, name = 'list_tasks', args: Record<string, unknown> = {}) =>
    app.http.post('/api/v1/public/mcp/call').set(bearer(key)).send({ name, arguments: args });

  it('creates a key in the documented format and returns the plaintext once only', async () => {
    const user = await makeUser(app);
    const res = await app.http
      .post('/api/api-keys')
      .set(bearer(user.token))
      .send({ name: 'laptop', scopes: ['tasks:read'], expiresIn: '30d' })
      .expect(201);
    const created = res.body.data;
    expect(created).toEqual({
      id: expect.any(String),
      name: 'laptop',
      scopes: ['tasks:read'],
      prefix: created.key.slice(4, 12),
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
      projectIds: null,
      repos: null,
      confirmWrites: false,
      tools: null,
      readOnly: false,
      allowedIps: null,
      key: expect.stringMatching(/^atr_[0-9A-Za-z]{38}$/),
    });
    const days = (Date.parse(created.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);

    const list = await app.http.get('/api/api-keys').set(bearer(user.token)).expect(200);
    expect(list.body.data.items).toHaveLength(1);
    expect(list.body.data.nextCursor).toBeNull();
    expect(list.body.data.items[0]).toMatchObject({
      id: created.id,
      status: 'active',
      daysUntilExpiry: 30,
      callCount: 0,
      lastUsedAt: null,
      prefix: created.prefix,
    });
    expect(JSON.stringify(list.body)).not.toContain(created.key);
    const one = await app.http.get(`/api/api-keys/${created.id}`).set(bearer(user.token)).expect(200);
    expect(JSON.stringify(one.body)).not.toContain(created.key);
    expect(one.body.data.recentUsage).toEqual([]);

    // Only an HMAC is stored: neither the key nor its random part appears in the row.
    const rows = await db.query(`SELECT * FROM api_keys WHERE id = $1`, [created.id]);
    const stored = JSON.stringify(rows[0]) + (rows[0].key_hash as Buffer).toString('latin1');
    expect(stored).not.toContain(created.key.slice(4, 36));
    expect((rows[0].key_hash as Buffer).length).toBe(32);
  });

  it('shows daysUntilExpiry null for a never-expiring key and no X-Api-Key-Expires-At header', async () => {
    const user = await makeUser(app);
    const key = await makeApiKey(app, user, { expiresIn: 'never' });
    const list = await app.http.get('/api/api-keys').set(bearer(user.token)).expect(200);
    expect(list.body.data.items[0]).toMatchObject({ expiresAt: null, daysUntilExpiry: null });
    const res = await callTool(key.key).expect(200);
    expect(res.headers['x-api-key-expires-at']).toBeUndefined();
    const expiring = await makeApiKey(app, user, { expiresIn: '1y' });
    const res2 = await callTool(expiring.key).expect(200);
    expect(res2.headers['x-api-key-expires-at']).toBe(expiring.expiresAt);
  });

  it.each([
    [
      { name: 'x', scopes: ['tasks:admin'], expiresIn: 'never' },
      'tasks:read, tasks:write, docs:read, docs:write, github:read, github:write',
    ],
    [{ name: 'x', scopes: ['tasks:read'], expiresIn: '7d' }, 'never, 30d, 90d, 180d, 1y'],
    [{ name: 'x', scopes: [], expiresIn: 'never' }, 'scopes'],
    [{ name: '', scopes: ['tasks:read'], expiresIn: 'never' }, 'name'],
    [{ name: 'x'.repeat(101), scopes: ['tasks:read'], expiresIn: 'never' }, 'name'],
    [{ name: 'x', scopes: ['tasks:read'], expiresIn: 'never', projectIds: ['not-a-uuid'] }, 'projectIds'],
  ])('rejects %j with 400 naming %s', async (body, expected) => {
    const user = await makeUser(app);
    const res = await app.http.post('/api/api-keys').set(bearer(user.token)).send(body).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(res.body.error.details)).toContain(expected);
  });

  it("answers 404 for another user's key id (get and delete) and for junk ids", async () => {
    const alice = await makeUser(app);
    const bob = await makeUser(app);
    const key = await makeApiKey(app, alice);
    await app.http.get(`/api/api-keys/${key.id}`).set(bearer(bob.token)).expect(404);
    await app.http.delete(`/api/api-keys/${key.id}`).set(bearer(bob.token)).expect(404);
    await app.http.get('/api/api-keys/not-a-uuid').set(bearer(bob.token)).expect(404);
    const bobsList = await app.http.get('/api/api-keys').set(bearer(bob.token)).expect(200);
    expect(bobsList.body.data).toEqual({ items: [], nextCursor: null });
    await callTool(key.key).expect(200); // still alive
  });

  it('pages the key list newest first ({items, nextCursor}) and refuses bad paging input with 400', async () => {
    const user = await makeUser(app);
    const made: string[] = [];
    for (let i = 0; i < 5; i += 1) made.push((await makeApiKey(app, user, { name: `key ${i}` })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { items: { id: string }[]; nextCursor: string | null } } } = await app.http
        .get(`/api/api-keys?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
        .set(bearer(user.token))
        .expect(200);
      expect(page.body.data.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.items.map((k) => k.id));
      cursor = page.body.data.nextCursor;
    } while (cursor && seen.length < 10);
    expect(seen).toEqual([...made].reverse());
    // A hand-made cursor whose values PostgreSQL would refuse to cast is a 400 too, not a 500.
    const handMade = Buffer.from(JSON.stringify({ createdAt: '2026-01-01T00:00:00.000Z', id: 'x' })).toString(
      'base64url',
    );
    for (const bad of ['limit=0', 'limit=201', 'limit=abc', 'cursor=garbage', `cursor=${handMade}`]) {
      const res = await app.http.get(`/api/api-keys?${bad}`).set(bearer(user.token)).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('needs a user token: an API key on /api/api-keys is 401 naming the expected credential', async () => {
    const user = await makeUser(app);
    const key = await makeApiKey(app, user);
    const res = await app.http.get('/api/api-keys').set(bearer(key.key)).expect(401);
    expect(res.body.error.code).toBe('AUTH_INVALID');
    expect(res.body.error.message).toMatch(/user access token/);
    await app.http.get('/api/api-keys').expect(401);
  });

  it('rejects a user access token on Area A with 401 invalid_api_key naming the API key', async () => {
    const user = await makeUser(app);
    const res = await callTool(user.token).expect(401);
    expect(res.headers['www-authenticate']).toMatch(
      /^Bearer error="invalid_token", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
    );
    expect(res.body.error.code).toBe('invalid_api_key');
    expect(res.body.error.message).toMatch(/personal API key \(atr_/);
    const project = await callTool(`atp_${'a'.repeat(40)}`).expect(401);
    expect(project.body.error.message).toMatch(/project session token/);
  });

  it('revokes: the next request answers 401 revoked_api_key, and the list says revoked', async () => {
    const user = await makeUser(app);
    const key = await makeApiKey(app, user, { expiresIn: '90d' });
    await callTool(key.key).expect(200);
    await app.http.delete(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200);
    const res = await callTool(key.key).expect(401);
    expect(res.body.error.code).toBe('revoked_api_key');
    expect(res.headers['www-authenticate']).toMatch(
      /^Bearer error="invalid_token", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
    );
    expect(res.headers['x-api-key-expires-at']).toBe(key.expiresAt); // every answer to a key with an expiry
    const tools = await app.http.get('/api/v1/public/mcp/tools').set(bearer(key.key)).expect(401);
    expect(tools.body.error.code).toBe('revoked_api_key');
    const list = await app.http.get('/api/api-keys').set(bearer(user.token)).expect(200);
    expect(list.body.data.items[0].status).toBe('revoked');
    await app.http.delete(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200); // idempotent
  });

  it('answers 401 expired_api_key for a key whose expiry has passed, and lists it as expired', async () => {
    const user = await makeUser(app);
    const key = await makeApiKey(app, user, { expiresIn: '30d' });
    await callTool(key.key).expect(200);
    await db.query(`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [key.id]);
    const res = await callTool(key.key).expect(401);
    expect(res.body.error.code).toBe('expired_api_key');
    expect(res.headers['www-authenticate']).toMatch(
      /^Bearer error="invalid_token", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
    );
    expect(res.headers['x-api-key-expires-at']).toBeDefined();
    const list = await app.http.get('/api/api-keys').set(bearer(user.token)).expect(200);
    expect(list.body.data.items[0]).toMatchObject({ status: 'expired', daysUntilExpiry: 0 });
  });

  it('counts 200 concurrent calls exactly and logs the last 50 calls without argument values', async () => {
    const user = await makeUser(app);
    const key = await makeApiKey(app, user);
    const results = await Promise.all(
      Array.from({ length: 200 }, () => callTool(key.key, 'search_tasks', { query: 'secret-needle-value' })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const one = await app.http.get(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200);
    expect(one.body.data.callCount).toBe(200);
    expect(one.body.data.lastUsedAt).toEqual(expect.any(String));
    expect(one.body.data.recentUsage).toHaveLength(50);
    expect(one.body.data.recentUsage[0]).toEqual({
      at: expect.any(String),
      tool: 'search_tasks',
      status: 200,
      durationMs: expect.any(Number),
      clientName: null,
      clientVersion: null,
    });
    const usageRows = await db.query(`SELECT * FROM api_key_usage WHERE api_key_id = $1`, [key.id]);
    expect(usageRows).toHaveLength(200);
    expect(JSON.stringify(usageRows)).not.toContain('secret-needle-value');
  });

  it('logs failed calls with their status', async () => {
    const user = await makeUser(app);
    const key = await makeApiKey(app, user, { scopes: ['tasks:read'] });
    await callTool(key.key, 'create_task', { title: 'x' }).expect(403);
    await callTool(key.key, 'no_such_tool').expect(404);
    const one = await app.http.get(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200);
    expect(one.body.data.recentUsage.map((u: { tool: string; status: number }) => [u.tool, u.status])).toEqual([
      ['no_such_tool', 404],
      ['create_task', 403],
    ]);
    expect(one.body.data.callCount).toBe(2);
  });
});

describeOnSharedServices('API key call counts across two instances of one deployment (real PostgreSQL only)', () => {
  let first: TestApp;
  let second: TestApp;
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
    // The per-user tool budget is one key's limit by default; this test counts calls, it does not test that budget.
    const env = { ...deploymentEnv('keys'), RATE_LIMIT_USER_TOOLS_PER_MIN: '1000000' };
    first = await startTestApp({ database, env });
    second = await startTestApp({ database, env });
  }, 180_000);
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
  });

  it('counts concurrent calls on the same keys through both instances exactly, without deadlocks', async () => {
    const user = await makeUser(first);
    const keys = await Promise.all([0, 1, 2].map(() => makeApiKey(first, user)));
    // 3 keys × 2 instances × 60 calls, all at once: each instance's counter writes batches over the same rows.
    const calls = [first, second].flatMap((instance) =>
      keys.flatMap((key) =>
        Array.from({ length: 60 }, () =>
          instance.http
            .post('/api/v1/public/mcp/call')
            .set(bearer(key.key))
            .send({ name: 'list_tasks', arguments: {} }),
        ),
      ),
    );
    const statuses = (await Promise.all(calls)).map((r) => r.status);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    for (const key of keys) {
      const seenByFirst = await first.http.get(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200);
      const seenBySecond = await second.http.get(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200);
      expect(seenByFirst.body.data.callCount).toBe(120);
      expect(seenBySecond.body.data.callCount).toBe(120);
    }
  }, 120_000);

  it('a key revoked through one instance is refused by the other on its next call', async () => {
    const user = await makeUser(first);
    const key = await makeApiKey(first, user);
    await second.http
      .post('/api/v1/public/mcp/call')
      .set(bearer(key.key))
      .send({ name: 'list_tasks', arguments: {} })
      .expect(200);
    await first.http.delete(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200);
    const refused = await second.http
      .post('/api/v1/public/mcp/call')
      .set(bearer(key.key))
      .send({ name: 'list_tasks', arguments: {} })
      .expect(401);
    expect(refused.body.error.code).toBe('revoked_api_key');
    const one = await second.http.get(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200);
    expect(one.body.data).toMatchObject({ status: 'revoked', callCount: 1 });
  });

  // Each instance keeps the keys it verified (HMAC -> key id) and skips their lookup; what a key may do is
  // still read from its row on every call, so no change waits for anything to expire or be announced.
  it('a key both instances have verified is refused by each on its very next call once it expires, and a narrowed scope holds at once', async () => {
    const user = await makeUser(first);
    const key = await makeApiKey(first, user, { expiresIn: '30d' });
    const call = (instance: TestApp, name = 'list_tasks', args: Record<string, unknown> = {}) =>
      instance.http.post('/api/v1/public/mcp/call').set(bearer(key.key)).send({ name, arguments: args });
    for (const instance of [first, second, first, second]) await call(instance).expect(200);
    // The scopes change in the database (as an operator or a later feature might): the next call on either instance sees it.
    const db = first.app.get(DatabasePool);
    await db.query(`UPDATE api_keys SET scopes = ARRAY['tasks:write'] WHERE id = $1`, [key.id]);
    for (const instance of [second, first]) {
      const narrowed = await call(instance).expect(403);
      expect(narrowed.body.error.code).toBe('insufficient_scope');
    }
    await db.query(
      `UPDATE api_keys SET scopes = ARRAY['tasks:read'], expires_at = now() - interval '1 second' WHERE id = $1`,
      [key.id],
    );
    for (const instance of [second, first]) {
      const refused = await call(instance).expect(401);
      expect(refused.body.error.code).toBe('expired_api_key');
    }
    const one = await first.http.get(`/api/api-keys/${key.id}`).set(bearer(user.token)).expect(200);
    // 4 answered calls and the 2 refused for scope (a usable key's call counts, as before); the expired ones do not.
    expect(one.body.data).toMatchObject({ status: 'expired', callCount: 6 });
  });
});

describeOnSharedServices('the call count has a lane of its own (real PostgreSQL only)', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ env: { DATABASE_POOL_SIZE: '2' } });
  }, 180_000);
  afterAll(async () => {
    await app?.close();
  });

  it('commits a call’s count while every connection of the shared pool is busy: the count never queues behind reads', async () => {
    const user = await makeUser(app);
    const key = await makeApiKey(app, user);
    const dataSource = app.app.get(DatabasePool);
    // A first call: the process verifies the key once (a lookup on the shared pool); later calls are only counted.
    await app.http
      .post('/api/v1/public/mcp/call')
      .set(bearer(key.key))
      .send({ name: 'list_tasks', arguments: {} })
      .expect(200);
    // Both shared connections sleep; the next call's list has to wait for them, its count does not. The sleep stays
    // well under the pool's 5 s wait for a connection (DatabasePool), which the waiting call would otherwise meet.
    const busy = [dataSource.query(`SELECT pg_sleep(3)`), dataSource.query(`SELECT pg_sleep(3)`)];
    let poolFree = false;
    void Promise.all(busy).then(() => (poolFree = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const call = app.http
      .post('/api/v1/public/mcp/call')
      .set(bearer(key.key))
      .send({ name: 'list_tasks', arguments: {} })
      .then((res) => res.status);
    const observer = new Client({ connectionString: app.database.url });
    await observer.connect();
    try {
      let counted = 1;
      for (let i = 0; i < 60 && counted === 1; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        counted = Number(
          (await observer.query(`SELECT call_count FROM api_keys WHERE id = $1`, [key.id])).rows[0].call_count,
        );
      }
      expect(counted).toBe(2);
      expect(poolFree).toBe(false); // counted while both shared connections were still sleeping
      expect(await call).toBe(200);
    } finally {
      await observer.end();
      await Promise.all(busy);
    }
  });
});
