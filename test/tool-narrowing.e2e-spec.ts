import { bearer, callTool, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { oauthTokens } from './support/oauth-helpers.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const MCP = '/api/v1/public/mcp';
const ACCEPT = 'application/json, text/event-stream';
const ALL_SCOPES = ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'];
const TASK_TOOLS = [
  'list_tasks',
  'get_task',
  'search_tasks',
  'task_stats',
  'create_task',
  'update_task',
  'delete_task',
];
const TASK_READ_TOOLS = ['list_tasks', 'get_task', 'search_tasks', 'task_stats'];

type Era = 'legacy' | 'modern';
const ERAS: Era[] = ['legacy', 'modern'];

/**
 * Per credential (API.md, "Grants and admin policy"): a tools allowlist and read-only, on both doors and both MCP
 * revisions; per request: the X-MCP-Toolsets / X-MCP-Readonly headers and the toolset URLs; single pins drop and fill
 * project_id and repo.
 */
describe('Tool allowlists, read-only credentials, toolsets and pinned parameters', () => {
  let app: TestApp;
  let alice: TestUser;

  beforeAll(async () => {
    app = await startTestApp();
    alice = await makeUser(app);
  }, 180_000);
  afterAll(async () => app?.close());

  /** One MCP request of either revision, on the endpoint or a narrowed URL. */
  const mcp = (
    era: Era,
    credential: string,
    method: string,
    params: Record<string, unknown> = {},
    options: { path?: string; headers?: Record<string, string> } = {},
  ) => {
    const request = app.http
      .post(options.path ?? MCP)
      .set(bearer(credential))
      .set('Accept', ACCEPT)
      .set(options.headers ?? {});
    if (era === 'modern') {
      request.set('MCP-Protocol-Version', '2026-07-28').set('Mcp-Method', method);
      if (typeof params.name === 'string') request.set('Mcp-Name', params.name);
      params = {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'narrowing-test', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      };
    } else request.set('MCP-Protocol-Version', '2025-11-25');
    return request.send({ jsonrpc: '2.0', id: 7, method, params });
  };

  const listed = async (era: Era, credential: string, options: Parameters<typeof mcp>[4] = {}) => {
    const res = await mcp(era, credential, 'tools/list', {}, options);
    expect(res.status).toBe(200);
    return (res.body.result.tools as { name: string; inputSchema: { properties: Record<string, unknown> } }[]).map(
      (tool) => tool.name,
    );
  };

  const jsonListed = async (credential: string, headers: Record<string, string> = {}) => {
    const res = await app.http.get(`${MCP}/tools`).set(bearer(credential)).set(headers).expect(200);
    return (res.body.tools as { name: string }[]).map((tool) => tool.name);
  };

  /** The MCP tool error code of a tools/call, or 'ok'. */
  const mcpCallCode = async (era: Era, credential: string, name: string, args: object, options = {}) => {
    const res = await mcp(era, credential, 'tools/call', { name, arguments: args }, options);
    expect(res.status).toBe(200);
    return res.body.result.isError ? (res.body.result.structuredContent.error.code as string) : 'ok';
  };

  it('an allowlisted key lists and calls exactly its tools, on both doors and both revisions', async () => {
    const key = await makeApiKey(app, alice, {
      scopes: ['tasks:read', 'tasks:write'],
      tools: ['create_task', 'list_tasks', 'list_tasks'],
    });
    // Catalog order, each once.
    expect(await jsonListed(key.key)).toEqual(['list_tasks', 'create_task']);
    for (const era of ERAS) expect(await listed(era, key.key)).toEqual(['list_tasks', 'create_task']);

    await callTool(app, key.key, 'create_task', { title: 'allowed' }).expect(200);
    await callTool(app, key.key, 'list_tasks', {}).expect(200);
    const refused = await callTool(app, key.key, 'get_task', { id: '00000000-0000-4000-8000-000000000000' });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'tool_not_allowed', details: { tool: 'get_task' } });
    expect(refused.body.error.message).toMatch(/create_task, list_tasks/);
    // Not a scope problem: no OAuth step-up challenge.
    expect(refused.headers['www-authenticate']).toBeUndefined();
    for (const era of ERAS) {
      expect(await mcpCallCode(era, key.key, 'list_tasks', {})).toBe('ok');
      expect(await mcpCallCode(era, key.key, 'task_stats', {})).toBe('tool_not_allowed');
    }

    // The key views show the choice.
    const view = await app.http.get(`/api/api-keys/${key.id}`).set(bearer(alice.token)).expect(200);
    expect(view.body.data).toMatchObject({ tools: ['create_task', 'list_tasks'], readOnly: false });
    const list = await app.http.get('/api/api-keys').set(bearer(alice.token)).expect(200);
    expect(list.body.data.items.find((k: { id: string }) => k.id === key.id)).toMatchObject({
      tools: ['create_task', 'list_tasks'],
    });
  });

  it('a read-only key with write scopes lists only read tools and cannot write on either door', async () => {
    const key = await makeApiKey(app, alice, { scopes: ['tasks:read', 'tasks:write'], readOnly: true });
    expect(await jsonListed(key.key)).toEqual(TASK_READ_TOOLS);
    const write = await callTool(app, key.key, 'create_task', { title: 'must not exist' });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('tool_not_allowed');
    for (const era of ERAS) {
      expect(await listed(era, key.key)).toEqual(TASK_READ_TOOLS);
      expect(await mcpCallCode(era, key.key, 'create_task', { title: 'must not exist' })).toBe('tool_not_allowed');
      expect(await mcpCallCode(era, key.key, 'list_tasks', {})).toBe('ok');
    }
    const full = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
    const titles = (await callTool(app, full.key, 'list_tasks', { limit: 100 }).expect(200)).body.result.map(
      (task: { title: string }) => task.title,
    );
    expect(titles).not.toContain('must not exist');
  });

  it('refuses bad allowlists at creation with a 400 naming the problem, never a 500', async () => {
    const create = (body: Record<string, unknown>) =>
      app.http
        .post('/api/api-keys')
        .set(bearer(alice.token))
        .send({ name: 'bad', scopes: ['tasks:read'], expiresIn: 'never', ...body });
    const unknown = await create({ tools: ['list_tasks', 'drop_database', 'rm_rf'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/unknown tools: drop_database, rm_rf/);
    const outside = await create({ tools: ['create_task'] });
    expect(outside.status).toBe(400);
    expect(outside.body.error.message).toMatch(/create_task \(needs tasks:write\)/);
    for (const tools of [[], 'list_tasks', [42], [null], [{ name: 'list_tasks' }], Array(5000).fill('list_tasks')]) {
      expect((await create({ tools })).status).toBe(400);
    }
    for (const readOnly of ['yes', 1, 'true', []]) expect((await create({ readOnly })).status).toBe(400);
    expect((await create({ tools: ['x'.repeat(100_000)] })).status).toBe(400);
  });

  it('the toolset headers and URLs narrow tools/list and calls; unknown toolsets are refused', async () => {
    const key = await makeApiKey(app, alice, { scopes: ALL_SCOPES });
    for (const era of ERAS) {
      const all = await listed(era, key.key);
      expect(all).toEqual(expect.arrayContaining([...TASK_TOOLS, 'list_documents', 'list_commits']));
      expect(await listed(era, key.key, { path: `${MCP}/x/tasks` })).toEqual(TASK_TOOLS);
      expect(await listed(era, key.key, { path: `${MCP}/x/tasks/readonly` })).toEqual(TASK_READ_TOOLS);
      const docs = await listed(era, key.key, { headers: { 'X-MCP-Toolsets': 'docs' } });
      expect(docs).toContain('search_documents');
      expect(docs.every((name) => name.includes('document'))).toBe(true);
      const readOnly = await listed(era, key.key, { path: `${MCP}/readonly` });
      expect(readOnly).not.toContain('create_task');
      expect(readOnly).toEqual(expect.arrayContaining(['list_tasks', 'list_documents', 'list_commits']));
      expect(await listed(era, key.key, { headers: { 'X-MCP-Readonly': 'true', 'X-MCP-Toolsets': 'tasks' } })).toEqual(
        TASK_READ_TOOLS,
      );
      // Narrowing only: false never widens the /readonly URL.
      expect(
        await listed(era, key.key, { path: `${MCP}/x/tasks/readonly`, headers: { 'X-MCP-Readonly': 'false' } }),
      ).toEqual(TASK_READ_TOOLS);

      expect(await mcpCallCode(era, key.key, 'create_task', { title: 'no' }, { path: `${MCP}/x/docs` })).toBe(
        'tool_not_allowed',
      );
      expect(await mcpCallCode(era, key.key, 'create_task', { title: 'no' }, { path: `${MCP}/readonly` })).toBe(
        'tool_not_allowed',
      );
      expect(await mcpCallCode(era, key.key, 'list_tasks', {}, { path: `${MCP}/x/tasks/readonly` })).toBe('ok');

      for (const options of [{ path: `${MCP}/x/wiki` }, { headers: { 'X-MCP-Toolsets': 'tasks,wiki' } }]) {
        const res = await mcp(era, key.key, 'tools/list', {}, options);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { data: { error: { code: 'invalid_argument' } } } });
        expect(res.body.error.message).toMatch(/Unknown toolset "wiki".*tasks, docs, github/);
      }
    }
    // The JSON door reads the same headers.
    expect(await jsonListed(key.key, { 'X-MCP-Toolsets': 'tasks', 'X-MCP-Readonly': 'true' })).toEqual(TASK_READ_TOOLS);
    const refused = await callTool(app, key.key, 'create_task', { title: 'no' }, { 'X-MCP-Toolsets': 'github' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('tool_not_allowed');
    const bad = await app.http.get(`${MCP}/tools`).set(bearer(key.key)).set('X-MCP-Readonly', 'maybe');
    expect(bad.status).toBe(400);
    // Refused narrowing is one of the key's calls, on its usage log.
    const usage = await app.http.get(`/api/api-keys/${key.id}`).set(bearer(alice.token)).expect(200);
    expect(usage.body.data.recentUsage.some((row: { status: number }) => row.status === 400)).toBe(true);
  });

  it("a request narrowed to toolsets sees only those toolsets' resources (documents are the docs toolset's)", async () => {
    const key = await makeApiKey(app, alice, { scopes: ALL_SCOPES });
    const created = await app.http
      .post(`${MCP}/call`)
      .set(bearer(key.key))
      .send({ name: 'create_document', arguments: { title: 'Narrowed notes', content: 'resource text' } })
      .expect(200);
    const uri = `atrium://documents/${created.body.result.id}`;
    const resources = async (era: Era, options: Parameters<typeof mcp>[4] = {}) => {
      const res = await mcp(era, key.key, 'resources/list', {}, options);
      expect(res.status).toBe(200);
      return (res.body.result.resources as { uri: string }[]).map((resource) => resource.uri);
    };
    for (const era of ERAS) {
      expect(await resources(era)).toContain(uri);
      expect(await resources(era, { path: `${MCP}/x/docs/readonly` })).toContain(uri);
      expect(await resources(era, { path: `${MCP}/x/tasks` })).toEqual([]);
      expect(await resources(era, { headers: { 'X-MCP-Toolsets': 'github' } })).toEqual([]);
      const read = await mcp(era, key.key, 'resources/read', { uri }, { path: `${MCP}/x/tasks` });
      expect(read.body.error).toBeDefined();
      expect(JSON.stringify(read.body)).not.toContain('resource text');
    }
  });

  it('the server instructions name the toolsets, and a 2025-era session works on a narrowed URL', async () => {
    const key = await makeApiKey(app, alice, { scopes: ALL_SCOPES });
    const init = await app.http
      .post(`${MCP}/x/tasks/readonly`)
      .set(bearer(key.key))
      .set('Accept', ACCEPT)
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'narrow-client', version: '2' },
        },
      })
      .expect(200);
    expect(init.body.result.instructions).toMatch(/Toolsets: tasks, docs, github/);
    expect(init.body.result.instructions).toMatch(/X-MCP-Toolsets/);
    const session = init.headers['mcp-session-id'] as string | undefined;
    const headers: Record<string, string> = session ? { 'Mcp-Session-Id': session } : {};
    const options = { path: `${MCP}/x/tasks/readonly`, headers };
    expect(await listed('legacy', key.key, options)).toEqual(TASK_READ_TOOLS);
  });

  it('a single-project pin drops project_id from the schemas and lands created tasks in that project', async () => {
    const project = (await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Pinned' }).expect(201))
      .body.data.id as string;
    const other = (await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Other' }).expect(201))
      .body.data.id as string;
    const pinned = await makeApiKey(app, alice, { scopes: ['tasks:read', 'tasks:write'], projectIds: [project] });
    const twoPins = await makeApiKey(app, alice, {
      scopes: ['tasks:read', 'tasks:write'],
      projectIds: [project, other],
    });

    const jsonTools = (await app.http.get(`${MCP}/tools`).set(bearer(pinned.key)).expect(200)).body.tools as {
      name: string;
      parameters: Record<string, unknown>;
    }[];
    expect(jsonTools.find((tool) => tool.name === 'create_task')!.parameters).not.toHaveProperty('project_id');
    expect(jsonTools.find((tool) => tool.name === 'list_tasks')!.parameters).not.toHaveProperty('project_id');
    for (const era of ERAS) {
      const tools = (await mcp(era, pinned.key, 'tools/list')).body.result.tools as {
        name: string;
        inputSchema: { properties: Record<string, unknown>; required?: string[] };
      }[];
      for (const tool of tools) expect(tool.inputSchema.properties).not.toHaveProperty('project_id');
      const wide = (await mcp(era, twoPins.key, 'tools/list')).body.result.tools as typeof tools;
      expect(wide.find((tool) => tool.name === 'create_task')!.inputSchema.properties).toHaveProperty('project_id');
    }

    const created = await callTool(app, pinned.key, 'create_task', { title: 'lands in the pin' }).expect(200);
    expect(created.body.result.project_id).toBe(project);
    for (const era of ERAS) {
      const res = await mcp(era, pinned.key, 'tools/call', { name: 'create_task', arguments: { title: `mcp ${era}` } });
      expect(res.body.result.structuredContent.project_id).toBe(project);
    }
    // Sent anyway: the pin check as before (another project is not found for this key).
    const outside = await callTool(app, pinned.key, 'create_task', { title: 'no', project_id: other });
    expect(outside.status).toBe(404);
    expect(outside.body.error.code).toBe('not_found');
    // Two pins: nothing is filled; a task must still name its project.
    const unnamed = await callTool(app, twoPins.key, 'create_task', { title: 'which?' });
    expect(unnamed.status).toBe(400);
  });

  it('a single-repository pin drops repo from the schemas and fills it in', async () => {
    const pinned = await makeApiKey(app, alice, { scopes: ['github:read'], repos: ['acme/widgets'] });
    for (const era of ERAS) {
      const tools = (await mcp(era, pinned.key, 'tools/list')).body.result.tools as {
        name: string;
        inputSchema: { properties: Record<string, unknown>; required?: string[] };
      }[];
      const commits = tools.find((tool) => tool.name === 'list_commits')!;
      expect(commits.inputSchema.properties).not.toHaveProperty('repo');
      expect(commits.inputSchema.required ?? []).not.toContain('repo');
    }
    // Filled in: the call reaches the repository lookup (not registered here) instead of missing_argument.
    const res = await callTool(app, pinned.key, 'list_commits', {});
    expect(res.status).toBe(404);
    expect(res.body.error.message).toMatch(/acme\/widgets is not registered/);
  });

  it('an OAuth grant carries a tools allowlist and read-only from the consent, shown in the grant view', async () => {
    const tokens = await oauthTokens(app, alice, ['tasks:read', 'tasks:write'], {
      tools: ['list_tasks', 'create_task'],
      readOnly: true,
    });
    for (const era of ERAS) {
      expect(await listed(era, tokens.access_token)).toEqual(['list_tasks']);
      expect(await mcpCallCode(era, tokens.access_token, 'create_task', { title: 'no' })).toBe('tool_not_allowed');
    }
    const grants = await app.http.get('/api/oauth/grants').set(bearer(alice.token)).expect(200);
    expect(grants.body.data.items.find((g: { clientId: string }) => g.clientId === tokens.clientId)).toMatchObject({
      tools: ['list_tasks', 'create_task'],
      readOnly: true,
    });
    await expect(oauthTokens(app, alice, ['tasks:read'], { tools: ['list_tasks', 'nope_tool'] })).rejects.toThrow(
      /400/,
    );
  });
});
