import { randomUUID } from 'node:crypto';
import {
  bearer,
  callTool,
  makeApiKey,
  makeUser,
  toolResult,
  type ApiKeyOptions,
  type TestUser,
} from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** See api-keys.e2e-spec.ts: one pooled connection keeps the embedded engine correct under concurrency. */
describe('document tools through the Area A gateway', () => {
  let app: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let projectId: string;
  const keys: Record<string, string> = {};

  const makeKey = async (user: TestUser, options: Partial<ApiKeyOptions> = {}) =>
    (await makeApiKey(app, user, { scopes: ['docs:read', 'docs:write'], ...options })).key;
  const call = (key: string, name: string, args: Record<string, unknown> = {}) => callTool(app, key, name, args);
  const result = (key: string, name: string, args: Record<string, unknown> = {}) => toolResult(app, key, name, args);

  beforeAll(async () => {
    app = await startTestApp();
    alice = await makeUser(app);
    bob = await makeUser(app);
    carol = await makeUser(app);
    keys.alice = await makeKey(alice);
    keys.bob = await makeKey(bob);
    keys.carol = await makeKey(carol);
    projectId = (await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Docs' }).expect(201)).body
      .data.id;
    await app.http
      .post(`/api/projects/${projectId}/members`)
      .set(bearer(alice.token))
      .send({ userId: bob.id, role: 'editor' })
      .expect(201);
  });
  afterAll(async () => {
    await app.close();
  });

  it('lists the five document tools with the catalog parameters', async () => {
    const res = await app.http.get('/api/v1/public/mcp/tools').set(bearer(keys.alice)).expect(200);
    const names = res.body.tools.map((t: { name: string }) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'list_documents',
        'get_document',
        'create_document',
        'update_document',
        'delete_document',
      ]),
    );
    const list = res.body.tools.find((t: { name: string }) => t.name === 'list_documents');
    expect(list.scope).toBe('docs:read');
    expect(list.parameters).toMatchObject({
      project_id: { type: 'str', default: '', required: false },
      query: { type: 'str', default: '', required: false },
      limit: { type: 'int', default: 50, required: false, minimum: 1, maximum: 200 },
    });
    const create = res.body.tools.find((t: { name: string }) => t.name === 'create_document');
    expect(create.parameters).toMatchObject({
      title: { type: 'str', required: true },
      content: { type: 'str', required: true },
      project_id: { type: 'str', default: '' },
      is_public: { type: 'bool', default: false },
    });
    const get = res.body.tools.find((t: { name: string }) => t.name === 'get_document');
    expect(get.parameters.include_content).toMatchObject({ type: 'bool', default: true });
  });

  it('creates, reads, updates and deletes a document as its author', async () => {
    const created = await result(keys.alice, 'create_document', { title: 'Runbook', content: '# Steps\n1. restart' });
    expect(created).toEqual({
      id: expect.any(String),
      title: 'Runbook',
      project_id: null,
      author_id: alice.id,
      is_public: false,
      status: 'uploaded',
      mime_type: 'text/markdown',
      created_at: expect.any(String),
      updated_at: expect.any(String),
      content: '# Steps\n1. restart',
    });
    const got = await result(keys.alice, 'get_document', { document_id: created.id });
    expect(got.content).toBe('# Steps\n1. restart');
    const bare = await result(keys.alice, 'get_document', { document_id: created.id, include_content: false });
    expect(bare).not.toHaveProperty('content');
    const updated = await result(keys.alice, 'update_document', {
      document_id: created.id,
      content: 'v2',
      title: 'Runbook v2',
    });
    expect(updated).toMatchObject({ title: 'Runbook v2', content: 'v2', status: 'processing' });
    const listed = await result(keys.alice, 'list_documents', { query: 'runbook' });
    expect(listed.map((d: { id: string }) => d.id)).toContain(created.id);
    expect(listed[0]).not.toHaveProperty('content');
    expect(await result(keys.alice, 'delete_document', { document_id: created.id })).toEqual({
      id: created.id,
      deleted: true,
    });
    const gone = await call(keys.alice, 'get_document', { document_id: created.id }).expect(404);
    expect(gone.body.error.code).toBe('not_found');
  });

  it('keeps private documents to their author and lets others read but not change public ones', async () => {
    const secret = await result(keys.alice, 'create_document', {
      title: 'Secret',
      content: 'private',
      project_id: projectId,
    });
    const shared = await result(keys.alice, 'create_document', {
      title: 'Shared',
      content: 'public',
      project_id: projectId,
      is_public: true,
    });
    const open = await result(keys.alice, 'create_document', {
      title: 'Open letter',
      content: 'to everyone',
      is_public: true,
    });

    // Bob (a project member) sees the public one, not the private one.
    expect((await call(keys.bob, 'get_document', { document_id: secret.id })).status).toBe(404);
    expect((await result(keys.bob, 'get_document', { document_id: shared.id })).content).toBe('public');
    const bobList = (await result(keys.bob, 'list_documents', { project_id: projectId })).map(
      (d: { id: string }) => d.id,
    );
    expect(bobList).toContain(shared.id);
    expect(bobList).not.toContain(secret.id);
    // Carol (not a member) sees neither project document, but a public one without a project.
    expect((await call(keys.carol, 'get_document', { document_id: shared.id })).status).toBe(404);
    expect((await call(keys.carol, 'list_documents', { project_id: projectId })).status).toBe(404);
    expect((await result(keys.carol, 'get_document', { document_id: open.id })).title).toBe('Open letter');

    const update = await call(keys.bob, 'update_document', { document_id: shared.id, title: 'Mine now' }).expect(403);
    expect(update.body.error.code).toBe('forbidden');
    expect((await call(keys.bob, 'delete_document', { document_id: shared.id })).status).toBe(403);
    expect((await call(keys.carol, 'delete_document', { document_id: open.id })).status).toBe(403);
    expect((await call(keys.bob, 'delete_document', { document_id: secret.id })).status).toBe(404);
    expect(
      (await call(keys.carol, 'create_document', { title: 'x', content: 'x', project_id: projectId })).status,
    ).toBe(404);
  });

  it('validates arguments and honours scopes and project pins', async () => {
    const missing = await call(keys.alice, 'create_document', { title: 'No content' }).expect(400);
    expect(missing.body.error).toMatchObject({ code: 'missing_argument', details: { argument: 'content' } });
    await call(keys.alice, 'get_document', { document_id: 'nope' }).expect(400);
    await call(keys.alice, 'get_document', { document_id: randomUUID() }).expect(404);
    await call(keys.alice, 'list_documents', { limit: 0 }).expect(400);

    const readOnly = await makeKey(alice, { scopes: ['docs:read'] });
    const denied = await call(readOnly, 'create_document', { title: 't', content: 'c' }).expect(403);
    expect(denied.body.error).toMatchObject({ code: 'insufficient_scope', details: { required_scope: 'docs:write' } });

    const pinned = await makeKey(alice, { projectIds: [projectId] });
    const inProject = await result(pinned, 'create_document', {
      title: 'Pinned',
      content: 'in project',
      project_id: projectId,
    });
    const listed = (await result(pinned, 'list_documents')).map((d: { project_id: string | null }) => d.project_id);
    expect(new Set(listed)).toEqual(new Set([projectId]));
    const loose = await result(keys.alice, 'create_document', { title: 'Loose', content: 'no project' });
    expect((await call(pinned, 'get_document', { document_id: loose.id })).status).toBe(404);
    // Pinned to one project: a document created without project_id lands there (API.md, pinned parameters); an
    // explicit "no project" is still outside the pin.
    const filled = await result(pinned, 'create_document', { title: 'x', content: 'x' });
    expect(filled.project_id).toBe(projectId);
    expect((await call(pinned, 'create_document', { title: 'x', content: 'x', project_id: '' })).status).toBe(400);
    await result(pinned, 'delete_document', { document_id: inProject.id });
  });

  it('concurrent update and deletes of one document: exactly one delete succeeds, the rest are not_found, never a 500', async () => {
    for (let round = 0; round < 5; round += 1) {
      const doc = await result(keys.alice, 'create_document', { title: `Contended ${round}`, content: 'v1' });
      const answers = await Promise.all([
        call(keys.alice, 'update_document', { document_id: doc.id, title: 'renamed', content: 'v2' }),
        call(keys.alice, 'delete_document', { document_id: doc.id }),
        app.http.delete(`/api/documents/${doc.id}`).set(bearer(alice.token)),
        call(keys.alice, 'update_document', { document_id: doc.id, is_public: true }),
        call(keys.alice, 'delete_document', { document_id: doc.id }),
      ]);
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s !== 200 && s !== 404)).toEqual([]);
      expect([statuses[1], statuses[2], statuses[4]].filter((s) => s === 200)).toHaveLength(1);
      await call(keys.alice, 'get_document', { document_id: doc.id }).expect(404);
    }
  });

  it('marks a list longer than its limit as truncated', async () => {
    for (let i = 0; i < 3; i += 1)
      await result(keys.bob, 'create_document', { title: `Bulk ${i}`, content: `bulk ${i}` });
    const res = await call(keys.bob, 'list_documents', { query: 'Bulk', limit: 2 }).expect(200);
    expect(res.body.result).toHaveLength(2);
    expect(res.headers['x-truncated']).toBe('true');
  });
});
