import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import type { PageQuery } from '../../src/common/pagination/cursor-page.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { actorOf, useMediumContext, type UserRow } from '../support/medium.js';

/**
 * Projects and membership through ProjectsService on a real database: who sees a project and with which role,
 * who may change it and its members, the creator's owner role, two owners demoting each other at once, and the
 * list's pages. The HTTP shapes (bodies, 400s of the pipes, 401) are projects.e2e-spec.ts's.
 */
describe('ProjectsService (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const projects = () => medium().get(ProjectsService);
  const notFound = { code: ErrorCode.NotFound };
  const forbidden = { code: ErrorCode.Forbidden };
  const ids = (items: { id: string }[]) => items.map((item) => item.id);

  let owner: UserRow;
  let editor: UserRow;
  let viewer: UserRow;
  let stranger: UserRow;

  beforeAll(async () => {
    const { make } = medium();
    [owner, editor, viewer, stranger] = [await make.user(), await make.user(), await make.user(), await make.user()];
  });

  it('create: the actor owns the project, one member, no documents; the audit log has it', async () => {
    const created = await projects().create(actorOf(owner), { name: 'Apollo', description: 'Moon' });
    // The view's full shape is the route's (projects.e2e-spec.ts); here what the rule decides.
    expect(created).toMatchObject({
      name: 'Apollo',
      description: 'Moon',
      ownerId: owner.id,
      role: 'owner',
      memberCount: 1,
      documentCount: 0,
    });
    expect(await projects().get(actorOf(owner), created.id)).toEqual(created);
    const audit = await medium()
      .db.selectFrom('auditLog')
      .select(['action', 'targetId'])
      .where('targetId', '=', created.id)
      .execute();
    expect(audit).toEqual([{ action: 'project.create', targetId: created.id }]);
  });

  it('hides a project from non-members (not_found) and shows it to members with their own role', async () => {
    const { id } = await projects().create(actorOf(owner), { name: 'Hidden' });
    await expect(projects().get(actorOf(stranger), id)).rejects.toMatchObject(notFound);
    await expect(projects().get(actorOf(owner), randomUUID())).rejects.toMatchObject(notFound);
    await expect(projects().get(actorOf(owner), 'not-a-uuid')).rejects.toMatchObject(notFound);
    await projects().setMember(actorOf(owner), id, { userId: editor.id, role: 'editor' });
    const added = await projects().setMember(actorOf(owner), id, { userId: viewer.id, role: 'viewer' });
    expect(added).toEqual({
      projectId: id,
      userId: viewer.id,
      role: 'viewer',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(await projects().get(actorOf(viewer), id)).toMatchObject({ role: 'viewer', memberCount: 3 });
    expect(ids((await projects().list(actorOf(stranger), { limit: 200 })).items)).not.toContain(id);
    // A pin elsewhere hides it from its own owner too.
    await expect(projects().get(actorOf(owner, { projectIds: [randomUUID()] }), id)).rejects.toMatchObject(notFound);
  });

  it('update: owners and editors may, viewers are forbidden, strangers find nothing', async () => {
    const { id } = await projects().create(actorOf(owner), { name: 'Patch me' });
    await projects().setMember(actorOf(owner), id, { userId: editor.id, role: 'editor' });
    await projects().setMember(actorOf(owner), id, { userId: viewer.id, role: 'viewer' });
    expect(await projects().update(actorOf(editor), id, { description: 'new' })).toMatchObject({
      description: 'new',
      role: 'editor',
    });
    expect(await projects().update(actorOf(owner), id, { name: 'Gemini' })).toMatchObject({
      name: 'Gemini',
      description: 'new',
    });
    await expect(projects().update(actorOf(viewer), id, { name: 'x' })).rejects.toMatchObject(forbidden);
    await expect(projects().update(actorOf(stranger), id, { name: 'x' })).rejects.toMatchObject(notFound);
    // An editor's token capped at viewer is a viewer here.
    await expect(
      projects().update(actorOf(editor, { projectIds: [id], projectRoleCap: 'viewer' }), id, { name: 'x' }),
    ).rejects.toMatchObject(forbidden);
    expect((await projects().get(actorOf(owner), id)).name).toBe('Gemini');
  });

  it('members: only owners manage them; an unknown user is refused; the creator stays an owner', async () => {
    const { id } = await projects().create(actorOf(owner), { name: 'Members' });
    await projects().setMember(actorOf(owner), id, { userId: editor.id, role: 'editor' });
    await expect(
      projects().setMember(actorOf(editor), id, { userId: viewer.id, role: 'viewer' }),
    ).rejects.toMatchObject(forbidden);
    await expect(
      projects().setMember(actorOf(stranger), id, { userId: viewer.id, role: 'viewer' }),
    ).rejects.toMatchObject(notFound);
    await expect(
      projects().setMember(actorOf(owner), id, { userId: randomUUID(), role: 'viewer' }),
    ).rejects.toMatchObject({
      code: ErrorCode.ValidationFailed,
      details: [expect.objectContaining({ field: 'userId' })],
    });
    // Changing a role is the same call.
    expect((await projects().setMember(actorOf(owner), id, { userId: editor.id, role: 'owner' })).role).toBe('owner');
    expect((await projects().setMember(actorOf(editor), id, { userId: viewer.id, role: 'viewer' })).role).toBe(
      'viewer',
    );
    await expect(projects().setMember(actorOf(editor), id, { userId: owner.id, role: 'viewer' })).rejects.toMatchObject(
      { code: ErrorCode.StateConflict },
    );
    expect(await projects().memberRoleOf(id, owner.id)).toBe('owner');
  });

  it('two co-owners demoting each other at the same moment: one wins, the other is refused (as one after the other)', async () => {
    const { make } = medium();
    for (let round = 0; round < 5; round += 1) {
      const [b, c] = [await make.user(), await make.user()];
      const { id } = await projects().create(actorOf(owner), { name: `Coup ${round}` });
      await projects().setMember(actorOf(owner), id, { userId: b.id, role: 'owner' });
      await projects().setMember(actorOf(owner), id, { userId: c.id, role: 'owner' });
      const outcomes = await Promise.allSettled([
        projects().setMember(actorOf(b), id, { userId: c.id, role: 'viewer' }),
        projects().setMember(actorOf(c), id, { userId: b.id, role: 'viewer' }),
      ]);
      expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect(outcomes.find((outcome) => outcome.status === 'rejected')).toMatchObject({ reason: forbidden });
      expect([await projects().memberRoleOf(id, b.id), await projects().memberRoleOf(id, c.id)].sort()).toEqual([
        'owner',
        'viewer',
      ]);
    }
  });

  it("list: the actor's projects newest first, in pages joined by an opaque cursor", async () => {
    const user = await medium().make.user();
    const made: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const project = await medium().make.project(user, { name: `P${i}` });
      await medium()
        .db.updateTable('projects')
        .set({ createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)) })
        .where('id', '=', project.id)
        .execute();
      made.push(project.id);
    }
    const page = (query: PageQuery) => projects().list(actorOf(user), query);
    const first = await page({ limit: 2 });
    expect(ids(first.items)).toEqual([made[4], made[3]]);
    expect(first.items[0]).toMatchObject({ role: 'owner', memberCount: 1, documentCount: 0 });
    const second = await page({ limit: 2, cursor: first.nextCursor ?? undefined });
    expect(ids(second.items)).toEqual([made[2], made[1]]);
    const third = await page({ limit: 2, cursor: second.nextCursor ?? undefined });
    expect(ids(third.items)).toEqual([made[0]]);
    expect(third.nextCursor).toBeNull();
    await expect(page({ limit: 2, cursor: 'garbage' })).rejects.toMatchObject({ code: ErrorCode.ValidationFailed });
  });

  it('list: projects created microseconds apart (one millisecond in the cursor) page by id without skipping one', async () => {
    const user = await medium().make.user();
    const made = [
      await medium().make.project(user),
      await medium().make.project(user),
      await medium().make.project(user),
    ].map((project) => project.id);
    // Microseconds apart, as concurrent inserts on PostgreSQL get from now(): the cursor carries milliseconds.
    for (const [i, id] of made.entries()) {
      await medium()
        .db.updateTable('projects')
        .set({ createdAt: `2026-01-01T07:00:00.12345${i + 1}Z` })
        .where('id', '=', id)
        .execute();
    }
    const all = ids((await projects().list(actorOf(user), { limit: 200 })).items);
    expect([...all].sort()).toEqual([...made].sort());
    const paged: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await projects().list(actorOf(user), { limit: 1, cursor });
      paged.push(...ids(page.items));
      cursor = page.nextCursor ?? undefined;
    } while (cursor && paged.length < 10);
    expect(paged).toEqual(all);
  });
});
