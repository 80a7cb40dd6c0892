import { createHash, randomUUID } from 'node:crypto';
import type { Actor } from '../src/common/auth/actor.js';
import { DocumentEventsService, type DocumentEvent } from '../src/modules/documents/document-events.service.js';
import { DocumentIndexStateService } from '../src/modules/documents/document-index-state.service.js';
import { DocumentsService } from '../src/modules/documents/documents.service.js';
import { makeCorruptPdf, makeDocx, makePdf } from './fixtures/document-samples.js';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const UPLOAD_LIMIT = 64 * 1024;

describe('documents (upload, list, get, delete, visibility)', () => {
  let app: TestApp;
  let owner: TestUser;
  let editor: TestUser;
  let viewer: TestUser;
  let stranger: TestUser;
  let projectId: string;
  let events: DocumentEvent[];

  async function makeProject(user: TestUser): Promise<string> {
    const res = await app.http.post('/api/projects').set(bearer(user.token)).send({ name: 'Docs' }).expect(201);
    return res.body.data.id;
  }

  function upload(token: string, project: string, name: string, bytes: Buffer, fields: Record<string, string> = {}) {
    let req = app.http.post('/api/documents/upload').set(bearer(token)).field('projectId', project);
    for (const [key, value] of Object.entries(fields)) req = req.field(key, value);
    return req.attach('file', bytes, name);
  }

  /** Extraction and indexing run in the background (issue 14): poll until the document is final. */
  async function finalState(token: string, documentId: string): Promise<{ status: string; error: string | null }> {
    const started = Date.now();
    for (;;) {
      const res = await app.http.get(`/api/documents/${documentId}`).set(bearer(token)).expect(200);
      if (['indexed', 'failed'].includes(res.body.data.status)) return res.body.data;
      if (Date.now() - started > 60_000) throw new Error(`document ${documentId} still ${res.body.data.status} after 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  function actorOf(user: TestUser): Actor {
    return { userId: user.id, projectIds: null, repos: null };
  }

  beforeAll(async () => {
    app = await startTestApp({ env: { UPLOAD_MAX_BYTES: String(UPLOAD_LIMIT) } });
    owner = await makeUser(app);
    editor = await makeUser(app);
    viewer = await makeUser(app);
    stranger = await makeUser(app);
    projectId = await makeProject(owner);
    for (const [user, role] of [[editor, 'editor'], [viewer, 'viewer']] as const) {
      await app.http.post(`/api/projects/${projectId}/members`).set(bearer(owner.token)).send({ userId: user.id, role }).expect(201);
    }
    events = [];
    app.app.get(DocumentEventsService).subscribe((event) => {
      events.push(event);
    });
  });
  afterAll(async () => {
    await app.close();
  });

  describe('upload', () => {
    const samples: Array<[string, () => Buffer, string, string]> = [
      ['notes.txt', () => Buffer.from('plain text notes\nsecond line'), 'text/plain', 'plain text notes'],
      ['readme.md', () => Buffer.from('# Title\n\nSome *markdown*.'), 'text/markdown', '# Title'],
      ['page.html', () => Buffer.from('<html><head><script>var x = "hidden";</script></head><body><h1>Hello &amp; bye</h1><p>Para</p></body></html>'), 'text/html', 'Hello & bye\nPara'],
      ['data.csv', () => Buffer.from('a,b\n1,2\n'), 'text/csv', 'a,b'],
      ['data.json', () => Buffer.from('{"k": "json value"}'), 'application/json', 'json value'],
      ['report.pdf', () => makePdf('Quarterly report for Atrium'), 'application/pdf', 'Quarterly report for Atrium'],
      ['memo.docx', () => makeDocx(['First paragraph of the memo', 'Second one']), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'First paragraph of the memo'],
    ];

    it.each(samples)('accepts %s, stores its bytes and extracts its text', async (name, build, mimeType, expectedText) => {
      const bytes = build();
      const res = await upload(owner.token, projectId, name, bytes).expect(201);
      expect(res.body.data).toEqual({
        id: expect.any(String),
        projectId,
        title: name,
        mimeType,
        sizeBytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        isPublic: false,
        authorId: owner.id,
        status: 'uploaded',
        error: null,
        chunkCount: 0,
        progress: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        indexedAt: null,
      });
      expect(await finalState(owner.token, res.body.data.id)).toMatchObject({ status: 'indexed', error: null });
      const service = app.app.get(DocumentsService);
      const { content } = await service.getWithContent(actorOf(owner), res.body.data.id);
      expect(content).toContain(expectedText);
      if (name.endsWith('.html')) expect(content).not.toContain('hidden');
      const original = await service.getOriginal(actorOf(owner), res.body.data.id);
      expect(original.bytes.equals(bytes)).toBe(true);
      expect(events).toContainEqual(expect.objectContaining({ type: 'created', documentId: res.body.data.id, projectId }));
    });

    it('keeps a corrupt PDF as failed with a clear reason (extraction runs after the answer)', async () => {
      const res = await upload(owner.token, projectId, 'broken.pdf', makeCorruptPdf(), { title: 'Broken' }).expect(201);
      expect(res.body.data).toMatchObject({ title: 'Broken', status: 'uploaded', mimeType: 'application/pdf' });
      const final = await finalState(owner.token, res.body.data.id);
      expect(final.status).toBe('failed');
      expect(final.error).toMatch(/PDF could not be read/);
      const { content } = await app.app.get(DocumentsService).getWithContent(actorOf(owner), res.body.data.id);
      expect(content).toBeNull();
    });

    it('refuses a file over UPLOAD_MAX_BYTES with 413, whether or not the length was declared far too large', async () => {
      const slightlyOver = await upload(owner.token, projectId, 'big.txt', Buffer.alloc(UPLOAD_LIMIT + 1, 'a')).expect(413);
      expect(slightlyOver.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(slightlyOver.body.error.message).toContain(String(UPLOAD_LIMIT));
      const wayOver = await upload(owner.token, projectId, 'huge.txt', Buffer.alloc(UPLOAD_LIMIT * 3, 'a')).catch((error: { response?: unknown }) => error.response);
      if (wayOver && typeof wayOver === 'object' && 'status' in wayOver) {
        expect((wayOver as { status: number }).status).toBe(413);
      }
      const atLimit = await upload(owner.token, projectId, 'exact.txt', Buffer.alloc(UPLOAD_LIMIT, 'b')).expect(201);
      expect(atLimit.body.data.sizeBytes).toBe(UPLOAD_LIMIT);
    });

    it.each([
      ['program.exe', Buffer.from('MZ\x90\x00binary')],
      ['fake.pdf', Buffer.from('just text, not a pdf')],
      ['fake.docx', Buffer.from('not a zip either')],
      ['binary.txt', Buffer.from([0x00, 0x01, 0x02, 0xff])],
      ['broken.json', Buffer.from('{"unterminated": ')],
      ['image.png', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
    ])('refuses %s with 415 UNSUPPORTED_MEDIA_TYPE', async (name, bytes) => {
      const res = await upload(owner.token, projectId, name, bytes).expect(415);
      expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    });

    it('answers the same bytes from the same author in the same project with 409 and the existing id', async () => {
      const bytes = Buffer.from(`duplicate me ${randomUUID()}`);
      const first = await upload(owner.token, projectId, 'dup.txt', bytes).expect(201);
      const again = await upload(owner.token, projectId, 'renamed.txt', bytes).expect(409);
      expect(again.body.error.code).toBe('CONFLICT');
      expect(again.body.error.details).toEqual({ existingId: first.body.data.id, existingStatus: expect.stringMatching(/^(uploaded|processing|indexed)$/) });
      // Another author, or another project, is not a duplicate.
      await upload(editor.token, projectId, 'dup.txt', bytes).expect(201);
      const otherProject = await makeProject(owner);
      await upload(owner.token, otherProject, 'dup.txt', bytes).expect(201);
    });

    it('honours Idempotency-Key: the same upload returns the first answer, another file with the key is a 409', async () => {
      const bytes = Buffer.from(`idempotent ${randomUUID()}`);
      const key = `upload-${randomUUID()}`;
      const first = await upload(owner.token, projectId, 'idem.txt', bytes).set('Idempotency-Key', key).expect(201);
      const repeat = await upload(owner.token, projectId, 'idem.txt', bytes).set('Idempotency-Key', key).expect(201);
      expect(repeat.body.data).toEqual(first.body.data);
      const other = await upload(owner.token, projectId, 'idem.txt', Buffer.from('different bytes')).set('Idempotency-Key', key).expect(409);
      expect(other.body.error.code).toBe('CONFLICT');
    });

    it('validates the request: file, projectId, isPublic, membership and role', async () => {
      const noFile = await app.http.post('/api/documents/upload').set(bearer(owner.token)).field('projectId', projectId).expect(400);
      expect(noFile.body.error.code).toBe('VALIDATION_FAILED');
      await app.http.post('/api/documents/upload').set(bearer(owner.token)).attach('file', Buffer.from('x'), 'a.txt').expect(400);
      await upload(owner.token, 'not-a-uuid', 'a.txt', Buffer.from('x')).expect(400);
      await upload(owner.token, projectId, 'a.txt', Buffer.from('x'), { isPublic: 'maybe' }).expect(400);
      await upload(owner.token, projectId, 'empty.txt', Buffer.alloc(0)).expect(400);
      await upload(stranger.token, projectId, 'a.txt', Buffer.from('x')).expect(404);
      await upload(owner.token, randomUUID(), 'a.txt', Buffer.from('x')).expect(404);
      const asViewer = await upload(viewer.token, projectId, 'a.txt', Buffer.from('x')).expect(403);
      expect(asViewer.body.error.code).toBe('FORBIDDEN');
      await app.http.post('/api/documents/upload').field('projectId', projectId).attach('file', Buffer.from('x'), 'a.txt').expect(401);
    });
  });

  describe('visibility', () => {
    let privateId: string;
    let publicId: string;
    let matrixProject: string;

    beforeAll(async () => {
      matrixProject = await makeProject(owner);
      for (const [user, role] of [[editor, 'editor'], [viewer, 'viewer']] as const) {
        await app.http.post(`/api/projects/${matrixProject}/members`).set(bearer(owner.token)).send({ userId: user.id, role }).expect(201);
      }
      privateId = (await upload(owner.token, matrixProject, 'private.md', Buffer.from('# secret plans'))).body.data.id;
      publicId = (await upload(owner.token, matrixProject, 'public.md', Buffer.from('# shared notes'), { isPublic: 'true' })).body.data.id;
    });

    it('shows the author both documents', async () => {
      const list = await app.http.get(`/api/documents?projectId=${matrixProject}`).set(bearer(owner.token)).expect(200);
      expect(list.body.data.items.map((d: { id: string }) => d.id)).toEqual([publicId, privateId]);
      expect(list.body.data.nextCursor).toBeNull();
      await app.http.get(`/api/documents/${privateId}`).set(bearer(owner.token)).expect(200);
      const detail = await app.http.get(`/api/projects/${matrixProject}`).set(bearer(owner.token)).expect(200);
      expect(detail.body.data.documentCount).toBe(2);
    });

    it.each([
      ['editor', () => editor],
      ['viewer', () => viewer],
    ])('shows another member (%s) the public document only', async (_role, who) => {
      const user = who();
      const list = await app.http.get(`/api/documents?projectId=${matrixProject}`).set(bearer(user.token)).expect(200);
      expect(list.body.data.items.map((d: { id: string }) => d.id)).toEqual([publicId]);
      await app.http.get(`/api/documents/${publicId}`).set(bearer(user.token)).expect(200);
      const hidden = await app.http.get(`/api/documents/${privateId}`).set(bearer(user.token)).expect(404);
      expect(hidden.body.error.code).toBe('NOT_FOUND');
      const detail = await app.http.get(`/api/projects/${matrixProject}`).set(bearer(user.token)).expect(200);
      expect(detail.body.data.documentCount).toBe(1);
    });

    it('shows a non-member nothing', async () => {
      await app.http.get(`/api/documents?projectId=${matrixProject}`).set(bearer(stranger.token)).expect(404);
      await app.http.get(`/api/documents/${publicId}`).set(bearer(stranger.token)).expect(404);
      await app.http.get(`/api/documents/${privateId}`).set(bearer(stranger.token)).expect(404);
    });

    it('lets only the author delete: 403 for members who see it, 404 for those who do not', async () => {
      const byEditor = await app.http.delete(`/api/documents/${publicId}`).set(bearer(editor.token)).expect(403);
      expect(byEditor.body.error.code).toBe('FORBIDDEN');
      await app.http.delete(`/api/documents/${publicId}`).set(bearer(viewer.token)).expect(403);
      await app.http.delete(`/api/documents/${privateId}`).set(bearer(editor.token)).expect(404);
      await app.http.delete(`/api/documents/${publicId}`).set(bearer(stranger.token)).expect(404);
      const deleted = await app.http.delete(`/api/documents/${publicId}`).set(bearer(owner.token)).expect(200);
      expect(deleted.body.data).toEqual({ id: publicId, deleted: true });
      await app.http.get(`/api/documents/${publicId}`).set(bearer(owner.token)).expect(404);
      await app.http.delete(`/api/documents/${publicId}`).set(bearer(owner.token)).expect(404);
      expect(events).toContainEqual(expect.objectContaining({ type: 'deleted', documentId: publicId }));
    });

    it('forbids a demoted author (now a viewer) from deleting their own document', async () => {
      const doc = await upload(editor.token, matrixProject, 'mine.txt', Buffer.from(`editor doc ${randomUUID()}`)).expect(201);
      await app.http.post(`/api/projects/${matrixProject}/members`).set(bearer(owner.token)).send({ userId: editor.id, role: 'viewer' }).expect(201);
      await app.http.delete(`/api/documents/${doc.body.data.id}`).set(bearer(editor.token)).expect(403);
      await app.http.post(`/api/projects/${matrixProject}/members`).set(bearer(owner.token)).send({ userId: editor.id, role: 'editor' }).expect(201);
      await app.http.delete(`/api/documents/${doc.body.data.id}`).set(bearer(editor.token)).expect(200);
    });

    it('answers unknown ids with 404', async () => {
      await app.http.get(`/api/documents/${randomUUID()}`).set(bearer(owner.token)).expect(404);
      await app.http.get('/api/documents/not-a-uuid').set(bearer(owner.token)).expect(404);
    });
  });

  describe('list', () => {
    it('requires projectId, filters by status and paginates newest first', async () => {
      const project = await makeProject(owner);
      await app.http.get('/api/documents').set(bearer(owner.token)).expect(400);
      await app.http.get(`/api/documents?projectId=${project}&status=bogus`).set(bearer(owner.token)).expect(400);
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1) ids.push((await upload(owner.token, project, `n${i}.txt`, Buffer.from(`note ${i}`)).expect(201)).body.data.id);
      const failed = (await upload(owner.token, project, 'bad.pdf', makeCorruptPdf()).expect(201)).body.data.id;
      const page1 = await app.http.get(`/api/documents?projectId=${project}&limit=2`).set(bearer(owner.token)).expect(200);
      expect(page1.body.data.items.map((d: { id: string }) => d.id)).toEqual([failed, ids[2]]);
      const page2 = await app.http.get(`/api/documents?projectId=${project}&limit=2&cursor=${page1.body.data.nextCursor}`).set(bearer(owner.token)).expect(200);
      expect(page2.body.data.items.map((d: { id: string }) => d.id)).toEqual([ids[1], ids[0]]);
      expect(page2.body.data.nextCursor).toBeNull();
      await finalState(owner.token, failed);
      const onlyFailed = await app.http.get(`/api/documents?projectId=${project}&status=failed`).set(bearer(owner.token)).expect(200);
      expect(onlyFailed.body.data.items.map((d: { id: string }) => d.id)).toEqual([failed]);
    });
  });

  describe('project session tokens', () => {
    it('act inside their project with the token role and get 401 anywhere else', async () => {
      const project = await makeProject(owner);
      const other = await makeProject(owner);
      const mint = async (role: string) =>
        (await app.http.post(`/api/projects/${project}/session-tokens`).set(bearer(owner.token)).send({ name: role, role }).expect(201)).body.data.token as string;
      const editorToken = await mint('editor');
      const viewerToken = await mint('viewer');

      const uploaded = await upload(editorToken, project, 'via-token.txt', Buffer.from('uploaded with a token')).expect(201);
      expect(uploaded.body.data.authorId).toBe(owner.id);
      const id = uploaded.body.data.id;
      const list = await app.http.get(`/api/documents?projectId=${project}`).set(bearer(viewerToken)).expect(200);
      expect(list.body.data.items.map((d: { id: string }) => d.id)).toEqual([id]);
      await app.http.get(`/api/documents/${id}`).set(bearer(viewerToken)).expect(200);

      // A viewer token cannot change anything, even acting as the owner who authored the document.
      await upload(viewerToken, project, 'nope.txt', Buffer.from('nope')).expect(403);
      await app.http.delete(`/api/documents/${id}`).set(bearer(viewerToken)).expect(403);

      // Another project: 401 naming the credential.
      const otherList = await app.http.get(`/api/documents?projectId=${other}`).set(bearer(editorToken)).expect(401);
      expect(otherList.body.error.code).toBe('AUTH_INVALID');
      expect(otherList.body.error.message).toMatch(/another project/);
      await upload(editorToken, other, 'x.txt', Buffer.from('elsewhere')).expect(401);
      await app.http.get(`/api/projects/${other}`).set(bearer(editorToken)).expect(401);
      const otherDoc = await upload(owner.token, other, 'other.txt', Buffer.from('other project doc')).expect(201);
      await app.http.get(`/api/documents/${otherDoc.body.data.id}`).set(bearer(editorToken)).expect(404);
      // Outside Area B project routes altogether.
      const me = await app.http.get('/api/auth/me').set(bearer(editorToken)).expect(401);
      expect(me.body.error.message).toMatch(/user access token/);
      await app.http.get('/api/projects').set(bearer(editorToken)).expect(401);

      await app.http.delete(`/api/documents/${id}`).set(bearer(editorToken)).expect(200);
    });
  });

  describe('service methods for the document tools', () => {
    it('the indexer cannot move a document by a job that read older content (every mark checks the sha256)', async () => {
      const service = app.app.get(DocumentsService);
      const state = app.app.get(DocumentIndexStateService);
      const doc = await service.createFromText(actorOf(owner), { title: 'Moving target', content: 'first version' });
      const oldSha = doc.sha256;
      const updated = await service.update(actorOf(owner), doc.id, { content: 'second version' });
      // The worker indexes the second version.
      let indexed = await service.findVisible(actorOf(owner), doc.id);
      for (let i = 0; i < 150 && indexed.status !== 'indexed'; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        indexed = await service.findVisible(actorOf(owner), doc.id);
      }
      expect(indexed).toMatchObject({ status: 'indexed', sha256: updated.sha256 });
      // A late job that still holds the first version changes nothing about the indexed second one.
      await state.markProcessing(doc.id, oldSha);
      expect(await state.markFailed(doc.id, oldSha, 'late failure')).toBe(false);
      expect(await state.markIndexed(doc.id, oldSha, 999)).toBe(false);
      const after = await service.findVisible(actorOf(owner), doc.id);
      expect(after).toMatchObject({ status: 'indexed', sha256: updated.sha256, chunkCount: indexed.chunkCount, error: null });
    });

    it('create, list, get, update and delete text documents under the same rules', async () => {
      const service = app.app.get(DocumentsService);
      const project = await makeProject(owner);
      await app.http.post(`/api/projects/${project}/members`).set(bearer(owner.token)).send({ userId: editor.id, role: 'editor' }).expect(201);

      const loose = await service.createFromText(actorOf(owner), { title: 'Loose note', content: '# no project' });
      expect(loose).toMatchObject({ projectId: null, status: 'uploaded', mimeType: 'text/markdown', isPublic: false });
      const shared = await service.createFromText(actorOf(owner), { title: 'Team note', content: 'hello team', projectId: project, isPublic: true });
      const secret = await service.createFromText(actorOf(owner), { title: 'Secret note', content: 'hidden', projectId: project });

      const mine = await service.listVisible(actorOf(owner), { query: 'note', limit: 50 });
      expect(mine.items.map((d) => d.id)).toEqual(expect.arrayContaining([loose.id, shared.id, secret.id]));
      const theirs = await service.listVisible(actorOf(editor), { projectId: project, limit: 50 });
      expect(theirs.items.map((d) => d.id)).toEqual([shared.id]);
      const truncated = await service.listVisible(actorOf(owner), { projectId: project, limit: 1 });
      expect(truncated).toMatchObject({ truncated: true });
      expect(truncated.items).toHaveLength(1);
      await expect(service.listVisible(actorOf(stranger), { projectId: project, limit: 5 })).rejects.toMatchObject({ code: 'not_found' });
      // A private document without a project is its author's alone; a public one is everyone's.
      await expect(service.get(actorOf(stranger), loose.id)).rejects.toMatchObject({ code: 'not_found' });

      await expect(service.update(actorOf(editor), shared.id, { title: 'Hijacked' })).rejects.toMatchObject({ code: 'forbidden' });
      await expect(service.update(actorOf(editor), secret.id, { title: 'Hijacked' })).rejects.toMatchObject({ code: 'not_found' });
      const updated = await service.update(actorOf(owner), shared.id, { content: 'new content', title: 'Renamed' });
      expect(updated).toMatchObject({ title: 'Renamed', status: 'processing' });
      const { content } = await service.getWithContent(actorOf(editor), shared.id);
      expect(content).toBe('new content');
      expect(events).toContainEqual(expect.objectContaining({ type: 'content-changed', documentId: shared.id }));
      // A metadata-only change never sends a document back to processing (indexing may have finished meanwhile).
      const retitled = await service.update(actorOf(owner), loose.id, { isPublic: true });
      expect(['uploaded', 'indexed']).toContain(retitled.status);
      expect(events).not.toContainEqual(expect.objectContaining({ type: 'content-changed', documentId: loose.id }));
      await service.get(actorOf(stranger), loose.id);

      await expect(service.createFromText(actorOf(owner), { title: 'x', content: 'x'.repeat(1024 * 1024 + 1) })).rejects.toMatchObject({ code: 'invalid_argument' });
      await expect(service.createFromText(actorOf(owner), { title: ' ', content: 'x' })).rejects.toMatchObject({ code: 'invalid_argument' });
      await expect(service.createFromText(actorOf(stranger), { title: 'x', content: 'x', projectId: project })).rejects.toMatchObject({ code: 'not_found' });
      await expect(service.delete(actorOf(editor), shared.id)).rejects.toMatchObject({ code: 'forbidden' });
      await expect(service.delete(actorOf(owner), shared.id)).resolves.toEqual({ id: shared.id, deleted: true });
    });
  });
});
