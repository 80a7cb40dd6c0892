import { DatabasePool } from '../src/database/database-pool.js';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import {
  approveConsent,
  authorizeQuery,
  consentRequestOf,
  oauthTokens,
  pkcePair,
  registerPublicClient,
  tokenRequest,
} from './support/oauth-helpers.js';
import {
  createTestDatabase,
  deploymentEnv,
  describeOnSharedServices,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from './support/test-app.js';

// Key rolling and the admin policy (API.md "Grants and admin policy (revision 3)"), from outside over HTTP, on both
// doors: the JSON door (/api/v1/public/mcp/call) and the MCP door (JSON-RPC on /api/v1/public/mcp).

const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };
const MCP_PATH = '/api/v1/public/mcp';
const DEFAULTS = {
  maxKeyLifetimeDays: null,
  allowedKeyScopes: null,
  requireConfirmWritesForWriteScopes: false,
  allowedIps: null,
  allowedOAuthClients: null,
  maxCredentialsPerUser: 50,
};

function createKey(app: TestApp, user: TestUser, body: Record<string, unknown> = {}) {
  return app.http
    .post('/api/api-keys')
    .set(bearer(user.token))
    .send({ name: 'test key', scopes: ['tasks:read'], expiresIn: '30d', ...body });
}

/** Both doors, one call each: the JSON door's status and code, the MCP door's status and code (200: it worked). */
async function bothDoors(app: TestApp, key: string): Promise<{ json: string; mcp: string }> {
  const json = await app.http
    .post('/api/v1/public/mcp/call')
    .set(bearer(key))
    .send({ name: 'list_tasks', arguments: {} });
  const mcp = await app.http
    .post(MCP_PATH)
    .set('Accept', 'application/json, text/event-stream')
    .set(bearer(key))
    .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  // The MCP door answers a JSON-RPC error whose data carries the Area A error.
  const outcome = (res: { status: number; body: any }) =>
    res.status === 200
      ? '200'
      : `${res.status} ${(res.body?.error?.data?.error?.code ?? res.body?.error?.code) as string}`;
  return { json: outcome(json), mcp: outcome(mcp) };
}

describe('Key rolling and the admin policy', () => {
  let app: TestApp;
  let db: DatabasePool;
  let admin: TestUser;
  let alice: TestUser;

  const putPolicy = (body: Record<string, unknown>, as: TestUser = admin) =>
    app.http
      .put('/api/admin/policy')
      .set(bearer(as.token))
      .send({ ...DEFAULTS, ...body });

  beforeAll(async () => {
    app = await startTestApp({ env: EMBEDDED_SAFE_ENV });
    db = app.app.get(DatabasePool);
    admin = await makeUser(app);
    expect(admin.role).toBe('admin');
    alice = await makeUser(app);
  }, 180_000);
  afterEach(async () => {
    await putPolicy({}).expect(200);
  });
  afterAll(async () => {
    await app.close();
  });

  describe('rolling a key (POST /api/api-keys/:id/roll)', () => {
    it('returns a new key with the same settings once; the old one works on both doors until the overlap ends, then answers 401 revoked_api_key', async () => {
      const old = (
        await createKey(app, alice, {
          name: 'ci runner',
          scopes: ['tasks:read', 'tasks:write'],
          confirmWrites: true,
          tools: ['list_tasks', 'create_task'],
          allowedIps: ['127.0.0.0/8', '::1'],
          expiresIn: '90d',
        }).expect(201)
      ).body.data;
      expect(await bothDoors(app, old.key)).toEqual({ json: '200', mcp: '200' });

      const res = await app.http
        .post(`/api/api-keys/${old.id}/roll`)
        .set(bearer(alice.token))
        .send({ overlap: '1h' })
        .expect(201);
      expect(res.headers['cache-control']).toBe('no-store');
      const rolled = res.body.data;
      expect(rolled).toEqual({
        id: expect.any(String),
        name: 'ci runner',
        scopes: ['tasks:read', 'tasks:write'],
        prefix: rolled.key.slice(4, 12),
        createdAt: expect.any(String),
        expiresAt: expect.any(String),
        projectIds: null,
        repos: null,
        confirmWrites: true,
        tools: ['list_tasks', 'create_task'],
        readOnly: false,
        allowedIps: ['127.0.0.0/8', '::1/128'],
        key: expect.stringMatching(/^atr_[0-9A-Za-z]{38}$/),
        retiresAt: expect.any(String),
      });
      expect(rolled.id).not.toBe(old.id);
      expect(rolled.key).not.toBe(old.key);
      const overlapMs = Date.parse(rolled.retiresAt) - Date.now();
      expect(overlapMs).toBeGreaterThan(3590_000);
      expect(overlapMs).toBeLessThanOrEqual(3600_000);
      // Same lifetime as the old key, counted from the roll.
      expect((Date.parse(rolled.expiresAt) - Date.parse(rolled.createdAt)) / 86_400_000).toBeCloseTo(90, 3);

      // The old key reports when it stops working (the overlap ends before its expiry).
      const tools = await app.http.get('/api/v1/public/mcp/tools').set(bearer(old.key)).expect(200);
      expect(tools.headers['x-api-key-expires-at']).toBe(rolled.retiresAt);
      // During the overlap both keys work, on both doors.
      expect(await bothDoors(app, old.key)).toEqual({ json: '200', mcp: '200' });
      expect(await bothDoors(app, rolled.key)).toEqual({ json: '200', mcp: '200' });
      const oldView = (await app.http.get(`/api/api-keys/${old.id}`).set(bearer(alice.token)).expect(200)).body.data;
      expect(oldView).toMatchObject({ status: 'active', rolledTo: rolled.id, retiresAt: rolled.retiresAt });
      // The secret is shown once: no view of either key carries it.
      const list = await app.http.get('/api/api-keys').set(bearer(alice.token)).expect(200);
      expect(JSON.stringify(list.body)).not.toContain(rolled.key);
      expect(JSON.stringify(list.body)).not.toContain(old.key);

      // The overlap ends: moved into the past in the database (an hour is too long to wait for).
      await db.query(`UPDATE api_keys SET revoked_at = now() - interval '1 second' WHERE id = $1`, [old.id]);
      expect(await bothDoors(app, old.key)).toEqual({ json: '401 revoked_api_key', mcp: '401 revoked_api_key' });
      expect(await bothDoors(app, rolled.key)).toEqual({ json: '200', mcp: '200' });
      const after = (await app.http.get(`/api/api-keys/${old.id}`).set(bearer(alice.token)).expect(200)).body.data;
      expect(after).toMatchObject({ status: 'revoked', rolledTo: rolled.id, retiresAt: null });

      // Audited with both ids, never a secret.
      const audit = await app.http
        .get('/api/admin/audit')
        .query({ action: 'api_key.roll' })
        .set(bearer(admin.token))
        .expect(200);
      const entry = audit.body.data.items.find((e: any) => e.target?.id === old.id);
      expect(entry.details).toMatchObject({ oldKeyId: old.id, newKeyId: rolled.id, overlap: '1h' });
      expect(JSON.stringify(audit.body)).not.toMatch(/atr_[0-9A-Za-z]{38}/);
    });

    it('a rolled key revoked during its overlap stops at once', async () => {
      const old = (await createKey(app, alice).expect(201)).body.data;
      await app.http.post(`/api/api-keys/${old.id}/roll`).set(bearer(alice.token)).send({ overlap: '7d' }).expect(201);
      expect(await bothDoors(app, old.key)).toEqual({ json: '200', mcp: '200' });
      await app.http.delete(`/api/api-keys/${old.id}`).set(bearer(alice.token)).expect(200);
      expect(await bothDoors(app, old.key)).toEqual({ json: '401 revoked_api_key', mcp: '401 revoked_api_key' });
    });

    it('refuses to roll twice, a revoked key, another user’s key, a bad overlap and a bad id', async () => {
      const bob = await makeUser(app);
      const key = (await createKey(app, alice).expect(201)).body.data;
      const roll = (id: string, as: TestUser, overlap: unknown = '24h') =>
        app.http.post(`/api/api-keys/${id}/roll`).set(bearer(as.token)).send({ overlap });
      // Another user's key: 404, as for a key that does not exist.
      const foreign = await roll(key.id, bob).expect(404);
      expect(foreign.body.error.code).toBe('NOT_FOUND');
      await roll('00000000-0000-4000-8000-000000000000', alice).expect(404);
      await roll('not-a-uuid', alice).expect(404);
      for (const overlap of ['2h', '', null, 3600, ['1h']]) await roll(key.id, alice, overlap).expect(400);
      await roll(key.id, alice).expect(201);
      expect((await roll(key.id, alice).expect(409)).body.error.code).toBe('CONFLICT');
      const revoked = (await createKey(app, alice).expect(201)).body.data;
      await app.http.delete(`/api/api-keys/${revoked.id}`).set(bearer(alice.token)).expect(200);
      expect((await roll(revoked.id, alice).expect(409)).body.error.message).toMatch(/revoked/);
      // A project session token or no token cannot roll.
      await app.http.post(`/api/api-keys/${key.id}/roll`).send({ overlap: '1h' }).expect(401);
    });
  });

  describe('the admin policy (GET / PUT /api/admin/policy)', () => {
    it('is for admins only, starts as today’s behaviour and records each change in the audit log', async () => {
      const denied = await app.http.get('/api/admin/policy').set(bearer(alice.token)).expect(403);
      expect(denied.body.error.code).toBe('FORBIDDEN');
      await putPolicy({ maxKeyLifetimeDays: 1 }, alice).expect(403);
      await app.http.get('/api/admin/policy').expect(401);
      const keyOfAlice = (await createKey(app, alice).expect(201)).body.data.key;
      await app.http.get('/api/admin/policy').set(bearer(keyOfAlice)).expect(401);

      const initial = (await app.http.get('/api/admin/policy').set(bearer(admin.token)).expect(200)).body.data;
      expect(initial).toMatchObject(DEFAULTS);
      expect(initial.maxCredentialsPerUser).toBe(app.config.limits.credentialsPerUser);

      const saved = await putPolicy({ maxKeyLifetimeDays: 90, allowedIps: ['10.0.0.0/8', '127.0.0.1'] }).expect(200);
      expect(saved.body.data).toMatchObject({
        maxKeyLifetimeDays: 90,
        allowedIps: ['10.0.0.0/8', '127.0.0.1/32'],
        updatedBy: admin.id,
      });
      const audit = await app.http
        .get('/api/admin/audit')
        .query({ action: 'policy.update' })
        .set(bearer(admin.token))
        .expect(200);
      expect(audit.body.data.items[0].details.changed).toEqual({
        maxKeyLifetimeDays: { from: null, to: 90 },
        allowedIps: { from: null, to: ['10.0.0.0/8', '127.0.0.1/32'] },
      });
      expect(audit.body.data.items[0].actor.userId).toBe(admin.id);
    });

    it('refuses invalid policies with 400 naming the field', async () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ allowedIps: ['10.0.0.0/33'] }, /allowedIps/],
        [{ allowedIps: ['not an address'] }, /allowedIps/],
        [{ allowedIps: '10.0.0.0/8' }, /allowedIps/],
        [{ allowedKeyScopes: ['tasks:read', 'root:write'] }, /allowedKeyScopes/],
        [{ maxKeyLifetimeDays: -1 }, /maxKeyLifetimeDays/],
        [{ maxKeyLifetimeDays: 0 }, /maxKeyLifetimeDays/],
        [{ maxKeyLifetimeDays: 1.5 }, /maxKeyLifetimeDays/],
        [{ maxCredentialsPerUser: -5 }, /maxCredentialsPerUser/],
        [{ maxCredentialsPerUser: null }, /maxCredentialsPerUser/],
        [{ requireConfirmWritesForWriteScopes: 'yes' }, /requireConfirmWritesForWriteScopes/],
        [{ allowedOAuthClients: Array.from({ length: 101 }, (_, i) => `c${i}.example`) }, /allowedOAuthClients/],
        [{ allowedIps: Array.from({ length: 5000 }, () => '10.0.0.0/8') }, /allowedIps/],
        [{ unknownRule: true }, /unknownRule/],
      ];
      for (const [body, field] of cases) {
        const res = await putPolicy(body);
        expect([res.status, body]).toEqual([400, body]);
        expect(JSON.stringify(res.body.error)).toMatch(field);
      }
      const { maxKeyLifetimeDays: _, ...missing } = DEFAULTS;
      await app.http.put('/api/admin/policy').set(bearer(admin.token)).send(missing).expect(400);
      expect((await app.http.get('/api/admin/policy').set(bearer(admin.token))).body.data).toMatchObject(DEFAULTS);
    });

    it('maxKeyLifetimeDays refuses longer and never-expiring keys and lists existing ones as out of policy', async () => {
      const forever = (await createKey(app, alice, { expiresIn: 'never' }).expect(201)).body.data;
      await putPolicy({ maxKeyLifetimeDays: 90 }).expect(200);
      for (const expiresIn of ['never', '180d', '1y']) {
        const res = await createKey(app, alice, { expiresIn }).expect(400);
        expect(res.body.error.message).toMatch(/maxKeyLifetimeDays/);
      }
      await createKey(app, alice, { expiresIn: '90d' }).expect(201);
      const view = (await app.http.get(`/api/api-keys/${forever.id}`).set(bearer(alice.token)).expect(200)).body.data;
      expect(view.outOfPolicy).toEqual(['maxKeyLifetimeDays']);
      // The admin's view lists it with its owner; a member may not read it.
      const adminView = await app.http.get('/api/admin/api-keys/out-of-policy').set(bearer(admin.token)).expect(200);
      expect(adminView.body.data.items).toContainEqual(
        expect.objectContaining({ id: forever.id, userId: alice.id, outOfPolicy: ['maxKeyLifetimeDays'] }),
      );
      expect(JSON.stringify(adminView.body)).not.toMatch(/atr_[0-9A-Za-z]{38}/);
      await app.http.get('/api/admin/api-keys/out-of-policy').set(bearer(alice.token)).expect(403);
      // It keeps working (listed, not cut off), and cannot be rolled into another never-expiring key.
      expect(await bothDoors(app, forever.key)).toEqual({ json: '200', mcp: '200' });
      await app.http
        .post(`/api/api-keys/${forever.id}/roll`)
        .set(bearer(alice.token))
        .send({ overlap: '1h' })
        .expect(400);
    });

    it('allowedKeyScopes and requireConfirmWritesForWriteScopes refuse keys that break them, naming the rule', async () => {
      await putPolicy({ allowedKeyScopes: ['tasks:read', 'tasks:write'], requireConfirmWritesForWriteScopes: true });
      const scope = await createKey(app, alice, { scopes: ['tasks:read', 'docs:read'] }).expect(400);
      expect(scope.body.error.message).toMatch(/allowedKeyScopes/);
      const writes = await createKey(app, alice, { scopes: ['tasks:write'] }).expect(400);
      expect(writes.body.error.message).toMatch(/requireConfirmWritesForWriteScopes/);
      await createKey(app, alice, { scopes: ['tasks:write'], confirmWrites: true }).expect(201);
      await createKey(app, alice, { scopes: ['tasks:read'] }).expect(201);

      // The confirm-writes rule holds for an OAuth consent too (lifetime and scopes are rules for keys).
      const clientId = await registerPublicClient(app);
      const query = authorizeQuery(clientId, pkcePair().challenge, { scope: 'tasks:read tasks:write' });
      const request = consentRequestOf((await app.http.get(`/oauth/authorize?${query}`).expect(200)).text);
      const approve = (confirmWrites: boolean) => approveConsent(app, alice, request, { confirmWrites });
      const refused = await approve(false).expect(400);
      expect(refused.body.error.message).toMatch(/requireConfirmWritesForWriteScopes/);
      await approve(true).expect(200);
    });

    it('allowedIps (org-wide and per key) refuses Area A calls from elsewhere on both doors with 403 ip_not_allowed', async () => {
      const key = (await createKey(app, alice).expect(201)).body.data;
      await putPolicy({ allowedIps: ['10.0.0.0/8'] }).expect(200);
      expect(await bothDoors(app, key.key)).toEqual({ json: '403 ip_not_allowed', mcp: '403 ip_not_allowed' });
      // The test client is 127.0.0.1 (as IPv4 or IPv4-mapped IPv6, judged alike).
      await putPolicy({ allowedIps: ['10.0.0.0/8', '127.0.0.0/8'] }).expect(200);
      expect(await bothDoors(app, key.key)).toEqual({ json: '200', mcp: '200' });

      const pinned = (await createKey(app, alice, { allowedIps: ['192.0.2.0/24'] }).expect(201)).body.data;
      expect(pinned.allowedIps).toEqual(['192.0.2.0/24']);
      const view = (await app.http.get(`/api/api-keys/${pinned.id}`).set(bearer(alice.token)).expect(200)).body.data;
      expect(view.allowedIps).toEqual(['192.0.2.0/24']);
      expect(await bothDoors(app, pinned.key)).toEqual({ json: '403 ip_not_allowed', mcp: '403 ip_not_allowed' });
      const local = (await createKey(app, alice, { allowedIps: ['127.0.0.1/32'] }).expect(201)).body.data;
      expect(await bothDoors(app, local.key)).toEqual({ json: '200', mcp: '200' });
      for (const allowedIps of [['300.1.1.1'], ['10.0.0.0/99'], 'everywhere', Array.from({ length: 101 }, () => '::1')])
        await createKey(app, alice, { allowedIps }).expect(400);
    });

    it('maxCredentialsPerUser replaces the configured cap (409 beyond it)', async () => {
      const carol = await makeUser(app);
      await putPolicy({ maxCredentialsPerUser: 2 }).expect(200);
      await createKey(app, carol).expect(201);
      await createKey(app, carol).expect(201);
      const refused = await createKey(app, carol).expect(409);
      expect(refused.body.error.message).toMatch(/maxCredentialsPerUser/);
      await putPolicy({ maxCredentialsPerUser: 3 }).expect(200);
      const third = (await createKey(app, carol).expect(201)).body.data;
      // Rolling at the cap works (the rolled key is replaced); a key in its overlap still counts, so a chain of
      // rolls makes at most one working key beyond the cap.
      const rolled = (
        await app.http
          .post(`/api/api-keys/${third.id}/roll`)
          .set(bearer(carol.token))
          .send({ overlap: '1h' })
          .expect(201)
      ).body.data;
      await app.http
        .post(`/api/api-keys/${rolled.id}/roll`)
        .set(bearer(carol.token))
        .send({ overlap: '1h' })
        .expect(409);
      await createKey(app, carol).expect(409);
    });

    it('allowedOAuthClients: authorising another client is unauthorized_client, and its grants stop working (403)', async () => {
      const tokens = await oauthTokens(app, alice, ['tasks:read']);
      expect(await bothDoors(app, tokens.access_token)).toEqual({ json: '200', mcp: '200' });
      await putPolicy({ allowedOAuthClients: ['claude.ai', 'Some Other App'] }).expect(200);
      expect(await bothDoors(app, tokens.access_token)).toEqual({
        json: '403 oauth_client_not_allowed',
        mcp: '403 oauth_client_not_allowed',
      });
      const refresh = await tokenRequest(app, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: tokens.clientId,
      }).expect(400);
      expect(refresh.body.error).toBe('unauthorized_client');

      const clientId = await registerPublicClient(app);
      const { challenge } = pkcePair();
      const query = authorizeQuery(clientId, challenge);
      const page = await app.http.get(`/oauth/authorize?${query}`).expect(400);
      expect(page.text).toContain('unauthorized_client');
      // Allowed by its registered name: the consent page again, and the old grant works again.
      await putPolicy({ allowedOAuthClients: ['Test client'] }).expect(200);
      const allowed = await app.http.get(`/oauth/authorize?${query}`).expect(200);
      expect(consentRequestOf(allowed.text).clientId).toBe(clientId);
      expect(await bothDoors(app, tokens.access_token)).toEqual({ json: '200', mcp: '200' });
    });
  });
});

describeOnSharedServices('Rolling and the admin policy across two instances (real PostgreSQL only)', () => {
  let first: TestApp;
  let second: TestApp;
  let database: TestDatabase;
  let admin: TestUser;

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = deploymentEnv('policy');
    first = await startTestApp({ database, env });
    second = await startTestApp({ database, env });
    admin = await makeUser(first);
  }, 180_000);
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
  });

  it('a key rolled on one instance keeps working on the other until the overlap ends, then is refused there', async () => {
    const user = await makeUser(first);
    const old = (await createKey(first, user).expect(201)).body.data;
    // The second instance has verified (and cached) the old key before the roll.
    expect(await bothDoors(second, old.key)).toEqual({ json: '200', mcp: '200' });
    const rolled = (
      await first.http.post(`/api/api-keys/${old.id}/roll`).set(bearer(user.token)).send({ overlap: '24h' }).expect(201)
    ).body.data;
    expect(await bothDoors(second, old.key)).toEqual({ json: '200', mcp: '200' });
    await first.app
      .get(DatabasePool)
      .query(`UPDATE api_keys SET revoked_at = now() - interval '1 second' WHERE id = $1`, [old.id]);
    expect(await bothDoors(second, old.key)).toEqual({ json: '401 revoked_api_key', mcp: '401 revoked_api_key' });
    expect(await bothDoors(second, rolled.key)).toEqual({ json: '200', mcp: '200' });
  });

  it('a policy saved on one instance is in force on the other within a second', async () => {
    const user = await makeUser(first);
    const key = (await createKey(first, user).expect(201)).body.data;
    expect(await bothDoors(second, key.key)).toEqual({ json: '200', mcp: '200' });
    await first.http
      .put('/api/admin/policy')
      .set(bearer(admin.token))
      .send({ ...DEFAULTS, allowedIps: ['10.0.0.0/8'], maxKeyLifetimeDays: 30 })
      .expect(200);
    const saved = Date.now();
    // Creating a key reads the stored policy: refused on the other instance at once.
    await createKey(second, user, { expiresIn: '90d' }).expect(400);
    // The instance that saved it: at once.
    expect(await bothDoors(first, key.key)).toEqual({ json: '403 ip_not_allowed', mcp: '403 ip_not_allowed' });
    let outcome = await bothDoors(second, key.key);
    while (outcome.json === '200' && Date.now() - saved < 3000) outcome = await bothDoors(second, key.key);
    expect(outcome).toEqual({ json: '403 ip_not_allowed', mcp: '403 ip_not_allowed' });
    expect(Date.now() - saved).toBeLessThan(1500);
    await first.http.put('/api/admin/policy').set(bearer(admin.token)).send(DEFAULTS).expect(200);
  });
});
