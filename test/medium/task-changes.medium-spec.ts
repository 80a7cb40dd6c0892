import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import type { TaskView } from '../../src/modules/tasks/task.model.js';
import { TasksService, type CreateTaskInput } from '../../src/modules/tasks/tasks.service.js';
import { actorOf, useMediumContext, type ProjectRow, type TaskRow, type UserRow } from '../support/medium.js';

/**
 * Who may read, change and delete a task, and what a project pin leaves of them: the creator and the assignee see
 * and edit it, only the creator deletes it, anyone else finds nothing (not_found, never forbidden), and a pinned
 * actor finds nothing outside its projects. Through TasksService on a real database; the gateway's door over it is
 * tasks.e2e-spec.ts.
 */
describe('TasksService changes and pins (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const tasks = () => medium().get(TasksService);
  const listed = async (...args: Parameters<TasksService['list']>): Promise<TaskView[]> =>
    JSON.parse((await tasks().list(...args)).json) as TaskView[];
  const notFound = { code: ErrorCode.NotFound };
  const newTask = (fields: Partial<CreateTaskInput> = {}): CreateTaskInput => ({
    title: 'new task',
    description: '',
    status: 'todo',
    priority: 'medium',
    dueDate: null,
    projectId: null,
    assigneeId: null,
    ...fields,
  });

  let alice: UserRow;
  let bob: UserRow;
  let carol: UserRow;
  let shared: ProjectRow;
  let alicePrivate: TaskRow;
  let aliceToBob: TaskRow;
  let bobPrivate: TaskRow;

  beforeAll(async () => {
    const { make } = medium();
    [alice, bob, carol] = [await make.user(), await make.user(), await make.user()];
    shared = await make.project(alice, { members: [{ user: bob, role: 'editor' }] });
    alicePrivate = await make.task(alice, { title: 'alice private' });
    aliceToBob = await make.task(alice, {
      title: 'alice gives bob',
      assigneeId: bob.id,
      projectId: shared.id,
      dueDate: '2020-01-01',
    });
    bobPrivate = await make.task(bob, { title: 'bob private' });
  });

  it('get: the creator and the assignee see a task; anyone else gets not_found', async () => {
    expect((await tasks().get(actorOf(alice), alicePrivate.id)).id).toBe(alicePrivate.id);
    expect((await tasks().get(actorOf(bob), aliceToBob.id)).id).toBe(aliceToBob.id);
    await expect(tasks().get(actorOf(bob), alicePrivate.id)).rejects.toMatchObject(notFound);
    await expect(tasks().get(actorOf(alice), bobPrivate.id)).rejects.toMatchObject(notFound);
    await expect(tasks().get(actorOf(carol), aliceToBob.id)).rejects.toMatchObject(notFound);
    await expect(tasks().get(actorOf(alice), randomUUID())).rejects.toMatchObject(notFound);
  });

  it('a filter by another user never widens what a list shows', async () => {
    expect(await listed(actorOf(carol), { limit: 50, assigneeId: bob.id })).toEqual([]);
    expect(await listed(actorOf(carol), { limit: 50 })).toEqual([]);
  });

  it('update: creator and assignee may; others get not_found and change nothing', async () => {
    const task = await medium().make.task(alice, {
      title: 'to update',
      assigneeId: bob.id,
      projectId: shared.id,
      dueDate: '2026-05-01',
    });
    await expect(tasks().update(actorOf(carol), task.id, { title: 'hacked' })).rejects.toMatchObject(notFound);
    await expect(tasks().update(actorOf(bob), alicePrivate.id, { title: 'hacked' })).rejects.toMatchObject(notFound);
    expect((await tasks().get(actorOf(alice), alicePrivate.id)).title).toBe('alice private');
    expect((await tasks().get(actorOf(alice), task.id)).title).toBe('to update');
    expect(await tasks().update(actorOf(bob), task.id, { status: 'in_progress' })).toMatchObject({
      status: 'in_progress',
    });
    expect(await tasks().update(actorOf(alice), task.id, { priority: 'urgent', dueDate: null })).toMatchObject({
      status: 'in_progress',
      priority: 'urgent',
      due_date: null,
    });
  });

  it('create: the actor is the creator; a project the actor is not a member of is not_found', async () => {
    const mine = await tasks().create(actorOf(carol), newTask({ title: 'mine' }));
    expect(mine.creator_id).toBe(carol.id);
    await expect(tasks().get(actorOf(alice), mine.id)).rejects.toMatchObject(notFound);
    await expect(tasks().create(actorOf(alice), newTask({ projectId: randomUUID() }))).rejects.toMatchObject(notFound);
    await expect(tasks().create(actorOf(carol), newTask({ projectId: shared.id }))).rejects.toMatchObject(notFound);
    expect(await listed(actorOf(carol), { limit: 50 })).toEqual([expect.objectContaining({ id: mine.id })]);
  });

  it('delete: strangers get not_found, the assignee forbidden, the creator deletes (once); other rows stay', async () => {
    const task = await medium().make.task(alice, { title: 'to delete', assigneeId: bob.id, projectId: shared.id });
    await expect(tasks().delete(actorOf(carol), task.id)).rejects.toMatchObject(notFound);
    await expect(tasks().delete(actorOf(bob), alicePrivate.id)).rejects.toMatchObject(notFound);
    await expect(tasks().delete(actorOf(bob), task.id)).rejects.toMatchObject({ code: ErrorCode.Forbidden });
    expect(await tasks().delete(actorOf(alice), task.id)).toEqual({ id: task.id, deleted: true });
    await expect(tasks().get(actorOf(bob), task.id)).rejects.toMatchObject(notFound);
    await expect(tasks().delete(actorOf(alice), task.id)).rejects.toMatchObject(notFound);
    const left = await medium()
      .db.selectFrom('tasks')
      .select('id')
      .where('id', 'in', [alicePrivate.id, bobPrivate.id])
      .execute();
    expect(left).toHaveLength(2);
  });

  it('unassigning removes the task from the former assignee', async () => {
    const task = await medium().make.task(alice, { title: 'handed over', assigneeId: bob.id, projectId: shared.id });
    await tasks().get(actorOf(bob), task.id);
    await tasks().update(actorOf(alice), task.id, { assigneeId: null });
    await expect(tasks().get(actorOf(bob), task.id)).rejects.toMatchObject(notFound);
  });

  it('a pinned actor finds nothing outside its projects: not another project, not a personal task, in any operation', async () => {
    const { make } = medium();
    const user = await make.user();
    const [p1, p2] = [await make.project(user), await make.project(user)];
    const free = await make.task(user, { title: 'no project' });
    const t1 = await make.task(user, { title: 'in one', projectId: p1.id });
    const t2 = await make.task(user, { title: 'in two', projectId: p2.id });
    const pinned = actorOf(user, { projectIds: [p1.id] });
    expect((await listed(pinned, { limit: 50 })).map((t) => t.id)).toEqual([t1.id]);
    for (const id of [t2.id, free.id]) {
      await expect(tasks().get(pinned, id)).rejects.toMatchObject(notFound);
      await expect(tasks().update(pinned, id, { title: 'x' })).rejects.toMatchObject(notFound);
      await expect(tasks().delete(pinned, id)).rejects.toMatchObject(notFound);
    }
    await expect(tasks().list(pinned, { limit: 50, projectId: p2.id })).rejects.toMatchObject(notFound);
    await expect(tasks().stats(pinned, p2.id)).rejects.toMatchObject(notFound);
    expect((await tasks().stats(pinned, p1.id)).total).toBe(1);
    expect((await tasks().stats(pinned, undefined)).total).toBe(1);
    expect(await tasks().search(pinned, 'two', undefined, 20)).toEqual([]);
    expect(await tasks().search(pinned, 'project', undefined, 20)).toEqual([]);
    await expect(tasks().create(pinned, newTask({ projectId: p2.id }))).rejects.toMatchObject(notFound);
    // A personal task is outside every pin: the pinned actor must name one of its projects.
    await expect(tasks().create(pinned, newTask())).rejects.toMatchObject({
      code: ErrorCode.InvalidArgument,
      details: { argument: 'project_id' },
    });
    expect((await tasks().get(actorOf(user), free.id)).title).toBe('no project');
    const unpinned = actorOf(user);
    expect(await listed(unpinned, { limit: 50 })).toHaveLength(3);
    expect((await listed(unpinned, { limit: 50, projectId: p2.id })).map((t) => t.id)).toEqual([t2.id]);
  });
});
