import { createHmac, randomUUID } from 'node:crypto';
import { bearer, makeApiKey, makeUser, toolResult, callTool, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/wait.js';

/**
 * API.md "Rules that hold everywhere (revision 2)", from outside: search statistics per viewer, ingest and
 * reindex only of visible documents, authorization before any Idempotency-Key replay, and the smaller rules
 * (passwords, dates, Cache-Control, unknown token subjects, Area B validation details, TRUST_PROXY).
 */
describe('rules that hold everywhere', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  }, 180_000);
  afterAll(async () => {
    await app.close();
  });

  const ALL_SCOPES = ['tasks:read', 'tasks:write', 'docs:read', 'docs:write'];
  const newProject = async (user: TestUser, name = 'p'): Promise<string> =>
    (await app.http.post('/api/projects').set(bearer(user.token)).send({ name }).expect(201)).body.data.id;
  const addMember = (owner: TestUser, projectId: string, member: TestUser, role: 'editor' | 'viewer') =>
    app.http
      .post(`/api/projects/${projectId}/members`)
      .set(bearer(owner.token))
      .send({ userId: member.id, role })
      .expect(201);

  /** Polls until every document is final (indexed or failed); the worker indexes in the background. */
  async function untilIndexed(key: string, ids: string[]): Promise<void> {
    const states = await pollUntil(
      'documents final',
      () =>
        Promise.all(
          ids.map(
            async (id) =>
              (await toolResult(app, key, 'get_document', { document_id: id, include_content: false })).status,
          ),
        ),
      (current) => current.every((state) => state === 'indexed' || state === 'failed'),
      { timeoutMs: 120_000 },
    );
    expect(states.every((state) => state === 'indexed')).toBe(true);
  }

  const search = async (user: TestUser, body: Record<string, unknown>) =>
    (
      await app.http
        .post('/api/rag/search')
        .set(bearer(user.token))
        .send({ topK: 10, ...body })
        .expect(200)
    ).body.data.results.map(
      (hit: {
        documentId: string;
        chunkIndex: number;
        score: number;
        keywordScore: number;
        vectorScore: number | null;
      }) => ({
        documentId: hit.documentId,
        chunkIndex: hit.chunkIndex,
        score: hit.score,
        keywordScore: hit.keywordScore,
        vectorScore: hit.vectorScore,
      }),
    );

  describe('search statistics are per viewer', () => {
    it("another user's documents the caller cannot see change neither the ranking nor any score; visible ones do", async () => {
      const alice = await makeUser(app);
      const bob = await makeUser(app);
      const aliceKey = (await makeApiKey(app, alice, { scopes: ALL_SCOPES })).key;
      const bobKey = (await makeApiKey(app, bob, { scopes: ALL_SCOPES })).key;
      const aliceProject = await newProject(alice, 'alice');
      const bobProject = await newProject(bob, 'bob');

      const aliceTexts = [
        'Lattice quantum chromodynamics computes hadron masses on a discrete grid.',
        'A quantum computer keeps qubits coherent with error correction.',
        'Crystal lattice vibrations are phonons; the lattice constant is measured by diffraction.',
        'Gardening notes: tomatoes need sun and water.',
      ];
      const aliceDocs = [];
      for (const [i, content] of aliceTexts.entries()) {
        aliceDocs.push(
          (
            await toolResult(app, aliceKey, 'create_document', {
              title: `alice ${i}`,
              content,
              project_id: aliceProject,
            })
          ).id,
        );
      }
      aliceDocs.push(
        (
          await toolResult(app, aliceKey, 'create_document', {
            title: 'alice personal',
            content: 'My own quantum lattice notebook.',
          })
        ).id,
      );
      await untilIndexed(aliceKey, aliceDocs);

      const probes = [
        { query: 'quantum lattice', mode: 'keyword', projectId: aliceProject },
        { query: 'lattice diffraction phonons', mode: 'keyword', projectId: aliceProject },
        { query: 'quantum lattice', mode: 'hybrid', projectId: aliceProject },
      ];
      const before = [];
      for (const probe of probes) before.push(await search(alice, probe));
      expect(before[0].length).toBeGreaterThan(1);
      const toolBefore = await toolResult(app, aliceKey, 'search_documents', { query: 'quantum lattice', limit: 10 });

      // Bob's private documents (with and without a project) and a public one in a project Alice is not in,
      // all full of the probed words: the kind of upload that used to move Alice's IDF and avgdl.
      const heavy = 'quantum lattice '.repeat(40);
      const bobDocs = [];
      for (let i = 0; i < 6; i += 1) {
        bobDocs.push(
          (
            await toolResult(app, bobKey, 'create_document', {
              title: `bob private ${i}`,
              content: `${heavy} ${i}`,
              project_id: bobProject,
            })
          ).id,
        );
      }
      const bobPersonal = (
        await toolResult(app, bobKey, 'create_document', {
          title: 'bob personal',
          content: `${heavy} phonons diffraction`,
        })
      ).id;
      bobDocs.push(bobPersonal);
      bobDocs.push(
        (
          await toolResult(app, bobKey, 'create_document', {
            title: 'bob public in his project',
            content: heavy,
            project_id: bobProject,
            is_public: true,
          })
        ).id,
      );
      await untilIndexed(bobKey, bobDocs);

      for (const [i, probe] of probes.entries()) expect(await search(alice, probe)).toEqual(before[i]);
      expect(await toolResult(app, aliceKey, 'search_documents', { query: 'quantum lattice', limit: 10 })).toEqual(
        toolBefore,
      );

      // Sensitivity: the same words in a document Alice may see (public, no project) do change her statistics,
      // in her project's search too (her N, avgdl and document frequencies count every document she may see)...
      await toolResult(app, bobKey, 'update_document', { document_id: bobPersonal, is_public: true });
      const toolVisible: { document_id: string }[] = await toolResult(app, aliceKey, 'search_documents', {
        query: 'quantum lattice',
        limit: 10,
      });
      expect(toolVisible.map((hit) => hit.document_id)).toContain(bobPersonal);
      expect(await search(alice, probes[0])).not.toEqual(before[0]);
      // ...and making it private again takes exactly its counts back out (the scope moves with the document).
      await toolResult(app, bobKey, 'update_document', { document_id: bobPersonal, is_public: false });
      for (const [i, probe] of probes.entries()) expect(await search(alice, probe)).toEqual(before[i]);
      // Bob deleting everything leaves Alice's search untouched too.
      for (const id of bobDocs) await toolResult(app, bobKey, 'delete_document', { document_id: id });
      for (const [i, probe] of probes.entries()) expect(await search(alice, probe)).toEqual(before[i]);
    });
  });

  describe('ingest and reindex by id, and authorization before replay', () => {
    let owner: TestUser;
    let editor: TestUser;
    let projectId: string;
    let ownerDoc: string;
    let editorPrivateDoc: string;

    beforeAll(async () => {
      owner = await makeUser(app);
      editor = await makeUser(app);
      projectId = await newProject(owner);
      await addMember(owner, projectId, editor, 'editor');
      const ownerKey = (await makeApiKey(app, owner, { scopes: ALL_SCOPES })).key;
      const editorKey = (await makeApiKey(app, editor, { scopes: ALL_SCOPES })).key;
      ownerDoc = (
        await toolResult(app, ownerKey, 'create_document', { title: 'o', content: 'owner text', project_id: projectId })
      ).id;
      editorPrivateDoc = (
        await toolResult(app, editorKey, 'create_document', {
          title: 'e',
          content: 'editor private text',
          project_id: projectId,
        })
      ).id;
      await untilIndexed(ownerKey, [ownerDoc]);
      await untilIndexed(editorKey, [editorPrivateDoc]);
    });

    it("another member's private document is 404 to ingest and reindex by id, exactly like an id that does not exist", async () => {
      for (const kind of ['ingest', 'reindex']) {
        const foreign = await app.http
          .post(`/api/rag/${kind}`)
          .set(bearer(owner.token))
          .send({ projectId, documentIds: [ownerDoc, editorPrivateDoc] })
          .expect(404);
        const missing = randomUUID();
        const absent = await app.http
          .post(`/api/rag/${kind}`)
          .set(bearer(owner.token))
          .send({ projectId, documentIds: [ownerDoc, missing] })
          .expect(404);
        expect(foreign.body.error).toMatchObject({
          code: 'NOT_FOUND',
          details: [{ field: 'documentIds', value: editorPrivateDoc, message: 'not found' }],
        });
        expect(absent.body.error).toMatchObject({
          code: 'NOT_FOUND',
          details: [{ field: 'documentIds', value: missing, message: 'not found' }],
        });
        expect(Object.keys(foreign.body.error.details[0]).sort()).toEqual(
          Object.keys(absent.body.error.details[0]).sort(),
        );
      }
      // A reindex of the whole project counts (and touches) only what the caller may see.
      const whole = await app.http.post('/api/rag/reindex').set(bearer(owner.token)).send({ projectId }).expect(202);
      expect(whole.body.data.documentCount).toBe(1);
      const state = await app.http.get(`/api/documents/${editorPrivateDoc}`).set(bearer(editor.token)).expect(200);
      expect(state.body.data.status).toBe('indexed');
      await untilJobFinal(owner, whole.body.data.jobId);
    });

    async function untilJobFinal(user: TestUser, jobId: string): Promise<void> {
      await pollUntil(
        `job ${jobId} final`,
        async () =>
          (await app.http.get(`/api/rag/ingest/${jobId}`).set(bearer(user.token)).expect(200)).body.data.status,
        (status) => ['succeeded', 'failed', 'cancelled'].includes(status),
        { timeoutMs: 120_000 },
      );
    }

    it("a viewer token replaying the owner's Idempotency-Key gets the same 403 as without it; every token has its own key space", async () => {
      const key = `owner-${randomUUID()}`;
      const first = await app.http
        .post('/api/rag/ingest')
        .set(bearer(owner.token))
        .set('Idempotency-Key', key)
        .send({ projectId })
        .expect(202);
      await untilJobFinal(owner, first.body.data.jobId);
      const viewerToken = (
        await app.http
          .post(`/api/projects/${projectId}/session-tokens`)
          .set(bearer(owner.token))
          .send({ name: 'v', role: 'viewer' })
          .expect(201)
      ).body.data.token;
      const editorToken = (
        await app.http
          .post(`/api/projects/${projectId}/session-tokens`)
          .set(bearer(owner.token))
          .send({ name: 'e', role: 'editor' })
          .expect(201)
      ).body.data.token;
      for (const route of ['/api/rag/ingest', '/api/rag/reindex']) {
        const withKey = await app.http
          .post(route)
          .set(bearer(viewerToken))
          .set('Idempotency-Key', key)
          .send({ projectId })
          .expect(403);
        const withoutKey = await app.http.post(route).set(bearer(viewerToken)).send({ projectId }).expect(403);
        expect(withKey.body.error.code).toBe(withoutKey.body.error.code);
      }
      // The agent and upload routes check before replaying too: a stranger's replay of the owner's key is a 404.
      const stranger = await makeUser(app);
      const run = await app.http
        .post('/api/agent/execute')
        .set(bearer(owner.token))
        .set('Idempotency-Key', key)
        .send({ projectId, input: 'hello' })
        .expect(202);
      await app.http
        .post('/api/agent/execute')
        .set(bearer(stranger.token))
        .set('Idempotency-Key', key)
        .send({ projectId, input: 'hello' })
        .expect(404);
      const upload = () =>
        app.http
          .post('/api/documents/upload')
          .set('Idempotency-Key', key)
          .field('projectId', projectId)
          .attach('file', Buffer.from('replay me'), 'r.txt');
      await upload().set(bearer(owner.token)).expect(201);
      await upload().set(bearer(viewerToken)).expect(403);
      // An editor token minted by the owner does not share the owner's key space: it starts its own job.
      const editorRun = await app.http
        .post('/api/agent/execute')
        .set(bearer(editorToken))
        .set('Idempotency-Key', key)
        .send({ projectId, input: 'hello' })
        .expect(202);
      expect(editorRun.body.data.jobId).not.toBe(run.body.data.jobId);
      const editorIngest = await app.http
        .post('/api/rag/ingest')
        .set(bearer(editorToken))
        .set('Idempotency-Key', key)
        .send({ projectId })
        .expect(202);
      expect(editorIngest.body.data.jobId).not.toBe(first.body.data.jobId);
      await untilJobFinal(owner, editorIngest.body.data.jobId);
    });
  });

  describe('smaller rules', () => {
    it('refuses a password without a non-whitespace character', async () => {
      const res = await app.http
        .post('/api/auth/register')
        .send({ email: `ws-${randomUUID()}@example.com`, password: ' '.repeat(12), name: 'W' })
        .expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(JSON.stringify(res.body.error.details)).toContain('whitespace');
    });

    it('accepts calendar dates in the years 0001-0099 and keeps them as written', async () => {
      const user = await makeUser(app);
      const key = (await makeApiKey(app, user, { scopes: ALL_SCOPES })).key;
      for (const date of ['0001-01-01', '0099-12-31', '0004-02-29']) {
        expect((await toolResult(app, key, 'create_task', { title: date, due_date: date })).due_date).toBe(date);
      }
      expect(
        (await callTool(app, key, 'create_task', { title: 'x', due_date: '0000-01-01' }).expect(400)).body.error.code,
      ).toBe('invalid_argument');
    });

    it('answers that carry a secret say Cache-Control: no-store', async () => {
      const user = await makeUser(app);
      const login = await app.http
        .post('/api/auth/login')
        .send({ email: user.email, password: user.password })
        .expect(200);
      const key = await app.http
        .post('/api/api-keys')
        .set(bearer(user.token))
        .send({ name: 'k', scopes: ['tasks:read'], expiresIn: 'never' })
        .expect(201);
      const projectId = await newProject(user);
      const token = await app.http
        .post(`/api/projects/${projectId}/session-tokens`)
        .set(bearer(user.token))
        .send({ name: 't', role: 'viewer' })
        .expect(201);
      for (const res of [login, key, token]) expect(res.headers['cache-control']).toBe('no-store');
    });

    it('a well-signed access token whose subject is unknown or not a uuid is a 401, not a 500', async () => {
      const sign = (sub: string) => {
        const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
        const now = Math.floor(Date.now() / 1000);
        const unsigned = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode({ sub, typ: 'access', role: 'admin', iat: now, exp: now + 600 })}`;
        return `${unsigned}.${createHmac('sha256', app.config.secrets.jwtSecret).update(unsigned).digest('base64url')}`;
      };
      for (const sub of [randomUUID(), 'not-a-uuid']) {
        for (const [method, path] of [
          ['get', '/api/auth/me'],
          ['post', '/api/projects'],
          ['get', '/api/admin/github/repos'],
        ] as const) {
          const res = await app.http[method](path)
            .set(bearer(sign(sub)))
            .send({ name: 'x' });
          expect(res.status).toBe(401);
          expect(res.body.error.code).toMatch(/^AUTH_/);
        }
      }
    });

    it('lists Area B validation failures as [{field, message}] also when a shared rule raised them', async () => {
      const user = await makeUser(app);
      const projectId = await newProject(user);
      const res = await app.http
        .post('/api/rag/ingest')
        .set(bearer(user.token))
        .set('Idempotency-Key', 'k'.repeat(300))
        .send({ projectId })
        .expect(400);
      expect(res.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ field: 'Idempotency-Key', message: expect.any(String) }],
      });
    });
  });
});

describe('client addresses: X-Forwarded-For only from TRUST_PROXY', () => {
  const attempts = async (app: TestApp, email: string): Promise<number[]> => {
    const statuses = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await app.http
        .post('/api/auth/login')
        .set('X-Forwarded-For', `203.0.113.${i + 1}`)
        .send({ email, password: 'wrong-password' });
      statuses.push(res.status);
    }
    return statuses;
  };

  it('by default the socket address counts: a client cannot pick a fresh address per attempt', async () => {
    const app = await startTestApp({ env: { RATE_LIMIT_LOGIN_PER_15_MIN: '3' } });
    try {
      expect(await attempts(app, `nobody-${randomUUID()}@example.com`)).toEqual([401, 401, 401, 429, 429]);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('with TRUST_PROXY naming the proxy, its X-Forwarded-For is the client address', async () => {
    const app = await startTestApp({ env: { RATE_LIMIT_LOGIN_PER_15_MIN: '3', TRUST_PROXY: 'loopback' } });
    try {
      expect(await attempts(app, `nobody-${randomUUID()}@example.com`)).toEqual([401, 401, 401, 401, 401]);
    } finally {
      await app.close();
    }
  }, 120_000);
});
