import { sql } from 'kysely';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import type { TaskView } from '../../src/modules/tasks/task.model.js';
import { TasksService } from '../../src/modules/tasks/tasks.service.js';
import { actorOf, useMediumContext, type TaskRow, type UserRow } from '../support/medium.js';

/**
 * TasksService against a real database: list filters, order and the one-extra-row page, search, stats and who
 * sees which rows. Rows are inserted directly; every assertion names the rows it expects by id, so a filter
 * that leaks or drops a row fails with the ids in the diff.
 */
describe('TasksService (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const tasks = () => medium().get(TasksService);
  const ids = (rows: { id: string }[]) => rows.map((row) => row.id);
  /** The tasks a list shows (the service answers their JSON text). */
  const listed = async (...args: Parameters<TasksService['list']>): Promise<TaskView[]> =>
    JSON.parse((await tasks().list(...args)).json) as TaskView[];
  /** Newest first, as the service orders them (the factory makes each task younger than the previous one). */
  const newestFirst = (rows: TaskRow[]) =>
    [...rows].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()).map((row) => row.id);
  /** Today as the database sees it (UTC), so the test and the statement agree on the day even near midnight. */
  const utcDays = async () => {
    const { rows } = await sql<{ today: string }>`SELECT ((now() AT TIME ZONE 'UTC')::date)::text AS today`.execute(
      medium().db,
    );
    const today = Date.parse(`${rows[0].today}T00:00:00Z`);
    return (offsetDays: number) => new Date(today + offsetDays * 86_400_000).toISOString().slice(0, 10);
  };

  describe('list', () => {
    let owner: UserRow;
    let colleague: UserRow;
    let projectId: string;
    let otherProjectId: string;
    let all: TaskRow[];

    beforeAll(async () => {
      const { make } = medium();
      owner = await make.user();
      colleague = await make.user();
      projectId = (await make.project(owner, { members: [{ user: colleague, role: 'editor' }] })).id;
      otherProjectId = (await make.project(owner)).id;
      all = [
        await make.task(owner, { title: 'personal todo', status: 'todo', priority: 'low', dueDate: '2026-03-01' }),
        await make.task(owner, {
          title: 'project urgent',
          status: 'in_progress',
          priority: 'urgent',
          projectId,
          dueDate: '2026-03-02',
        }),
        await make.task(owner, {
          title: 'assigned to colleague',
          status: 'todo',
          priority: 'high',
          projectId,
          assigneeId: colleague.id,
        }),
        await make.task(owner, {
          title: 'done elsewhere',
          status: 'done',
          priority: 'medium',
          projectId: otherProjectId,
          dueDate: '2026-02-28',
        }),
        await make.task(colleague, {
          title: 'colleague assigns owner',
          status: 'in_review',
          priority: 'medium',
          projectId,
          assigneeId: owner.id,
        }),
      ];
      // Someone else's task in the same project: neither created by nor assigned to the owner.
      await make.task(colleague, { title: 'colleague only', projectId });
    });

    it('returns what the actor created or is assigned, newest first, and nothing else', async () => {
      expect(ids(await listed(actorOf(owner), { limit: 50 }))).toEqual(newestFirst(all));
    });

    it('shows limit rows and says it found one more when the list was cut, keeping the order', async () => {
      const cut = await tasks().list(actorOf(owner), { limit: 2 });
      expect(ids(JSON.parse(cut.json))).toEqual(newestFirst(all).slice(0, 2));
      expect(cut.found).toBe(3);
      expect((await tasks().list(actorOf(owner), { limit: all.length })).found).toBe(all.length);
    });

    it('filters by status, priority, assignee and project, alone and combined', async () => {
      const actor = actorOf(owner);
      const expectIds = async (filter: Parameters<TasksService['list']>[1], expected: TaskRow[]) =>
        expect(ids(await listed(actor, filter))).toEqual(newestFirst(expected));
      await expectIds({ limit: 50, status: 'todo' }, [all[0], all[2]]);
      await expectIds({ limit: 50, priority: 'medium' }, [all[3], all[4]]);
      await expectIds({ limit: 50, assigneeId: colleague.id }, [all[2]]);
      await expectIds({ limit: 50, projectId }, [all[1], all[2], all[4]]);
      await expectIds({ limit: 50, projectId, status: 'todo' }, [all[2]]);
      await expectIds({ limit: 50, projectId: otherProjectId, status: 'todo' }, []);
    });

    it('dueBefore is strictly before that calendar day; tasks without a due date never match', async () => {
      const actor = actorOf(owner);
      expect(ids(await listed(actor, { limit: 50, dueBefore: '2026-03-02' }))).toEqual(newestFirst([all[0], all[3]]));
      expect(ids(await listed(actor, { limit: 50, dueBefore: '2026-02-28' }))).toEqual([]);
      // The date comes back as written: no time zone shifts a calendar day.
      expect((await tasks().get(actor, all[1].id)).due_date).toBe('2026-03-02');
    });

    it('a pinned actor sees only tasks inside its projects (no personal ones), and a filter outside the pins is not found', async () => {
      const pinned = actorOf(owner, { projectIds: [projectId] });
      expect(ids(await listed(pinned, { limit: 50 }))).toEqual(newestFirst([all[1], all[2], all[4]]));
      await expect(listed(pinned, { limit: 50, projectId: otherProjectId })).rejects.toMatchObject({
        code: ErrorCode.NotFound,
      });
      await expect(tasks().get(pinned, all[0].id)).rejects.toMatchObject({ code: ErrorCode.NotFound });
    });

    it('the colleague sees what they created or are assigned, not the rest of the project', async () => {
      const shown = await listed(actorOf(colleague), { limit: 50, projectId });
      expect(shown.map((task) => task.title).sort()).toEqual([
        'assigned to colleague',
        'colleague assigns owner',
        'colleague only',
      ]);
    });
  });

  describe('search', () => {
    it('matches every word as a prefix of title or description, inside what the actor sees, with a status filter', async () => {
      const { make } = medium();
      const user = await make.user();
      const stranger = await make.user();
      const release = await make.task(user, { title: 'Prepare the release notes', status: 'todo' });
      const described = await make.task(user, {
        title: 'Chores',
        description: 'release checklist for the notebook',
        status: 'done',
      });
      await make.task(user, { title: 'Unrelated' });
      await make.task(stranger, { title: 'Stranger release notes' });

      const found = await tasks().search(actorOf(user), 'relea note', undefined, 10);
      expect(ids(found).sort()).toEqual([release.id, described.id].sort());
      expect(ids(await tasks().search(actorOf(user), 'relea note', 'done', 10))).toEqual([described.id]);
      expect(await tasks().search(actorOf(user), ' ,;', undefined, 10)).toEqual([]);
      expect(ids(await tasks().search(actorOf(stranger), 'release', undefined, 10))).toHaveLength(1);
    });
  });

  describe('stats', () => {
    it('counts by status and priority; overdue and due in the next 7 days (UTC) leave done and cancelled out', async () => {
      const { make } = medium();
      const user = await make.user();
      const project = await make.project(user);
      const utcDay = await utcDays();
      await make.task(user, { status: 'todo', priority: 'high', dueDate: utcDay(-1) }); // overdue
      await make.task(user, { status: 'done', priority: 'high', dueDate: utcDay(-3) }); // done: not overdue
      await make.task(user, { status: 'in_progress', priority: 'low', dueDate: utcDay(0), projectId: project.id }); // due today
      await make.task(user, { status: 'todo', priority: 'low', dueDate: utcDay(6), projectId: project.id }); // the 7th day
      await make.task(user, { status: 'todo', priority: 'urgent', dueDate: utcDay(7) }); // outside the 7 days
      await make.task(user, { status: 'cancelled', priority: 'medium', dueDate: utcDay(1) }); // cancelled: not due

      const stats = await tasks().stats(actorOf(user), undefined);
      expect(stats).toEqual({
        total: 6,
        by_status: { todo: 3, in_progress: 1, in_review: 0, done: 1, cancelled: 1 },
        by_priority: { low: 2, medium: 1, high: 2, urgent: 1 },
        overdue: 1,
        due_next_7_days: 2,
      });
      const inProject = await tasks().stats(actorOf(user), project.id);
      expect(inProject).toMatchObject({ total: 2, overdue: 0, due_next_7_days: 2 });
      await expect(tasks().stats(actorOf(user, { projectIds: [] }), project.id)).rejects.toMatchObject({
        code: ErrorCode.NotFound,
      });
    });
  });

  describe("assignment: only to members of the task's project, or to yourself for a task without one", () => {
    const refusedOnAssignee = { code: ErrorCode.InvalidArgument, details: { argument: 'assignee_id' } };
    const newTask = (fields: { projectId: string | null; assigneeId: string | null }) => ({
      title: 'assign me',
      description: '',
      status: 'todo' as const,
      priority: 'medium' as const,
      dueDate: null,
      ...fields,
    });

    it('create: a member of any role passes; a non-member, an unknown id and another user on a personal task are 400 on assignee_id', async () => {
      const { make } = medium();
      const [owner, viewer, stranger] = [await make.user(), await make.user(), await make.user()];
      const project = await make.project(owner, { members: [{ user: viewer, role: 'viewer' }] });
      const assigned = await tasks().create(actorOf(owner), newTask({ projectId: project.id, assigneeId: viewer.id }));
      expect(assigned.assignee_id).toBe(viewer.id);
      expect(
        (await tasks().create(actorOf(owner), newTask({ projectId: project.id, assigneeId: owner.id }))).assignee_id,
      ).toBe(owner.id);
      expect(
        (await tasks().create(actorOf(owner), newTask({ projectId: null, assigneeId: owner.id }))).assignee_id,
      ).toBe(owner.id);
      await expect(
        tasks().create(actorOf(owner), newTask({ projectId: project.id, assigneeId: stranger.id })),
      ).rejects.toMatchObject(refusedOnAssignee);
      await expect(
        tasks().create(
          actorOf(owner),
          newTask({ projectId: project.id, assigneeId: '00000000-0000-4000-8000-000000000000' }),
        ),
      ).rejects.toMatchObject(refusedOnAssignee);
      await expect(
        tasks().create(actorOf(owner), newTask({ projectId: null, assigneeId: stranger.id })),
      ).rejects.toMatchObject(refusedOnAssignee);
      // Nothing was written for the refused ones: the stranger sees no task.
      expect(await listed(actorOf(stranger), { limit: 50 })).toEqual([]);
    });

    it("update: the task's own project decides (creator and assignee alike); unassigning always passes", async () => {
      const { make } = medium();
      const [owner, editor, stranger] = [await make.user(), await make.user(), await make.user()];
      const project = await make.project(owner, { members: [{ user: editor, role: 'editor' }] });
      const inProject = await make.task(owner, { projectId: project.id, assigneeId: editor.id });
      await expect(tasks().update(actorOf(editor), inProject.id, { assigneeId: stranger.id })).rejects.toMatchObject(
        refusedOnAssignee,
      );
      await expect(tasks().update(actorOf(owner), inProject.id, { assigneeId: stranger.id })).rejects.toMatchObject(
        refusedOnAssignee,
      );
      expect((await tasks().update(actorOf(editor), inProject.id, { assigneeId: owner.id })).assignee_id).toBe(
        owner.id,
      );
      expect((await tasks().update(actorOf(owner), inProject.id, { assigneeId: null })).assignee_id).toBeNull();
      const personal = await make.task(owner, { projectId: null });
      await expect(tasks().update(actorOf(owner), personal.id, { assigneeId: editor.id })).rejects.toMatchObject(
        refusedOnAssignee,
      );
      expect((await tasks().update(actorOf(owner), personal.id, { assigneeId: owner.id })).assignee_id).toBe(owner.id);
      // A member who left can no longer be given the task.
      await medium()
        .db.deleteFrom('projectMembers')
        .where('projectId', '=', project.id)
        .where('userId', '=', editor.id)
        .execute();
      await expect(tasks().update(actorOf(owner), inProject.id, { assigneeId: editor.id })).rejects.toMatchObject(
        refusedOnAssignee,
      );
    });
  });
});
