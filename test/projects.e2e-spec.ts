import { randomUUID } from 'node:crypto';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { waitFor } from './support/wait.js';
import {
  createTestDatabase,
  deploymentEnv,
  describeOnSharedServices,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from './support/test-app.js';

describe('projects, members and project session tokens', () => {
  let app: TestApp;
  let owner: TestUser;
  let editor: TestUser;
  let viewer: TestUser;
  let stranger: TestUser;

  async function makeProject(user: TestUser, name = 'Apollo'): Promise<string> {
    const res = await app.http.post('/api/projects').set(bearer(user.token)).send({ name }).expect(201);
    return res.body.data.id;
  }

  async function addMember(projectId: string, user: TestUser, role: string, as: TestUser = owner) {
    return app.http.post(`/api/projects/${projectId}/members`).set(bearer(as.token)).send({ userId: user.id, role });
  }

  beforeAll(async () => {
    app = await startTestApp();
    owner = await makeUser(app);
    editor = await makeUser(app);
    viewer = await makeUser(app);
    stranger = await makeUser(app);
  });
  afterAll(async () => {
    await app.close();
  });

  it('creates a project with the caller as owner and answers the detail shape', async () => {
    const created = await app.http
      .post('/api/projects')
      .set(bearer(owner.token))
      .send({ name: '  Apollo  ', description: 'Moon' })
      .expect(201);
    expect(created.body.data).toEqual({
      id: expect.any(String),
      name: 'Apollo',
      description: 'Moon',
      ownerId: owner.id,
      role: 'owner',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      documentCount: 0,
      memberCount: 1,
    });
    const detail = await app.http.get(`/api/projects/${created.body.data.id}`).set(bearer(owner.token)).expect(200);
    expect(detail.body.data).toEqual(created.body.data);
  });

  it.each([[{}], [{ name: '' }], [{ name: 'x'.repeat(101) }], [{ name: 'ok', extra: 1 }], [{ name: 5 }]])(
    'rejects a bad project %j with 400',
    async (body) => {
      const res = await app.http.post('/api/projects').set(bearer(owner.token)).send(body).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    },
  );

  it('requires a user token', async () => {
    const res = await app.http.get('/api/projects').expect(401);
    expect(res.body.error.code).toBe('AUTH_REQUIRED');
  });

  // Who sees and changes what, and the list's order: test/medium/projects.medium-spec.ts. Here: what the pipes refuse.
  it('refuses a malformed id, role, member or page query with 400 before any rule runs', async () => {
    const id = await makeProject(owner);
    await app.http.get('/api/projects/not-a-uuid').set(bearer(owner.token)).expect(400);
    await app.http.patch(`/api/projects/${id}`).set(bearer(owner.token)).send({ name: '' }).expect(400);
    expect((await addMember(id, viewer, 'admin')).status).toBe(400);
    expect(
      (
        await app.http
          .post(`/api/projects/${id}/members`)
          .set(bearer(owner.token))
          .send({ userId: randomUUID(), role: 'viewer' })
      ).status,
    ).toBe(400);
    for (const query of ['cursor=garbage', 'limit=0', 'limit=201']) {
      expect((await app.http.get(`/api/projects?${query}`).set(bearer(owner.token)).expect(400)).body.error.code).toBe(
        'VALIDATION_FAILED',
      );
    }
  });

  describe('session tokens', () => {
    it('are minted by owners and editors only, shown once, with validated input', async () => {
      const id = await makeProject(owner);
      await addMember(id, editor, 'editor');
      await addMember(id, viewer, 'viewer');
      const minted = await app.http
        .post(`/api/projects/${id}/session-tokens`)
        .set(bearer(owner.token))
        .send({ name: 'widget', role: 'viewer' })
        .expect(201);
      expect(minted.body.data).toEqual({
        id: expect.any(String),
        token: expect.stringMatching(/^atp_/),
        expiresAt: expect.any(String),
      });
      const ttl = Date.parse(minted.body.data.expiresAt) - Date.now();
      expect(ttl).toBeGreaterThan(1439 * 60_000);
      expect(ttl).toBeLessThanOrEqual(1440 * 60_000);
      await app.http
        .post(`/api/projects/${id}/session-tokens`)
        .set(bearer(editor.token))
        .send({ name: 'e', role: 'editor', expiresInMinutes: 5 })
        .expect(201);
      expect(
        (
          await app.http
            .post(`/api/projects/${id}/session-tokens`)
            .set(bearer(viewer.token))
            .send({ name: 'v', role: 'viewer' })
        ).status,
      ).toBe(403);
      expect(
        (
          await app.http
            .post(`/api/projects/${id}/session-tokens`)
            .set(bearer(stranger.token))
            .send({ name: 'v', role: 'viewer' })
        ).status,
      ).toBe(404);
      for (const body of [
        { name: 'x', role: 'owner' },
        { name: 'x', role: 'viewer', expiresInMinutes: 0 },
        { name: 'x', role: 'viewer', expiresInMinutes: 43201 },
        { role: 'viewer' },
      ]) {
        const res = await app.http.post(`/api/projects/${id}/session-tokens`).set(bearer(owner.token)).send(body);
        expect(res.status).toBe(400);
      }
    });

    it('works on its own project only and is refused everywhere else with a 401 naming the credential', async () => {
      const id = await makeProject(owner);
      const other = await makeProject(owner, 'Other');
      const { body } = await app.http
        .post(`/api/projects/${id}/session-tokens`)
        .set(bearer(owner.token))
        .send({ name: 't', role: 'editor' })
        .expect(201);
      const token = body.data.token as string;

      const own = await app.http.get(`/api/projects/${id}`).set(bearer(token)).expect(200);
      expect(own.body.data.role).toBe('editor'); // the owner's role capped at the token's role

      const onOther = await app.http.get(`/api/projects/${other}`).set(bearer(token)).expect(401);
      expect(onOther.body.error.code).toBe('AUTH_INVALID');
      expect(onOther.body.error.message).toMatch(/another project/);
      const me = await app.http.get('/api/auth/me').set(bearer(token)).expect(401);
      expect(me.body.error.message).toMatch(/user access token/);
      await app.http.get('/api/projects').set(bearer(token)).expect(401);
      await app.http.patch(`/api/projects/${id}`).set(bearer(token)).send({ name: 'x' }).expect(401);
      await app.http
        .post(`/api/projects/${id}/session-tokens`)
        .set(bearer(token))
        .send({ name: 'x', role: 'viewer' })
        .expect(401);
      await app.http
        .post(`/api/projects/${id}/members`)
        .set(bearer(token))
        .send({ userId: viewer.id, role: 'viewer' })
        .expect(401);

      const forged = await app.http
        .get(`/api/projects/${id}`)
        .set(bearer(`${token.slice(0, -2)}xx`))
        .expect(401);
      expect(forged.body.error.message).toMatch(/project session token/);
    });

    it('expires', async () => {
      const id = await makeProject(owner);
      const { body } = await app.http
        .post(`/api/projects/${id}/session-tokens`)
        .set(bearer(owner.token))
        .send({ name: 't', role: 'viewer', expiresInMinutes: 1 })
        .expect(201);
      await app.http.get(`/api/projects/${id}`).set(bearer(body.data.token)).expect(200);
      const { Client } = await import('pg');
      const client = new Client({ connectionString: app.database.url });
      await client.connect();
      await client.query(`UPDATE project_session_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        body.data.id,
      ]);
      const stored = await client.query(`SELECT token_hash FROM project_session_tokens WHERE id = $1`, [body.data.id]);
      await client.end();
      expect(stored.rows[0].token_hash).not.toContain(body.data.token.slice(4, 20));
      await app.http.get(`/api/projects/${id}`).set(bearer(body.data.token)).expect(401);
    });

    it('are listed without secrets to owners and editors (viewer 403, non-member 404), newest first, paged', async () => {
      const id = await makeProject(owner);
      await addMember(id, editor, 'editor');
      await addMember(id, viewer, 'viewer');
      const first = (
        await app.http
          .post(`/api/projects/${id}/session-tokens`)
          .set(bearer(owner.token))
          .send({ name: 'first', role: 'viewer' })
          .expect(201)
      ).body.data;
      const second = (
        await app.http
          .post(`/api/projects/${id}/session-tokens`)
          .set(bearer(editor.token))
          .send({ name: 'second', role: 'editor', expiresInMinutes: 60 })
          .expect(201)
      ).body.data;
      await app.http.get(`/api/projects/${id}`).set(bearer(second.token)).expect(200);
      // The use is recorded behind the answer.
      const list = await waitFor('lastUsedAt of the used token', async () => {
        const res = await app.http.get(`/api/projects/${id}/session-tokens`).set(bearer(editor.token)).expect(200);
        return res.body.data.items[0]?.lastUsedAt ? res : undefined;
      });
      expect(list.body.data).toEqual({
        items: [
          {
            id: second.id,
            name: 'second',
            role: 'editor',
            prefix: second.token.slice(4, 12),
            createdAt: expect.any(String),
            expiresAt: second.expiresAt,
            lastUsedAt: expect.any(String),
            createdBy: editor.id,
          },
          {
            id: first.id,
            name: 'first',
            role: 'viewer',
            prefix: first.token.slice(4, 12),
            createdAt: expect.any(String),
            expiresAt: first.expiresAt,
            lastUsedAt: null,
            createdBy: owner.id,
          },
        ],
        nextCursor: null,
      });
      expect(JSON.stringify(list.body)).not.toContain(first.token);
      expect(JSON.stringify(list.body)).not.toContain(second.token);
      expect(JSON.stringify(list.body)).not.toMatch(/token_?hash/i);
      const paged = await app.http
        .get(`/api/projects/${id}/session-tokens?limit=1`)
        .set(bearer(owner.token))
        .expect(200);
      expect(paged.body.data.items.map((t: { id: string }) => t.id)).toEqual([second.id]);
      const rest = await app.http
        .get(`/api/projects/${id}/session-tokens?limit=1&cursor=${paged.body.data.nextCursor}`)
        .set(bearer(owner.token))
        .expect(200);
      expect(rest.body.data.items.map((t: { id: string }) => t.id)).toEqual([first.id]);
      expect((await app.http.get(`/api/projects/${id}/session-tokens`).set(bearer(viewer.token))).status).toBe(403);
      expect((await app.http.get(`/api/projects/${id}/session-tokens`).set(bearer(stranger.token))).status).toBe(404);
      // A project token is not a credential for managing tokens (like minting).
      expect((await app.http.get(`/api/projects/${id}/session-tokens`).set(bearer(second.token))).status).toBe(401);
    });

    it("are revoked at once (401 on the next call), audited, gone from the list; another project's token id is 404", async () => {
      const id = await makeProject(owner);
      const other = await makeProject(owner, 'Other');
      await addMember(id, viewer, 'viewer');
      const minted = (
        await app.http
          .post(`/api/projects/${id}/session-tokens`)
          .set(bearer(owner.token))
          .send({ name: 'leaked', role: 'editor' })
          .expect(201)
      ).body.data;
      const elsewhere = (
        await app.http
          .post(`/api/projects/${other}/session-tokens`)
          .set(bearer(owner.token))
          .send({ name: 'kept', role: 'viewer' })
          .expect(201)
      ).body.data;
      await app.http.get(`/api/projects/${id}`).set(bearer(minted.token)).expect(200);

      await app.http.delete(`/api/projects/${id}/session-tokens/${elsewhere.id}`).set(bearer(owner.token)).expect(404);
      await app.http.delete(`/api/projects/${id}/session-tokens/${randomUUID()}`).set(bearer(owner.token)).expect(404);
      await app.http.delete(`/api/projects/${id}/session-tokens/not-a-uuid`).set(bearer(owner.token)).expect(400);
      expect(
        (await app.http.delete(`/api/projects/${id}/session-tokens/${minted.id}`).set(bearer(viewer.token))).status,
      ).toBe(403);
      expect(
        (await app.http.delete(`/api/projects/${id}/session-tokens/${minted.id}`).set(bearer(stranger.token))).status,
      ).toBe(404);
      await app.http.get(`/api/projects/${id}`).set(bearer(minted.token)).expect(200);

      const revoked = await app.http
        .delete(`/api/projects/${id}/session-tokens/${minted.id}`)
        .set(bearer(owner.token))
        .expect(200);
      expect(revoked.body.data).toEqual({ id: minted.id, revoked: true });
      const refused = await app.http.get(`/api/projects/${id}`).set(bearer(minted.token)).expect(401);
      expect(refused.body.error.code).toBe('AUTH_INVALID');
      await app.http.delete(`/api/projects/${id}/session-tokens/${minted.id}`).set(bearer(owner.token)).expect(404);
      expect(
        (await app.http.get(`/api/projects/${id}/session-tokens`).set(bearer(owner.token)).expect(200)).body.data.items,
      ).toEqual([]);
      await app.http.get(`/api/projects/${other}`).set(bearer(elsewhere.token)).expect(200);

      const audit = await app.http.get('/api/audit?action=project.token.revoke').set(bearer(owner.token)).expect(200);
      expect(audit.body.data.items[0]).toMatchObject({
        action: 'project.token.revoke',
        actor: { userId: owner.id, via: 'user_token' },
        target: { type: 'project', id },
        details: { tokenId: minted.id, name: 'leaked', role: 'editor' },
      });
      expect(JSON.stringify(audit.body)).not.toContain(minted.token);
    });

    it('stops working when the minting user leaves the project role it relied on', async () => {
      const id = await makeProject(owner);
      const member = await makeUser(app);
      await addMember(id, member, 'editor');
      const { body } = await app.http
        .post(`/api/projects/${id}/session-tokens`)
        .set(bearer(member.token))
        .send({ name: 't', role: 'editor' })
        .expect(201);
      await addMember(id, member, 'viewer');
      const capped = await app.http.get(`/api/projects/${id}`).set(bearer(body.data.token)).expect(200);
      expect(capped.body.data.role).toBe('viewer');
    });
  });
});

describeOnSharedServices('project session tokens across two instances (real PostgreSQL only)', () => {
  let first: TestApp;
  let second: TestApp;
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = deploymentEnv('project-tokens');
    first = await startTestApp({ database, env });
    second = await startTestApp({ database, env });
  }, 180_000);
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
  });

  it('a token revoked on one instance answers 401 on the other at once', async () => {
    const owner = await makeUser(first);
    const id = (await first.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'Twin' }).expect(201)).body
      .data.id;
    const minted = (
      await first.http
        .post(`/api/projects/${id}/session-tokens`)
        .set(bearer(owner.token))
        .send({ name: 't', role: 'viewer' })
        .expect(201)
    ).body.data;
    await second.http.get(`/api/projects/${id}`).set(bearer(minted.token)).expect(200);
    await first.http.get(`/api/projects/${id}`).set(bearer(minted.token)).expect(200);
    await first.http.delete(`/api/projects/${id}/session-tokens/${minted.id}`).set(bearer(owner.token)).expect(200);
    await second.http.get(`/api/projects/${id}`).set(bearer(minted.token)).expect(401);
    await first.http.get(`/api/projects/${id}`).set(bearer(minted.token)).expect(401);
  });
});
