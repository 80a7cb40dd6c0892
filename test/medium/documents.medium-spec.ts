import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import { DocumentEventsService, type DocumentEvent } from '../../src/modules/documents/document-events.service.js';
import { DocumentsService } from '../../src/modules/documents/documents.service.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { actorOf, useMediumContext, type DocumentRow, type ProjectRow, type UserRow } from '../support/medium.js';

/**
 * Who sees, lists, changes and deletes a document, through DocumentsService on a real database: a private document
 * is its author's, a public one every member's, only an author with a writing role deletes, and a non-member finds
 * nothing. Uploads over HTTP (multipart, limits, extraction) stay in documents.e2e-spec.ts.
 */
describe('DocumentsService (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const documents = () => medium().get(DocumentsService);
  const ids = (items: { id: string }[]) => items.map((item) => item.id);
  const notFound = { code: ErrorCode.NotFound };
  const forbidden = { code: ErrorCode.Forbidden };

  let owner: UserRow;
  let editor: UserRow;
  let viewer: UserRow;
  let stranger: UserRow;
  let events: DocumentEvent[];

  beforeAll(async () => {
    const { make, get } = medium();
    [owner, editor, viewer, stranger] = [await make.user(), await make.user(), await make.user(), await make.user()];
    events = [];
    get(DocumentEventsService).subscribe((event) => {
      events.push(event);
    });
  });

  describe('visibility', () => {
    let project: ProjectRow;
    let privateDoc: DocumentRow;
    let publicDoc: DocumentRow;

    beforeAll(async () => {
      const { make } = medium();
      project = await make.project(owner, {
        members: [
          { user: editor, role: 'editor' },
          { user: viewer, role: 'viewer' },
        ],
      });
      privateDoc = await make.document(owner, { projectId: project.id, title: 'private.md' });
      publicDoc = await make.document(owner, { projectId: project.id, title: 'public.md', isPublic: true });
      await medium()
        .db.updateTable('documents')
        .set({ createdAt: new Date(Date.UTC(2026, 0, 1)) })
        .where('id', '=', privateDoc.id)
        .execute();
    });

    it('shows the author both documents, newest first, and counts both on the project', async () => {
      const list = await documents().list(actorOf(owner), { projectId: project.id, limit: 50 });
      expect(ids(list.items)).toEqual([publicDoc.id, privateDoc.id]);
      expect(list.nextCursor).toBeNull();
      expect((await documents().get(actorOf(owner), privateDoc.id)).id).toBe(privateDoc.id);
      expect((await medium().get(ProjectsService).get(actorOf(owner), project.id)).documentCount).toBe(2);
    });

    it.each([
      ['editor', () => editor],
      ['viewer', () => viewer],
    ])('shows another member (%s) the public document only, and counts only it', async (_role, who) => {
      const member = actorOf(who());
      expect(ids((await documents().list(member, { projectId: project.id, limit: 50 })).items)).toEqual([publicDoc.id]);
      expect((await documents().get(member, publicDoc.id)).id).toBe(publicDoc.id);
      await expect(documents().get(member, privateDoc.id)).rejects.toMatchObject(notFound);
      expect((await medium().get(ProjectsService).get(member, project.id)).documentCount).toBe(1);
    });

    it('shows a non-member nothing', async () => {
      await expect(documents().list(actorOf(stranger), { projectId: project.id, limit: 50 })).rejects.toMatchObject(
        notFound,
      );
      await expect(documents().get(actorOf(stranger), publicDoc.id)).rejects.toMatchObject(notFound);
      await expect(documents().get(actorOf(stranger), privateDoc.id)).rejects.toMatchObject(notFound);
    });

    it('answers unknown and malformed ids with not_found', async () => {
      await expect(documents().get(actorOf(owner), randomUUID())).rejects.toMatchObject(notFound);
      await expect(documents().get(actorOf(owner), 'not-a-uuid')).rejects.toMatchObject(notFound);
    });

    it('lets only the author delete: forbidden for members who see it, not_found for those who do not; a delete is announced', async () => {
      const doomed = await medium().make.document(owner, { projectId: project.id, isPublic: true });
      await expect(documents().delete(actorOf(editor), doomed.id)).rejects.toMatchObject(forbidden);
      await expect(documents().delete(actorOf(viewer), doomed.id)).rejects.toMatchObject(forbidden);
      await expect(documents().delete(actorOf(editor), privateDoc.id)).rejects.toMatchObject(notFound);
      await expect(documents().delete(actorOf(stranger), doomed.id)).rejects.toMatchObject(notFound);
      expect(await documents().delete(actorOf(owner), doomed.id)).toEqual({ id: doomed.id, deleted: true });
      await expect(documents().get(actorOf(owner), doomed.id)).rejects.toMatchObject(notFound);
      await expect(documents().delete(actorOf(owner), doomed.id)).rejects.toMatchObject(notFound);
      expect(events).toContainEqual(expect.objectContaining({ type: 'deleted', documentId: doomed.id }));
    });

    it('forbids a demoted author (now a viewer) from deleting their own document; promoted again, they may', async () => {
      const mine = await medium().make.document(editor, { projectId: project.id });
      const setRole = (role: 'viewer' | 'editor') =>
        medium()
          .db.updateTable('projectMembers')
          .set({ role })
          .where('projectId', '=', project.id)
          .where('userId', '=', editor.id)
          .execute();
      await setRole('viewer');
      await expect(documents().delete(actorOf(editor), mine.id)).rejects.toMatchObject(forbidden);
      await setRole('editor');
      expect(await documents().delete(actorOf(editor), mine.id)).toEqual({ id: mine.id, deleted: true });
    });
  });

  it('list: filters by status and pages newest first', async () => {
    const { make } = medium();
    const project = await make.project(owner);
    const notes = [
      await make.document(owner, { projectId: project.id }),
      await make.document(owner, { projectId: project.id }),
      await make.document(owner, { projectId: project.id }),
    ];
    const failed = await make.document(owner, { projectId: project.id, status: 'failed' });
    // Each a second apart, in the order made (the factory leaves created_at to the database).
    for (const [i, doc] of [...notes, failed].entries()) {
      await medium()
        .db.updateTable('documents')
        .set({ createdAt: new Date(Date.UTC(2026, 0, 2, 0, 0, i)) })
        .where('id', '=', doc.id)
        .execute();
    }
    const page1 = await documents().list(actorOf(owner), { projectId: project.id, limit: 2 });
    expect(ids(page1.items)).toEqual([failed.id, notes[2].id]);
    const page2 = await documents().list(actorOf(owner), {
      projectId: project.id,
      limit: 2,
      cursor: page1.nextCursor ?? undefined,
    });
    expect(ids(page2.items)).toEqual([notes[1].id, notes[0].id]);
    expect(page2.nextCursor).toBeNull();
    expect(
      ids((await documents().list(actorOf(owner), { projectId: project.id, status: 'failed', limit: 50 })).items),
    ).toEqual([failed.id]);
  });

  it('text documents (the document tools): create, list, get, update and delete under the same rules', async () => {
    const service = documents();
    const project = await medium().make.project(owner, { members: [{ user: editor, role: 'editor' }] });

    const loose = await service.createFromText(actorOf(owner), { title: 'Loose note', content: '# no project' });
    expect(loose).toMatchObject({ projectId: null, status: 'uploaded', mimeType: 'text/markdown', isPublic: false });
    const shared = await service.createFromText(actorOf(owner), {
      title: 'Team note',
      content: 'hello team',
      projectId: project.id,
      isPublic: true,
    });
    const secret = await service.createFromText(actorOf(owner), {
      title: 'Secret note',
      content: 'hidden',
      projectId: project.id,
    });

    const mine = await service.listVisible(actorOf(owner), { query: 'note', limit: 50 });
    expect(ids(mine.items)).toEqual(expect.arrayContaining([loose.id, shared.id, secret.id]));
    expect(ids((await service.listVisible(actorOf(editor), { projectId: project.id, limit: 50 })).items)).toEqual([
      shared.id,
    ]);
    const truncated = await service.listVisible(actorOf(owner), { projectId: project.id, limit: 1 });
    expect(truncated).toMatchObject({ truncated: true });
    expect(truncated.items).toHaveLength(1);
    await expect(service.listVisible(actorOf(stranger), { projectId: project.id, limit: 5 })).rejects.toMatchObject(
      notFound,
    );
    // A private document without a project is its author's alone; a public one is everyone's.
    await expect(service.get(actorOf(stranger), loose.id)).rejects.toMatchObject(notFound);

    await expect(service.update(actorOf(editor), shared.id, { title: 'Hijacked' })).rejects.toMatchObject(forbidden);
    await expect(service.update(actorOf(editor), secret.id, { title: 'Hijacked' })).rejects.toMatchObject(notFound);
    const updated = await service.update(actorOf(owner), shared.id, { content: 'new content', title: 'Renamed' });
    expect(updated).toMatchObject({ title: 'Renamed', status: 'processing' });
    expect((await service.getWithContent(actorOf(editor), shared.id)).content).toBe('new content');
    expect(events).toContainEqual(expect.objectContaining({ type: 'content-changed', documentId: shared.id }));
    // A metadata-only change never sends a document back to processing (indexing may have finished meanwhile).
    const republished = await service.update(actorOf(owner), loose.id, { isPublic: true });
    expect(['uploaded', 'indexed']).toContain(republished.status);
    expect(events).not.toContainEqual(expect.objectContaining({ type: 'content-changed', documentId: loose.id }));
    await service.get(actorOf(stranger), loose.id);

    const invalid = { code: ErrorCode.InvalidArgument };
    await expect(
      service.createFromText(actorOf(owner), { title: 'x', content: 'x'.repeat(1024 * 1024 + 1) }),
    ).rejects.toMatchObject(invalid);
    await expect(service.createFromText(actorOf(owner), { title: ' ', content: 'x' })).rejects.toMatchObject(invalid);
    await expect(
      service.createFromText(actorOf(stranger), { title: 'x', content: 'x', projectId: project.id }),
    ).rejects.toMatchObject(notFound);
    await expect(service.delete(actorOf(editor), shared.id)).rejects.toMatchObject(forbidden);
    await expect(service.delete(actorOf(owner), shared.id)).resolves.toEqual({ id: shared.id, deleted: true });
  });
});
