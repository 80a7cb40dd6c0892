import { createHash, randomUUID } from 'node:crypto';
import type { Actor } from '../src/common/auth/actor.js';
import { DocumentEventsService, type DocumentEvent } from '../src/modules/documents/document-events.service.js';
import { DocumentIndexStateService } from '../src/modules/documents/document-index-state.service.js';
import { DocumentsService } from '../src/modules/documents/documents.service.js';
import { makeCorruptPdf, makeDocx, makePdf } from './fixtures/document-samples.js';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/wait.js';

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
      if (Date.now() - started > 60_000)
        throw new Error(`document ${documentId} still ${res.body.data.status} after 60 s`);
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
    for (const [user, role] of [
      [editor, 'editor'],
      [viewer, 'viewer'],
    ] as const) {
      await app.http
        .post(`/api/projects/${projectId}/members`)
        .set(bearer(owner.token))
        .send({ userId: user.id, role })
        .expect(201);
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
      [
        'page.html',
        () =>
          Buffer.from(
            '<html><head><script>var x = "hidden";</script></head><body><h1>Hello &amp; bye</h1><p>Para</p></body></html>',
          ),
        'text/html',
        'Hello & bye\nPara',
      ],
      ['data.csv', () => Buffer.from('a,b\n1,2\n'), 'text/csv', 'a,b'],
      ['data.json', () => Buffer.from('{"k": "json value"}'), 'application/json', 'json value'],
      ['report.pdf', () => makePdf('Quarterly report for Atrium'), 'application/pdf', 'Quarterly report for Atrium'],
      [
        'memo.docx',
        () => makeDocx(['First paragraph of the memo', 'Second one']),
        'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        'First paragraph of the memo',
      ],
    ];

    it.each(samples)(
      'accepts %s, stores its bytes and extracts its text',
      async (name, build, mimeType, expectedText) => {
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
        expect(events).toContainEqual(
          expect.objectContaining({ type: 'created', documentId: res.body.data.id, projectId }),
        );
      },
    );

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
      const slightlyOver = await upload(owner.token, projectId, 'big.txt', Buffer.alloc(UPLOAD_LIMIT + 1, 'a')).expect(
        413,
      );
      expect(slightlyOver.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(slightlyOver.body.error.message).toContain(String(UPLOAD_LIMIT));
      // A length declared far too large is refused before the body is read; a client still sending reads the 413,
      // not a connection reset (fetch's EPIPE), because the server lingers before closing.
      for (let i = 0; i < 3; i += 1) {
        const form = new FormData();
        form.append('projectId', projectId);
        form.append('file', new Blob([Buffer.alloc(10 * 1024 * 1024, 'a')]), 'huge.txt');
        const wayOver = await fetch(`${app.baseUrl}/api/documents/upload`, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner.token}` },
          body: form,
        });
        expect(wayOver.status).toBe(413);
        expect(wayOver.headers.get('connection')).toBe('close');
        expect(((await wayOver.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');
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
      expect(again.body.error.details).toEqual({
        existingId: first.body.data.id,
        existingStatus: expect.stringMatching(/^(uploaded|processing|indexed)$/),
      });
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
      const other = await upload(owner.token, projectId, 'idem.txt', Buffer.from('different bytes'))
        .set('Idempotency-Key', key)
        .expect(409);
      expect(other.body.error.code).toBe('CONFLICT');
    });

    it('validates the request: file, projectId, isPublic, membership and role', async () => {
      const noFile = await app.http
        .post('/api/documents/upload')
        .set(bearer(owner.token))
        .field('projectId', projectId)
        .expect(400);
      expect(noFile.body.error.code).toBe('VALIDATION_FAILED');
      await app.http
        .post('/api/documents/upload')
        .set(bearer(owner.token))
        .attach('file', Buffer.from('x'), 'a.txt')
        .expect(400);
      await upload(owner.token, 'not-a-uuid', 'a.txt', Buffer.from('x')).expect(400);
      await upload(owner.token, projectId, 'a.txt', Buffer.from('x'), { isPublic: 'maybe' }).expect(400);
      await upload(owner.token, projectId, 'empty.txt', Buffer.alloc(0)).expect(400);
      await upload(stranger.token, projectId, 'a.txt', Buffer.from('x')).expect(404);
      await upload(owner.token, randomUUID(), 'a.txt', Buffer.from('x')).expect(404);
      const asViewer = await upload(viewer.token, projectId, 'a.txt', Buffer.from('x')).expect(403);
      expect(asViewer.body.error.code).toBe('FORBIDDEN');
      await app.http
        .post('/api/documents/upload')
        .field('projectId', projectId)
        .attach('file', Buffer.from('x'), 'a.txt')
        .expect(401);
    });
  });

  // Who sees, lists and deletes which document: test/medium/documents.medium-spec.ts. Here: what the routes answer.
  describe('routes', () => {
    it('an unknown or malformed document id is 404; a list needs projectId and a known status (400)', async () => {
      await app.http.get(`/api/documents/${randomUUID()}`).set(bearer(owner.token)).expect(404);
      await app.http.get('/api/documents/not-a-uuid').set(bearer(owner.token)).expect(404);
      await app.http.get('/api/documents').set(bearer(owner.token)).expect(400);
      await app.http.get(`/api/documents?projectId=${projectId}&status=bogus`).set(bearer(owner.token)).expect(400);
    });
  });

  describe('project session tokens', () => {
    it('act inside their project with the token role and get 401 anywhere else', async () => {
      const project = await makeProject(owner);
      const other = await makeProject(owner);
      const mint = async (role: string) =>
        (
          await app.http
            .post(`/api/projects/${project}/session-tokens`)
            .set(bearer(owner.token))
            .send({ name: role, role })
            .expect(201)
        ).body.data.token as string;
      const editorToken = await mint('editor');
      const viewerToken = await mint('viewer');

      const uploaded = await upload(editorToken, project, 'via-token.txt', Buffer.from('uploaded with a token')).expect(
        201,
      );
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
      expect(after).toMatchObject({
        status: 'indexed',
        sha256: updated.sha256,
        chunkCount: indexed.chunkCount,
        error: null,
      });
    });
  });

  describe('a file larger than one read of its bytes', () => {
    let wide: TestApp;
    afterAll(async () => {
      await wide?.close();
    });

    it('is read back whole and exact: its original bytes, and the text extracted from them', async () => {
      // The default upload limit; the stored bytes are read back in pieces of 512 KiB (DocumentsRepository). Large
      // chunks: the file's text is what this test checks, not its thousands of default-sized chunks.
      wide = await startTestApp({ env: { RAG_CHUNK_TARGET_CHARS: '20000', RAG_CHUNK_OVERLAP_CHARS: '0' } });
      const user = await makeUser(wide);
      const project = (await wide.http.post('/api/projects').set(bearer(user.token)).send({ name: 'Big' }).expect(201))
        .body.data.id;
      // Text that compresses (stored compressed by the database) with a marker straddling the piece boundary.
      const line = (i: number) => `line ${i} of a long plain text file, repeated words words words\n`;
      const lines = Array.from({ length: 30_000 }, (_, i) => line(i));
      const boundary = 512 * 1024;
      let text = lines.join('');
      text = `${text.slice(0, boundary - 5)}MARKER-ACROSS-PIECES${text.slice(boundary - 5)}`;
      const bytes = Buffer.from(text);
      expect(bytes.length).toBeGreaterThan(3 * boundary);
      const res = await wide.http
        .post('/api/documents/upload')
        .set(bearer(user.token))
        .field('projectId', project)
        .attach('file', bytes, 'long.txt')
        .expect(201);
      const id = res.body.data.id;
      const service = wide.app.get(DocumentsService);
      const original = await service.getOriginal(actorOf(user), id);
      expect(original.bytes.length).toBe(bytes.length);
      expect(original.bytes.equals(bytes)).toBe(true);
      const status = await pollUntil(
        'the large file indexed',
        async () =>
          (await wide.http.get(`/api/documents/${id}`).set(bearer(user.token)).expect(200)).body.data.status as string,
        (value) => ['indexed', 'failed'].includes(value),
        { timeoutMs: 60_000 },
      );
      expect(status).toBe('indexed');
      const { content } = await service.getWithContent(actorOf(user), id);
      expect(content).toBe(text);
    });
  });
});
