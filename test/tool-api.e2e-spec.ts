import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomUUID } from 'node:crypto';
import { DatabasePool } from '../src/database/database-pool.js';
import { IdempotencyService } from '../src/common/idempotency/idempotency.service.js';
import { bearer, callTool, makeApiKey, makeUser, type ApiKeyOptions, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { WidgetsToolModule } from './fixtures/widgets-tool.module.js';

/** See api-keys.e2e-spec.ts: one pooled connection keeps the embedded engine correct under concurrency. */
describe('Area A gateway (/api/v1/public/mcp): descriptors, errors, idempotency, truncation', () => {
  let app: TestApp;
  let db: DatabasePool;
  let alice: TestUser;
  let bob: TestUser;
  let rw: string;
  let ro: string;
  let bobKey: string;

  const makeKey = (user: TestUser, scopes: string[], options: Omit<ApiKeyOptions, 'scopes'> = {}) =>
    makeApiKey(app, user, { scopes, ...options });
  const call = (key: string, name: string, args?: unknown, headers: Record<string, string> = {}) =>
    callTool(app, key, name, args, headers);
  const mcpClient = async (key: string) => {
    const client = new Client({ name: 'atrium-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.baseUrl}/api/v1/public/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    return client;
  };

  beforeAll(async () => {
    // The throw-away provider (a new module under a new scope) rides along: see 'a provider added in its own module'.
    app = await startTestApp({ extraModules: [WidgetsToolModule] });
    db = app.app.get(DatabasePool);
    alice = await makeUser(app);
    bob = await makeUser(app);
    rw = (await makeKey(alice, ['tasks:read', 'tasks:write'])).key;
    ro = (await makeKey(alice, ['tasks:read'])).key;
    bobKey = (await makeKey(bob, ['tasks:read', 'tasks:write'])).key;
  }, 180_000);
  afterAll(async () => {
    await app.close();
  });

  describe('tool listing', () => {
    it('lists only the tools a read-only key may call, in catalog order, with seed-style descriptors', async () => {
      const res = await app.http.get('/api/v1/public/mcp/tools').set(bearer(ro)).expect(200);
      expect(res.body.scopes).toEqual(['tasks:read']);
      expect(res.body.tool_count).toBe(4);
      expect(res.body.tools.map((t: { name: string }) => t.name)).toEqual([
        'list_tasks',
        'get_task',
        'search_tasks',
        'task_stats',
      ]);
      expect(res.body.traceId).toBeUndefined();
      const listTasks = res.body.tools[0];
      expect(listTasks).toEqual({
        name: 'list_tasks',
        description: expect.any(String),
        scope: 'tasks:read',
        parameters: {
          status: {
            type: 'str',
            default: '',
            required: false,
            description: expect.any(String),
            enum: ['todo', 'in_progress', 'in_review', 'done', 'cancelled'],
          },
          assignee_id: { type: 'str', default: '', required: false, description: expect.any(String) },
          project_id: { type: 'str', default: '', required: false, description: expect.any(String) },
          priority: {
            type: 'str',
            default: '',
            required: false,
            description: expect.any(String),
            enum: ['low', 'medium', 'high', 'urgent'],
          },
          due_before: { type: 'date', default: '', required: false, description: expect.any(String) },
          limit: {
            type: 'int',
            default: 50,
            required: false,
            description: expect.any(String),
            minimum: 1,
            maximum: 200,
          },
        },
      });
      expect(res.body.tools[1].parameters.task_id).toEqual({
        type: 'str',
        default: null,
        required: true,
        description: expect.any(String),
      });
    });

    it('lists all seven task tools for a read+write key', async () => {
      const res = await app.http.get('/api/v1/public/mcp/tools').set(bearer(rw)).expect(200);
      expect(res.body.tool_count).toBe(7);
      expect(res.body.tools.map((t: { name: string }) => t.name)).toEqual([
        'list_tasks',
        'get_task',
        'search_tasks',
        'task_stats',
        'create_task',
        'update_task',
        'delete_task',
      ]);
      const create = res.body.tools[4];
      expect(create.scope).toBe('tasks:write');
      expect(create.parameters.title).toMatchObject({ type: 'str', required: true });
      expect(create.parameters.priority).toMatchObject({
        default: 'medium',
        enum: ['low', 'medium', 'high', 'urgent'],
      });
      expect(create.parameters.due_date).toMatchObject({ type: 'date', default: null });
    });
  });

  describe('a provider added in its own module, under a new scope, with no edit anywhere else', () => {
    it('is in the scope catalog, can be put on a key, and is listed and called on both doors; other keys get 403 insufficient_scope', async () => {
      const catalog = await app.http.get('/api/api-keys/scopes').set(bearer(alice.token)).expect(200);
      expect(catalog.body.data.items.map((s: { name: string }) => s.name)).toEqual([
        'tasks:read',
        'tasks:write',
        'docs:read',
        'docs:write',
        'github:read',
        'github:write',
        'widgets:read',
      ]);
      expect(catalog.body.data.items.at(-1)).toEqual({
        name: 'widgets:read',
        group: 'Widgets',
        allows: 'Count widgets',
        access: 'read',
        exampleTool: null,
      }); // its one tool needs a colour
      const widgets = (await makeKey(alice, ['widgets:read', 'tasks:read'])).key;

      // JSON door: listed after the catalog's own tools, with the seed-style descriptor; called with typed, validated args.
      const listed = await app.http.get('/api/v1/public/mcp/tools').set(bearer(widgets)).expect(200);
      expect(listed.body.tools.map((t: { name: string }) => t.name)).toEqual([
        'list_tasks',
        'get_task',
        'search_tasks',
        'task_stats',
        'count_widgets',
      ]);
      expect(listed.body.tools.at(-1)).toEqual({
        name: 'count_widgets',
        description: 'Counts the widgets of one colour in some boxes.',
        scope: 'widgets:read',
        parameters: {
          color: { type: 'str', default: null, required: true, description: 'Widget colour', enum: ['red', 'blue'] },
          times: { type: 'int', default: 1, required: false, description: 'How many boxes', minimum: 1, maximum: 10 },
        },
      });
      expect((await call(widgets, 'count_widgets', { color: 'blue', times: '2' }).expect(200)).body).toEqual({
        result: { color: 'blue', count: 10, owner: alice.id },
      });
      expect((await call(widgets, 'count_widgets', { color: 'green' }).expect(400)).body.error).toMatchObject({
        code: 'invalid_argument',
        details: { argument: 'color' },
      });
      expect((await call(rw, 'count_widgets', { color: 'red' }).expect(403)).body.error).toMatchObject({
        code: 'insufficient_scope',
        details: { required_scope: 'widgets:read' },
      });
      // Its provider's toolset is one a request can narrow to, on both doors, with no change anywhere else.
      const narrowed = await app.http
        .get('/api/v1/public/mcp/tools')
        .set(bearer(widgets))
        .set('X-MCP-Toolsets', 'widgets')
        .expect(200);
      expect(narrowed.body.tools.map((t: { name: string }) => t.name)).toEqual(['count_widgets']);
      const viaUrl = await app.http
        .post('/api/v1/public/mcp/x/widgets/readonly')
        .set(bearer(widgets))
        .set('Accept', 'application/json, text/event-stream')
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
        .expect(200);
      expect(viaUrl.body.result.tools.map((t: { name: string }) => t.name)).toEqual(['count_widgets']);

      // MCP door: the same tool with its JSON Schema, its provider's instructions, the same results and refusals.
      const client = await mcpClient(widgets);
      const other = await mcpClient(rw);
      try {
        const tools = (await client.listTools()).tools;
        expect(tools.map((t) => t.name)).toEqual([
          'list_tasks',
          'get_task',
          'search_tasks',
          'task_stats',
          'count_widgets',
        ]);
        expect(tools.at(-1)).toMatchObject({
          name: 'count_widgets',
          inputSchema: {
            type: 'object',
            properties: {
              color: { type: 'string', enum: ['red', 'blue'] },
              times: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
            },
            required: ['color'],
            additionalProperties: false,
          },
          annotations: { readOnlyHint: true },
          _meta: { 'atrium/scope': 'widgets:read' },
        });
        expect(client.getInstructions()).toContain('Widget tools count widgets (a test fixture).');
        expect(other.getInstructions()).not.toContain('Widget');
        const result = await client.callTool({ name: 'count_widgets', arguments: { color: 'red' } });
        expect(result.structuredContent).toEqual({ color: 'red', count: 3, owner: alice.id });
        expect((await other.listTools()).tools.map((t) => t.name)).not.toContain('count_widgets');
        const refused = await other.callTool({ name: 'count_widgets', arguments: { color: 'red' } });
        expect(refused.isError).toBe(true);
        expect(refused.structuredContent).toMatchObject({
          error: { code: 'insufficient_scope', details: { required_scope: 'widgets:read' } },
        });
      } finally {
        await client.close();
        await other.close();
      }
    });
  });

  describe('every row of the Area A error table', () => {
    const expectError = (
      res: { status: number; body: any; headers: Record<string, string> },
      status: number,
      code: string,
    ) => {
      expect(res.status).toBe(status);
      expect(res.body).toEqual({
        error: { code, message: expect.any(String), details: expect.any(Object) },
        traceId: res.headers['x-request-id'],
      });
      expect(JSON.stringify(res.body)).not.toMatch(/SELECT|stack|\.ts:/);
    };

    it('400 invalid_argument: unknown name, wrong type, out of range, bad date, enum', async () => {
      const unknown = await call(rw, 'list_tasks', { colour: 'red' });
      expectError(unknown, 400, 'invalid_argument');
      expect(unknown.body.error.details.argument).toBe('colour');
      expectError(await call(rw, 'list_tasks', { limit: 'ten' }), 400, 'invalid_argument');
      expectError(await call(rw, 'list_tasks', { limit: 2.5 }), 400, 'invalid_argument');
      expectError(await call(rw, 'list_tasks', { limit: true }), 400, 'invalid_argument');
      expectError(await call(rw, 'list_tasks', { limit: 0 }), 400, 'invalid_argument');
      expectError(await call(rw, 'list_tasks', { limit: '201' }), 400, 'invalid_argument');
      const date = await call(rw, 'list_tasks', { due_before: '2026-02-30' });
      expectError(date, 400, 'invalid_argument');
      expect(date.body.error.details.argument).toBe('due_before');
      expectError(await call(rw, 'create_task', { title: 'x', due_date: '2026-13-01' }), 400, 'invalid_argument');
      const enumRes = await call(rw, 'list_tasks', { status: 'finished' });
      expectError(enumRes, 400, 'invalid_argument');
      expect(enumRes.body.error.details).toEqual({
        argument: 'status',
        allowed: ['', 'todo', 'in_progress', 'in_review', 'done', 'cancelled'],
      });
      expectError(await call(rw, 'get_task', { task_id: 'not-a-uuid' }), 400, 'invalid_argument');
      expectError(await call(rw, 'create_task', { title: 'x'.repeat(201) }), 400, 'invalid_argument');
      expectError(await call(rw, 'create_task', { title: 'x', assignee_id: randomUUID() }), 400, 'invalid_argument');
    });

    it('400 missing_argument names the argument', async () => {
      const res = await call(rw, 'get_task', {});
      expectError(res, 400, 'missing_argument');
      expect(res.body.error.details).toEqual({ argument: 'task_id' });
      expectError(await call(rw, 'search_tasks'), 400, 'missing_argument');
    });

    it('400 invalid_request: not JSON, name missing or malformed, arguments not an object', async () => {
      const notJson = await app.http
        .post('/api/v1/public/mcp/call')
        .set(bearer(rw))
        .set('Content-Type', 'application/json')
        .send('{"name":');
      expectError(notJson, 400, 'invalid_request');
      expectError(
        await app.http.post('/api/v1/public/mcp/call').set(bearer(rw)).send({ arguments: {} }),
        400,
        'invalid_request',
      );
      expectError(
        await app.http.post('/api/v1/public/mcp/call').set(bearer(rw)).send({ name: 42 }),
        400,
        'invalid_request',
      );
      expectError(await call(rw, 'list_tasks', [1, 2]), 400, 'invalid_request');
      expectError(await call(rw, 'list_tasks', 'limit=2'), 400, 'invalid_request');
      expectError(
        await app.http
          .post('/api/v1/public/mcp/call')
          .set(bearer(rw))
          .send([{ name: 'list_tasks' }]),
        400,
        'invalid_request',
      );
      expectError(
        await app.http
          .post('/api/v1/public/mcp/call')
          .set(bearer(rw))
          .set('Content-Type', 'text/plain')
          .send('list_tasks'),
        400,
        'invalid_request',
      );
    });

    it('401 missing_api_key / invalid_api_key (bad checksum, unknown key, wrong scheme), all with WWW-Authenticate', async () => {
      const missing = await app.http.post('/api/v1/public/mcp/call').send({ name: 'list_tasks' });
      expectError(missing, 401, 'missing_api_key');
      expect(missing.headers['www-authenticate']).toMatch(
        /^Bearer resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
      );
      const typo = rw.slice(0, 10) + (rw[10] === 'a' ? 'b' : 'a') + rw.slice(11);
      const badChecksum = await call(typo, 'list_tasks');
      expectError(badChecksum, 401, 'invalid_api_key');
      expect(badChecksum.headers['www-authenticate']).toMatch(
        /^Bearer error="invalid_token", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
      );
      // Well-formed (valid checksum) but never issued.
      const { generateApiKey } = await import('../src/modules/api-keys/api-key-format.js');
      expectError(await call(generateApiKey().key, 'list_tasks'), 401, 'invalid_api_key');
      expectError(
        await app.http
          .get('/api/v1/public/mcp/tools')
          .set('Authorization', `Basic ${Buffer.from('a:b').toString('base64')}`),
        401,
        'missing_api_key',
      );
      expectError(await app.http.get('/api/v1/public/mcp/tools').set(bearer(alice.token)), 401, 'invalid_api_key');
    });

    it('401 expired_api_key and revoked_api_key', async () => {
      const expiring = await makeKey(alice, ['tasks:read'], { expiresIn: '90d' });
      await db.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [expiring.id]);
      const expired = await call(expiring.key, 'list_tasks');
      expectError(expired, 401, 'expired_api_key');
      expect(expired.headers['www-authenticate']).toMatch(
        /^Bearer error="invalid_token", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
      );
      const doomed = await makeKey(alice, ['tasks:read']);
      await app.http.delete(`/api/api-keys/${doomed.id}`).set(bearer(alice.token)).expect(200);
      const revoked = await call(doomed.key, 'list_tasks');
      expectError(revoked, 401, 'revoked_api_key');
      expect(revoked.headers['www-authenticate']).toMatch(
        /^Bearer error="invalid_token", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
      );
    });

    it('403 insufficient_scope names the required scope', async () => {
      const res = await call(ro, 'create_task', { title: 'nope' });
      expectError(res, 403, 'insufficient_scope');
      expect(res.body.error.details).toEqual({ required_scope: 'tasks:write' });
      const count = await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = 'nope'`);
      expect(count[0].n).toBe(0);
    });

    it('403 forbidden: an assignee may not delete a task they did not create', async () => {
      const projectId = (
        await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'With Bob' }).expect(201)
      ).body.data.id;
      await app.http
        .post(`/api/projects/${projectId}/members`)
        .set(bearer(alice.token))
        .send({ userId: bob.id, role: 'editor' })
        .expect(201);
      const task = (
        await call(rw, 'create_task', { title: 'assigned to bob', assignee_id: bob.id, project_id: projectId }).expect(
          200,
        )
      ).body.result;
      expectError(await call(bobKey, 'delete_task', { task_id: task.id }), 403, 'forbidden');
      await call(rw, 'get_task', { task_id: task.id }).expect(200);
    });

    it('404 unknown_tool and 404 not_found', async () => {
      expectError(await call(rw, 'drop_database'), 404, 'unknown_tool');
      expectError(await call(rw, 'get_task', { task_id: randomUUID() }), 404, 'not_found');
    });

    it('an unknown route under the prefix is an Area A 404', async () => {
      const res = await app.http.get('/api/v1/public/mcp/nothing-here').set(bearer(rw));
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    });
  });

  describe('success shape and argument handling', () => {
    it('answers bare {result}, accepts ints as decimal strings and omitted arguments', async () => {
      const created = await call(rw, 'create_task', {
        title: 'Bare body',
        due_date: '2028-02-29',
        priority: 'high',
      }).expect(200);
      expect(Object.keys(created.body)).toEqual(['result']);
      expect(created.body.result).toEqual({
        id: expect.any(String),
        title: 'Bare body',
        description: '',
        status: 'todo',
        priority: 'high',
        due_date: '2028-02-29',
        assignee_id: null,
        creator_id: alice.id,
        project_id: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      const listed = await call(rw, 'list_tasks', { limit: '1' }).expect(200);
      expect(listed.body.result).toHaveLength(1);
      await call(rw, 'task_stats').expect(200);
    });

    it('sets X-Truncated: true only when a list stopped at its limit', async () => {
      const user = await makeUser(app);
      const key = (await makeKey(user, ['tasks:read', 'tasks:write'])).key;
      for (const title of ['one', 'two', 'three']) await call(key, 'create_task', { title }).expect(200);
      const cut = await call(key, 'list_tasks', { limit: 2 }).expect(200);
      expect(cut.headers['x-truncated']).toBe('true');
      expect(cut.body.result.map((t: { title: string }) => t.title)).toEqual(['three', 'two']);
      const whole = await call(key, 'list_tasks', { limit: 3 }).expect(200);
      expect(whole.headers['x-truncated']).toBeUndefined();
      expect(whole.body.result).toHaveLength(3);
    });

    it('answers list_tasks as the database wrote it: byte for byte what JSON.stringify writes of the tasks get_task and the MCP door show, in order to the microsecond', async () => {
      const user = await makeUser(app);
      const key = (await makeKey(user, ['tasks:read', 'tasks:write'])).key;
      // Text JSON must escape (quotes, backslashes, control characters) and text it must not (non-ASCII, a surrogate pair, U+2028).
      const created: { id: string }[] = [];
      for (const [title, description, due_date] of [
        ['quote " backslash \\ slash /', 'line\nbreak\ttab\r\u0001\u001f\u007f', '2028-02-29'],
        ['é ü ß 日本 😀', 'separator\u2028paragraph\u2029end', ''],
        ['same millisecond, later', '', '0999-01-01'],
        ['same millisecond, earlier', '', ''],
      ]) {
        created.push(
          (await call(key, 'create_task', { title, description, ...(due_date && { due_date }) }).expect(200)).body
            .result,
        );
      }
      // Two tasks in the same millisecond, the one with the smaller id a microsecond later: the list's order is
      // (created_at, id) as stored, which the millisecond text alone would get wrong.
      const [low, high] = [created[2].id, created[3].id].sort();
      await db.query(`UPDATE tasks SET created_at = '2030-01-01 00:00:00.123457+00' WHERE id = $1`, [low]);
      await db.query(`UPDATE tasks SET created_at = '2030-01-01 00:00:00.123456+00' WHERE id = $1`, [high]);
      const order = [low, high, created[1].id, created[0].id];

      const listed = await call(key, 'list_tasks', { limit: 3 }).expect(200);
      expect(listed.headers['x-truncated']).toBe('true');
      const tasks = [];
      for (const id of order) tasks.push((await call(key, 'get_task', { task_id: id }).expect(200)).body.result);
      expect(tasks.slice(0, 2).map((t) => t.created_at)).toEqual([
        '2030-01-01T00:00:00.123Z',
        '2030-01-01T00:00:00.123Z',
      ]);
      expect(listed.text).toBe(JSON.stringify({ result: tasks.slice(0, 3) }));
      const whole = await call(key, 'list_tasks', { limit: 4 }).expect(200);
      expect(whole.headers['x-truncated']).toBeUndefined();
      expect(whole.text).toBe(JSON.stringify({ result: tasks }));
      expect((await call(key, 'list_tasks', { status: 'done' }).expect(200)).text).toBe('{"result":[]}');

      const client = await mcpClient(key);
      try {
        const result = await client.callTool({ name: 'list_tasks', arguments: { limit: 3 } });
        expect(result.structuredContent).toEqual({ items: tasks.slice(0, 3), truncated: true });
      } finally {
        await client.close();
      }
    });
  });

  describe('Idempotency-Key on write tools', () => {
    it('replays the first result for the same key and arguments, and conflicts for other arguments', async () => {
      const user = await makeUser(app);
      const key = (await makeKey(user, ['tasks:read', 'tasks:write'])).key;
      const headers = { 'Idempotency-Key': 'create-once-1' };
      const first = await call(key, 'create_task', { title: 'Exactly once', priority: 'low' }, headers).expect(200);
      const again = await call(key, 'create_task', { priority: 'low', title: 'Exactly once' }, headers).expect(200);
      expect(again.body).toEqual(first.body);
      const list = await call(key, 'list_tasks').expect(200);
      expect(list.body.result).toHaveLength(1);
      const conflict = await call(key, 'create_task', { title: 'Something else' }, headers).expect(409);
      expect(conflict.body.error.code).toBe('idempotency_conflict');
      // Another owner's identical key is a separate key space.
      const other = await call(bobKey, 'create_task', { title: 'Exactly once', priority: 'low' }, headers).expect(200);
      expect(other.body.result.id).not.toBe(first.body.result.id);
    });

    it('keeps each API key its own key space: a pinned key never replays what another key of the same user made', async () => {
      const user = await makeUser(app);
      const projectId = (
        await app.http.post('/api/projects').set(bearer(user.token)).send({ name: 'Pinned' }).expect(201)
      ).body.data.id;
      const open = (await makeKey(user, ['tasks:read', 'tasks:write'])).key;
      const pinned = (await makeKey(user, ['tasks:read', 'tasks:write'], { projectIds: [projectId] })).key;
      const headers = { 'Idempotency-Key': 'same-key-two-api-keys' };
      // The same arguments through both keys (a pinned key must name one of its projects).
      const args = { title: 'Made by the open key', project_id: projectId };
      const first = await call(open, 'create_task', args, headers).expect(200);
      const second = await call(pinned, 'create_task', args, headers).expect(200);
      expect(second.headers['idempotent-replayed']).toBeUndefined();
      expect(second.body.result.id).not.toBe(first.body.result.id);
      // And the first key still replays its own.
      const replay = await call(open, 'create_task', args, headers).expect(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.result.id).toBe(first.body.result.id);
    });

    it('lets concurrent repeats create one task', async () => {
      const user = await makeUser(app);
      const key = (await makeKey(user, ['tasks:read', 'tasks:write'])).key;
      const headers = { 'Idempotency-Key': 'concurrent-1' };
      const results = await Promise.all(
        Array.from({ length: 5 }, () => call(key, 'create_task', { title: 'Once' }, headers)),
      );
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(new Set(results.map((r) => r.body.result.id)).size).toBe(1);
      expect((await call(key, 'list_tasks').expect(200)).body.result).toHaveLength(1);
    });

    it('keeps a result 24 h; a claim left by a process that died is taken over once its lease lapses', async () => {
      const user = await makeUser(app);
      const { id: keyId, key } = await makeKey(user, ['tasks:read', 'tasks:write']);
      await call(key, 'create_task', { title: 'Kept a day' }, { 'Idempotency-Key': 'kept-a-day' }).expect(200);
      const [kept] = await db.query(
        `SELECT state, extract(epoch FROM expires_at - now()) / 3600 AS hours FROM idempotency_records WHERE owner_id = $1 AND key = 'kept-a-day'`,
        [user.id],
      );
      expect(kept.state).toBe('completed');
      expect(Number(kept.hours)).toBeGreaterThan(23.9);

      // While a request runs, its claim is short (a lease), so a process that dies leaves it for minutes, not a day.
      let leaseMinutes = Number.NaN;
      await app.app
        .get(IdempotencyService)
        .run({ ownerId: user.id, scope: 'test:lease', key: 'running', request: { n: 1 } }, async () => {
          const [claim] = await db.query(
            `SELECT state, extract(epoch FROM expires_at - now()) / 60 AS minutes FROM idempotency_records WHERE owner_id = $1 AND scope = 'test:lease'`,
            [user.id],
          );
          expect(claim.state).toBe('pending');
          leaseMinutes = Number(claim.minutes);
        });
      expect(leaseMinutes).toBeGreaterThan(1);
      expect(leaseMinutes).toBeLessThanOrEqual(10);

      // What a process killed mid-request leaves behind: a claim still pending, with the request's own hash.
      // (Made here from a finished call's record, as if its process had died before storing the answer.)
      await call(key, 'create_task', { title: 'Orphaned' }, { 'Idempotency-Key': 'orphaned' }).expect(200);
      const orphan = (expiresSql: string) =>
        db.query(
          `UPDATE idempotency_records SET state = 'pending', response = NULL, expires_at = ${expiresSql} WHERE owner_id = $1 AND scope = $2 AND key = 'orphaned'`,
          [user.id, `tool-api:call:${keyId}`],
        );
      // Within the claim's lease a retry is told the request is still in progress…
      await orphan(`now() + interval '5 minutes'`);
      const waiting = await call(key, 'create_task', { title: 'Orphaned' }, { 'Idempotency-Key': 'orphaned' }).expect(
        409,
      );
      expect(waiting.body.error).toMatchObject({ code: 'idempotency_conflict', details: { in_progress: true } });
      // …and once the lease has lapsed, the retry runs the request, and its answer is what replays from then on.
      await orphan(`now() - interval '1 second'`);
      const taken = await call(key, 'create_task', { title: 'Orphaned' }, { 'Idempotency-Key': 'orphaned' }).expect(
        200,
      );
      expect(taken.headers['idempotent-replayed']).toBeUndefined();
      const replay = await call(key, 'create_task', { title: 'Orphaned' }, { 'Idempotency-Key': 'orphaned' }).expect(
        200,
      );
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.result.id).toBe(taken.body.result.id);
    }, 30_000);

    it('does not store a failed call, so a corrected retry with the same key works', async () => {
      const user = await makeUser(app);
      const key = (await makeKey(user, ['tasks:read', 'tasks:write'])).key;
      const headers = { 'Idempotency-Key': 'retry-after-404' };
      await call(key, 'update_task', { task_id: randomUUID(), title: 'x' }, headers).expect(404);
      await call(key, 'update_task', { task_id: randomUUID(), title: 'x' }, headers).expect(404);
      await call(key, 'create_task', { title: 'x' }, { 'Idempotency-Key': 'x'.repeat(256) }).expect(400);
    });
  });
});
