import { DatabasePool } from '../src/database/database-pool.js';
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
interface Task {
  id: string;
  title: string;
  creator_id: string;
  assignee_id: string | null;
  project_id: string | null;
  status: string;
}

/**
 * The task tools through the gateway's doors: what a caller sees of a refusal. The rules behind them (who sees,
 * changes and deletes a task, filters, stats, pins) are TasksService's, tested in test/medium/tasks*.medium-spec.ts.
 */
describe('task tools through the gateway', () => {
  let app: TestApp;
  let db: DatabasePool;
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
    db = app.app.get(DatabasePool);
    alice = await makeUser(app);
    bob = await makeUser(app);
    carol = await makeUser(app);
    keys.alice = await makeKey(alice);
    keys.bob = await makeKey(bob);
    keys.carol = await makeKey(carol);
    shared = (await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Shared' }).expect(201)).body
      .data.id;
    await app.http
      .post(`/api/projects/${shared}/members`)
      .set(bearer(alice.token))
      .send({ userId: bob.id, role: 'editor' })
      .expect(201);
  }, 180_000);
  afterAll(async () => {
    await app.close();
  });

  describe('what a caller cannot see or claim', () => {
    let alicePrivate: Task;
    let aliceToBob: Task;
    let bobPrivate: Task;

    beforeAll(async () => {
      alicePrivate = await result(keys.alice, 'create_task', {
        title: 'alice private zebra',
        description: 'only alice',
      });
      aliceToBob = await result(keys.alice, 'create_task', {
        title: 'alice gives bob zebra',
        assignee_id: bob.id,
        due_date: '2020-01-01',
        project_id: shared,
      });
      bobPrivate = await result(keys.bob, 'create_task', { title: 'bob private zebra' });
    });

    it('get_task: not_found (never forbidden) for a task the caller cannot see', async () => {
      const res = await call(keys.bob, 'get_task', { task_id: alicePrivate.id }).expect(404);
      expect(res.body.error.code).toBe('not_found');
      expect(JSON.stringify(res.body)).not.toContain('alice private');
      await call(keys.alice, 'get_task', { task_id: bobPrivate.id }).expect(404);
      await call(keys.carol, 'get_task', { task_id: aliceToBob.id }).expect(404);
      expect((await result(keys.bob, 'get_task', { task_id: aliceToBob.id })).id).toBe(aliceToBob.id);
    });

    it('create_task: the caller is always the creator', async () => {
      const res = await call(keys.carol, 'create_task', { title: 'mine', creator_id: alice.id });
      expect(res.status).toBe(400);
      expect(res.body.error.details.argument).toBe('creator_id');
      const mine = await result(keys.carol, 'create_task', { title: 'mine' });
      expect(mine.creator_id).toBe(carol.id);
      await call(keys.alice, 'get_task', { task_id: mine.id }).expect(404);
    });
  });

  // The assignment rule itself: test/medium/tasks.medium-spec.ts. Here: how each door answers a refusal.
  describe('assignment refused: how each door says it', () => {
    it('the JSON door: 400 invalid_argument on assignee_id, nothing written', async () => {
      const res = await call(keys.alice, 'create_task', {
        title: 'via json',
        assignee_id: carol.id,
        project_id: shared,
      }).expect(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_argument', details: { argument: 'assignee_id' } });
      expect((await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = 'via json'`))[0].n).toBe(0);
    });

    it('the MCP door: a tool error with invalid_argument on assignee_id, nothing written', async () => {
      const res = await app.http
        .post('/api/v1/public/mcp')
        .set(bearer(keys.alice))
        .set('Accept', 'application/json, text/event-stream')
        .send({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'create_task', arguments: { title: 'via mcp', assignee_id: carol.id, project_id: shared } },
        })
        .expect(200);
      expect(res.body.result.isError).toBe(true);
      expect(JSON.stringify(res.body.result)).toContain('invalid_argument');
      expect(JSON.stringify(res.body.result)).toContain('assignee_id');
      expect((await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = 'via mcp'`))[0].n).toBe(0);
    });
  });
});
