import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { bearer, callTool, makeApiKey, makeUser, toolResult, type ApiKeyOptions, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** See api-keys.e2e-spec.ts: one pooled connection keeps the embedded engine correct under concurrency. */
interface Task {
  id: string;
  title: string;
  creator_id: string;
  assignee_id: string | null;
  project_id: string | null;
  status: string;
}

describe('task tools: visibility and edit rules through the gateway', () => {
  let app: TestApp;
  let db: DataSource;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  /** Alice's project with Bob as an editor: tasks are assignable to members of their project only. */
  let shared: string;
  const keys: Record<string, string> = {};

  const makeKey = async (user: TestUser, options: Partial<ApiKeyOptions> = {}) =>
    (await makeApiKey(app, user, { scopes: ['tasks:read', 'tasks:write'], ...options })).key;
  const call = (key: string, name: string, args: Record<string, unknown> = {}) => callTool(app, key, name, args);
  const result = (key: string, name: string, args: Record<string, unknown> = {}) => toolResult(app, key, name, args);

  beforeAll(async () => {
    app = await startTestApp();
    db = app.app.get(DataSource);
    alice = await makeUser(app);
    bob = await makeUser(app);
    carol = await makeUser(app);
    keys.alice = await makeKey(alice);
    keys.bob = await makeKey(bob);
    keys.carol = await makeKey(carol);
    shared = (await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Shared' }).expect(201)).body.data.id;
    await app.http.post(`/api/projects/${shared}/members`).set(bearer(alice.token)).send({ userId: bob.id, role: 'editor' }).expect(201);
  }, 180_000);
  afterAll(async () => {
    await app.close();
  });

  describe('isolation matrix (two users × every task tool)', () => {
    let alicePrivate: Task;
    let aliceToBob: Task;
    let bobPrivate: Task;

    beforeAll(async () => {
      alicePrivate = await result(keys.alice, 'create_task', { title: 'alice private zebra', description: 'only alice' });
      aliceToBob = await result(keys.alice, 'create_task', { title: 'alice gives bob zebra', assignee_id: bob.id, due_date: '2020-01-01', project_id: shared });
      bobPrivate = await result(keys.bob, 'create_task', { title: 'bob private zebra' });
    });

    it('list_tasks shows created + assigned tasks only', async () => {
      const aliceList: Task[] = await result(keys.alice, 'list_tasks');
      expect(aliceList.map((t) => t.id).sort()).toEqual([alicePrivate.id, aliceToBob.id].sort());
      const bobList: Task[] = await result(keys.bob, 'list_tasks');
      expect(bobList.map((t) => t.id).sort()).toEqual([aliceToBob.id, bobPrivate.id].sort());
      expect(await result(keys.carol, 'list_tasks')).toEqual([]);
      // Filtering by another user's assignee id never widens visibility.
      const filtered: Task[] = await result(keys.carol, 'list_tasks', { assignee_id: bob.id });
      expect(filtered).toEqual([]);
    });

    it('get_task: not_found (never forbidden) for a task the caller cannot see', async () => {
      const res = await call(keys.bob, 'get_task', { task_id: alicePrivate.id }).expect(404);
      expect(res.body.error.code).toBe('not_found');
      expect(JSON.stringify(res.body)).not.toContain('alice private');
      await call(keys.alice, 'get_task', { task_id: bobPrivate.id }).expect(404);
      await call(keys.carol, 'get_task', { task_id: aliceToBob.id }).expect(404);
      expect((await result(keys.bob, 'get_task', { task_id: aliceToBob.id })).id).toBe(aliceToBob.id);
    });

    it('search_tasks finds only visible tasks', async () => {
      const bobHits: Task[] = await result(keys.bob, 'search_tasks', { query: 'zebra' });
      expect(bobHits.map((t) => t.id).sort()).toEqual([aliceToBob.id, bobPrivate.id].sort());
      expect(await result(keys.carol, 'search_tasks', { query: 'zebra' })).toEqual([]);
      const prefix: Task[] = await result(keys.alice, 'search_tasks', { query: 'priv' });
      expect(prefix.map((t) => t.id)).toEqual([alicePrivate.id]);
    });

    it('task_stats counts only visible tasks', async () => {
      const stats = await result(keys.bob, 'task_stats');
      expect(stats).toEqual({
        total: 2,
        by_status: { todo: 2, in_progress: 0, in_review: 0, done: 0, cancelled: 0 },
        by_priority: { low: 0, medium: 2, high: 0, urgent: 0 },
        overdue: 1,
        due_next_7_days: 0,
      });
      expect((await result(keys.carol, 'task_stats')).total).toBe(0);
    });

    it('task_stats: overdue is before today, due_next_7_days is today and the 6 days after, open tasks only (UTC)', async () => {
      const dave = await makeUser(app);
      const key = await makeKey(dave);
      const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
      for (const [offset, status] of [[-1, 'todo'], [0, 'todo'], [6, 'in_progress'], [7, 'todo'], [0, 'done'], [-3, 'cancelled']] as const) {
        await result(key, 'create_task', { title: `due ${offset} ${status}`, due_date: day(offset), status });
      }
      await result(key, 'create_task', { title: 'no due date' });
      const stats = await result(key, 'task_stats');
      expect(stats).toMatchObject({ total: 7, overdue: 1, due_next_7_days: 2 });
    });

    it('update_task: creator and assignee may update; others get not_found and change nothing', async () => {
      await call(keys.carol, 'update_task', { task_id: alicePrivate.id, title: 'hacked' }).expect(404);
      await call(keys.bob, 'update_task', { task_id: alicePrivate.id, title: 'hacked' }).expect(404);
      expect((await result(keys.alice, 'get_task', { task_id: alicePrivate.id })).title).toBe('alice private zebra');
      const byAssignee = await result(keys.bob, 'update_task', { task_id: aliceToBob.id, status: 'in_progress' });
      expect(byAssignee.status).toBe('in_progress');
      const byCreator = await result(keys.alice, 'update_task', { task_id: aliceToBob.id, priority: 'urgent', due_date: null });
      expect(byCreator).toMatchObject({ status: 'in_progress', priority: 'urgent', due_date: null });
    });

    it('create_task: the caller is always the creator', async () => {
      const res = await call(keys.carol, 'create_task', { title: 'mine', creator_id: alice.id });
      expect(res.status).toBe(400);
      expect(res.body.error.details.argument).toBe('creator_id');
      const mine = await result(keys.carol, 'create_task', { title: 'mine' });
      expect(mine.creator_id).toBe(carol.id);
      await call(keys.alice, 'get_task', { task_id: mine.id }).expect(404);
    });

    it('delete_task: strangers get not_found, the assignee forbidden, the creator deletes', async () => {
      await call(keys.carol, 'delete_task', { task_id: aliceToBob.id }).expect(404);
      await call(keys.bob, 'delete_task', { task_id: alicePrivate.id }).expect(404);
      const forbidden = await call(keys.bob, 'delete_task', { task_id: aliceToBob.id }).expect(403);
      expect(forbidden.body.error.code).toBe('forbidden');
      expect(await result(keys.alice, 'delete_task', { task_id: aliceToBob.id })).toEqual({ id: aliceToBob.id, deleted: true });
      await call(keys.bob, 'get_task', { task_id: aliceToBob.id }).expect(404);
      await call(keys.alice, 'delete_task', { task_id: aliceToBob.id }).expect(404);
      const rows = await db.query(`SELECT id FROM tasks WHERE id = ANY($1::uuid[])`, [[alicePrivate.id, bobPrivate.id]]);
      expect(rows).toHaveLength(2);
    });

    it('unassigning removes the task from the former assignee', async () => {
      const task = await result(keys.alice, 'create_task', { title: 'handed over', assignee_id: bob.id, project_id: shared });
      await result(keys.bob, 'get_task', { task_id: task.id });
      await result(keys.alice, 'update_task', { task_id: task.id, assignee_id: null });
      await call(keys.bob, 'get_task', { task_id: task.id }).expect(404);
    });
  });

  describe('assignment: members of the task\'s project only, yourself for a personal task', () => {
    const refused = (res: { body: any }) => expect(res.body.error).toMatchObject({ code: 'invalid_argument', details: { argument: 'assignee_id' } });

    it('create_task and update_task (JSON door) refuse a non-member, an unknown id and another user on a personal task; nothing is written', async () => {
      refused(await call(keys.alice, 'create_task', { title: 'spam for carol', assignee_id: carol.id, project_id: shared }).expect(400));
      refused(await call(keys.alice, 'create_task', { title: 'spam for carol', assignee_id: carol.id }).expect(400));
      refused(await call(keys.alice, 'create_task', { title: 'ghost', assignee_id: '00000000-0000-4000-8000-000000000000', project_id: shared }).expect(400));
      expect((await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title IN ('spam for carol', 'ghost')`))[0].n).toBe(0);
      const task = await result(keys.alice, 'create_task', { title: 'team task', project_id: shared, assignee_id: bob.id });
      refused(await call(keys.bob, 'update_task', { task_id: task.id, assignee_id: carol.id }).expect(400));
      expect((await result(keys.bob, 'update_task', { task_id: task.id, assignee_id: alice.id })).assignee_id).toBe(alice.id);
      const personal = await result(keys.alice, 'create_task', { title: 'my own', assignee_id: alice.id });
      refused(await call(keys.alice, 'update_task', { task_id: personal.id, assignee_id: bob.id }).expect(400));
      const [row] = await db.query(`SELECT assignee_id FROM tasks WHERE id = $1`, [personal.id]);
      expect(row.assignee_id).toBe(alice.id);
    });

    it('the MCP door refuses the same way (a tool error with invalid_argument on assignee_id)', async () => {
      const res = await app.http
        .post('/api/v1/public/mcp')
        .set(bearer(keys.alice))
        .set('Accept', 'application/json, text/event-stream')
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_task', arguments: { title: 'via mcp', assignee_id: carol.id, project_id: shared } } })
        .expect(200);
      expect(res.body.result.isError).toBe(true);
      expect(JSON.stringify(res.body.result)).toContain('invalid_argument');
      expect(JSON.stringify(res.body.result)).toContain('assignee_id');
      expect((await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = 'via mcp'`))[0].n).toBe(0);
    });
  });

  describe('filters', () => {
    it('filters by status, priority and due_before and sorts newest first', async () => {
      const user = await makeUser(app);
      const key = await makeKey(user);
      await result(key, 'create_task', { title: 'a', status: 'done', priority: 'low', due_date: '2027-01-10' });
      await result(key, 'create_task', { title: 'b', status: 'todo', priority: 'high', due_date: '2027-03-01' });
      await result(key, 'create_task', { title: 'c', status: 'todo', priority: 'low' });
      expect((await result(key, 'list_tasks', { status: 'todo' })).map((t: Task) => t.title)).toEqual(['c', 'b']);
      expect((await result(key, 'list_tasks', { priority: 'low' })).map((t: Task) => t.title)).toEqual(['c', 'a']);
      expect((await result(key, 'list_tasks', { due_before: '2027-02-01' })).map((t: Task) => t.title)).toEqual(['a']);
      expect((await result(key, 'search_tasks', { query: 'b', status: 'done' }))).toEqual([]);
    });
  });

  describe('project pins and project_id', () => {
    it('a pinned key sees tasks of its projects only: a personal task (no project) is outside every pin', async () => {
      const user = await makeUser(app);
      const p1 = randomUUID();
      const p2 = randomUUID();
      const free = await result(await makeKey(user), 'create_task', { title: 'no project' });
      // No projects API is needed for this: tasks of projects are inserted directly.
      const [t1, t2] = [randomUUID(), randomUUID()];
      await db.query(`INSERT INTO tasks (id, title, creator_id, project_id) VALUES ($1, 'in p1', $3, $4), ($2, 'in p2', $3, $5)`, [t1, t2, user.id, p1, p2]);
      const pinned = await makeKey(user, { projectIds: [p1] });
      const visible: Task[] = await result(pinned, 'list_tasks');
      expect(visible.map((t) => t.id)).toEqual([t1]);
      for (const id of [t2, free.id]) {
        await call(pinned, 'get_task', { task_id: id }).expect(404);
        await call(pinned, 'update_task', { task_id: id, title: 'x' }).expect(404);
        await call(pinned, 'delete_task', { task_id: id }).expect(404);
      }
      expect((await call(pinned, 'list_tasks', { project_id: p2 }).expect(404)).body.error.code).toBe('not_found');
      await call(pinned, 'task_stats', { project_id: p2 }).expect(404);
      expect((await result(pinned, 'task_stats', { project_id: p1 })).total).toBe(1);
      expect((await result(pinned, 'task_stats')).total).toBe(1);
      expect(await result(pinned, 'search_tasks', { query: 'p2' })).toEqual([]);
      expect(await result(pinned, 'search_tasks', { query: 'project' })).toEqual([]);
      await call(pinned, 'create_task', { title: 'x', project_id: p2 }).expect(404);
      // Creating a personal task is outside the pin too: the caller must name one of its projects.
      const personal = await call(pinned, 'create_task', { title: 'x' }).expect(400);
      expect(personal.body.error).toMatchObject({ code: 'invalid_argument', details: { argument: 'project_id' } });
      expect((await db.query(`SELECT title FROM tasks WHERE id = $1`, [free.id]))[0].title).toBe('no project');
      const unpinned = await makeKey(user);
      expect((await result(unpinned, 'list_tasks')).length).toBe(3);
      expect((await result(unpinned, 'list_tasks', { project_id: p2 })).map((t: Task) => t.id)).toEqual([t2]);
    });

    it('create_task with a project the owner is not a member of is not_found', async () => {
      const res = await call(keys.alice, 'create_task', { title: 'x', project_id: randomUUID() }).expect(404);
      expect(res.body.error.code).toBe('not_found');
    });
  });
});
