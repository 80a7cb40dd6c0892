import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomUUID } from 'node:crypto';
import { Client as PgClient } from 'pg';
import { bearer, makeApiKey, makeUser, toolResult, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };
const MCP_PATH = '/api/v1/public/mcp';
const ACCEPT = 'application/json, text/event-stream';
const ALL_SCOPES = ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'];

/**
 * What MCP clients use beyond tools, on the product (no conformance fixtures): documents as resources, completions of
 * project ids and repository names, 2026-07-28 cache hints, progress notifications, portable tool schemas, and the
 * header and version checks of 2026-07-28. Every list and read is owner-bounded like the tools.
 */
describe('MCP resources, completions and client features', () => {
  let app: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let aliceKey: { id: string; key: string };
  let bobKey: { id: string; key: string };
  let tasksOnly: { id: string; key: string };
  let aliceDoc: string;
  let bobDoc: string;
  let aliceProject: string;
  let bobProject: string;
  const clients: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    app = await startTestApp({ env: EMBEDDED_SAFE_ENV });
    alice = await makeUser(app);
    bob = await makeUser(app);
    aliceKey = await makeApiKey(app, alice, { scopes: ALL_SCOPES });
    bobKey = await makeApiKey(app, bob, { scopes: ALL_SCOPES });
    tasksOnly = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
    aliceProject = (
      await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Alice project' }).expect(201)
    ).body.data.id;
    bobProject = (await app.http.post('/api/projects').set(bearer(bob.token)).send({ name: 'Bob project' }).expect(201))
      .body.data.id;
    aliceDoc = (
      await toolResult(app, aliceKey.key, 'create_document', {
        title: 'Alice private notes',
        content: 'alpha bravo charlie',
        project_id: aliceProject,
      })
    ).id;
    bobDoc = (
      await toolResult(app, bobKey.key, 'create_document', { title: 'Bob private notes', content: 'secret of bob' })
    ).id;
    // A registered repository, as an admin's registration leaves it (no GitHub call is needed to read it back).
    const db = new PgClient({ connectionString: app.database.url });
    await db.connect();
    try {
      await db.query(
        `INSERT INTO github_repositories (id, owner, name, full_name, github_id, default_branch, description) VALUES ($1, 'octo', 'widgets', 'octo/widgets', 4242, 'main', 'Widgets')`,
        [randomUUID()],
      );
    } finally {
      await db.end();
    }
  }, 180_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await app?.close();
  });

  const legacy = async (key: string): Promise<Client> => {
    const client = new Client({ name: 'legacy', version: '1.0.0' });
    clients.push(client);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.baseUrl}${MCP_PATH}`), {
        requestInit: { headers: bearer(key) },
      }),
    );
    return client;
  };
  const modern = async (key: string): Promise<ModernClient> => {
    const client = new ModernClient(
      { name: 'modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    clients.push(client);
    await client.connect(
      new ModernTransport(new URL(`${app.baseUrl}${MCP_PATH}`), { requestInit: { headers: bearer(key) } }),
    );
    return client;
  };
  const rawModern = (
    key: string,
    method: string,
    params: Record<string, unknown>,
    headers: Record<string, string> = {},
  ) =>
    app.http
      .post(MCP_PATH)
      .set(bearer(key))
      .set('Accept', ACCEPT)
      .set('MCP-Protocol-Version', '2026-07-28')
      .set('Mcp-Method', method)
      .set(headers)
      .send({
        jsonrpc: '2.0',
        id: 1,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      });

  it('documents are resources on both eras: a credential lists and reads only what its owner may see', async () => {
    // Resource not found: -32002 on the 2025 revisions, -32602 on 2026-07-28 (SEP-2164).
    for (const [client, notFound] of [
      [await legacy(aliceKey.key), -32002],
      [await modern(aliceKey.key), -32602],
    ] as const) {
      const uris = (await client.listResources()).resources.map((r) => r.uri);
      expect(uris).toContain(`atrium://documents/${aliceDoc}`);
      expect(uris).not.toContain(`atrium://documents/${bobDoc}`);
      const read = await client.readResource({ uri: `atrium://documents/${aliceDoc}` });
      expect(read.contents[0]).toMatchObject({
        uri: `atrium://documents/${aliceDoc}`,
        mimeType: 'text/plain',
        text: 'alpha bravo charlie',
      });
      // Bob's private document and a document that does not exist look the same: resource not found.
      for (const uri of [
        `atrium://documents/${bobDoc}`,
        `atrium://documents/${randomUUID()}`,
        `atrium://projects/${bobProject}/documents`,
      ]) {
        await expect(client.readResource({ uri })).rejects.toMatchObject({ code: notFound });
      }
      const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
      expect(templates).toEqual(
        expect.arrayContaining([
          'atrium://documents/{id}',
          'atrium://projects/{project_id}/documents',
          'atrium://repositories/{owner}/{name}',
        ]),
      );
      const projectDocs = await client.readResource({ uri: `atrium://projects/${aliceProject}/documents` });
      expect(
        JSON.parse((projectDocs.contents[0] as { text: string }).text).items.map((d: { id: string }) => d.id),
      ).toEqual([aliceDoc]);
    }
    const bobsView = (await (await modern(bobKey.key)).listResources()).resources.map((r) => r.uri);
    expect(bobsView).toContain(`atrium://documents/${bobDoc}`);
    expect(bobsView).not.toContain(`atrium://documents/${aliceDoc}`);
  });

  it('a credential-shaped string in a document leaves a resource read as [redacted], on both eras', async () => {
    // A GitHub token shape built at run time, so no secret scanner mistakes this file for a leak.
    const token = ['ghp', '_', 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'].join('');
    const leaky = (
      await toolResult(app, aliceKey.key, 'create_document', {
        title: 'Pasted config',
        content: `deploy with token ${token} please`,
      })
    ).id;
    for (const client of [await legacy(aliceKey.key), await modern(aliceKey.key)]) {
      const read = await client.readResource({ uri: `atrium://documents/${leaky}` });
      const text = (read.contents[0] as { text: string }).text;
      expect(text).toBe('deploy with token [redacted] please');
      expect(text).not.toContain(token);
    }
  });

  it('a credential without docs:read or github:read is offered no resources or completions', async () => {
    const client = await legacy(tasksOnly.key);
    expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: false } });
    await expect(client.listResources()).rejects.toMatchObject({ code: -32601 });
  });

  it('completions of project ids and repository names are owner-bounded', async () => {
    const client = await modern(aliceKey.key);
    const projects = await client.complete({
      ref: { type: 'ref/resource', uri: 'atrium://projects/{project_id}/documents' },
      argument: { name: 'project_id', value: '' },
    });
    expect(projects.completion.values).toContain(aliceProject);
    expect(projects.completion.values).not.toContain(bobProject);
    const narrowed = await client.complete({
      ref: { type: 'ref/resource', uri: 'atrium://projects/{project_id}/documents' },
      argument: { name: 'project_id', value: aliceProject.slice(0, 8) },
    });
    expect(narrowed.completion.values).toEqual([aliceProject]);
    const owners = await client.complete({
      ref: { type: 'ref/resource', uri: 'atrium://repositories/{owner}/{name}' },
      argument: { name: 'owner', value: 'oc' },
    });
    expect(owners.completion.values).toEqual(['octo']);
    const names = await client.complete({
      ref: { type: 'ref/resource', uri: 'atrium://repositories/{owner}/{name}' },
      argument: { name: 'name', value: 'w' },
      context: { arguments: { owner: 'octo' } },
    });
    expect(names.completion.values).toEqual(['widgets']);
    const repo = await client.readResource({ uri: 'atrium://repositories/octo/widgets' });
    expect(JSON.parse((repo.contents[0] as { text: string }).text)).toMatchObject({
      full_name: 'octo/widgets',
      default_branch: 'main',
    });
  });

  it('2026-07-28 list and read results carry cache hints (ttlMs, cacheScope private)', async () => {
    for (const [method, params] of [
      ['tools/list', {}],
      ['resources/list', {}],
      ['resources/templates/list', {}],
      ['resources/read', { uri: `atrium://documents/${aliceDoc}` }],
    ] as const) {
      const res = await rawModern(
        aliceKey.key,
        method,
        params,
        method === 'resources/read' ? { 'Mcp-Name': params.uri as string } : {},
      ).expect(200);
      expect(res.body.result).toMatchObject({ ttlMs: expect.any(Number), cacheScope: 'private' });
      expect(Number.isInteger(res.body.result.ttlMs)).toBe(true);
    }
  });

  it('a tools/call with a progressToken gets progress notifications before its result, on both eras', async () => {
    const onprogress = (seen: number[]) => (p: { progress: number }) => seen.push(p.progress);
    const legacySeen: number[] = [];
    const legacyResult = await (
      await legacy(aliceKey.key)
    ).callTool({ name: 'list_tasks', arguments: {} }, undefined, { onprogress: onprogress(legacySeen) });
    expect(legacyResult.isError).toBeFalsy();
    expect(legacySeen).toEqual([0, 1]);
    const modernSeen: number[] = [];
    const modernResult = await (
      await modern(aliceKey.key)
    ).callTool({ name: 'list_tasks', arguments: {} }, { onprogress: onprogress(modernSeen) } as never);
    expect(modernResult.isError).toBeFalsy();
    expect(modernSeen).toEqual([0, 1]);
    // Without a progressToken the answer stays one JSON body.
    const plain = await app.http
      .post(MCP_PATH)
      .set(bearer(aliceKey.key))
      .set('Accept', ACCEPT)
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_tasks', arguments: {} } })
      .expect(200);
    expect(plain.headers['content-type']).toMatch(/application\/json/);
  });

  it('tool schemas are portable: no type lists (["string", "null"]) anywhere', async () => {
    const { tools } = await (await legacy(aliceKey.key)).listTools();
    expect(tools.length).toBe(20);
    const text = JSON.stringify(tools.map((t) => [t.inputSchema, t.outputSchema]));
    expect(text).not.toMatch(/"type":\[/);
  });

  it('2026-07-28: Mcp-Method / Mcp-Name that disagree with the body are 400 -32020; an unsupported version is 400 -32022 naming the supported ones', async () => {
    const wrongMethod = await rawModern(aliceKey.key, 'tools/list', {}, { 'Mcp-Method': 'prompts/list' });
    expect(wrongMethod.status).toBe(400);
    expect(wrongMethod.body.error.code).toBe(-32020);
    const wrongName = await rawModern(
      aliceKey.key,
      'tools/call',
      { name: 'list_tasks', arguments: {} },
      { 'Mcp-Name': 'delete_task' },
    );
    expect(wrongName.status).toBe(400);
    expect(wrongName.body.error.code).toBe(-32020);
    const version = await app.http
      .post(MCP_PATH)
      .set(bearer(aliceKey.key))
      .set('Accept', ACCEPT)
      .set('MCP-Protocol-Version', '2099-01-01')
      .set('Mcp-Method', 'tools/list')
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2099-01-01',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      });
    expect(version.status).toBe(400);
    expect(version.body.error.code).toBe(-32022);
    expect(JSON.stringify(version.body.error.data)).toContain('2026-07-28');
  });

  it('outside conformance mode: no fixture tools, prompts or logging', async () => {
    const client = await legacy(aliceKey.key);
    const capabilities = client.getServerCapabilities() ?? {};
    expect(Object.keys(capabilities).sort()).toEqual(['completions', 'resources', 'tools']);
    expect(capabilities.resources).toEqual({});
    expect((await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('test_'))).toEqual([]);
    await expect(client.listPrompts()).rejects.toMatchObject({ code: -32601 });
  });
});

describe('MCP conformance mode (MCP_CONFORMANCE_FIXTURES=true)', () => {
  let app: TestApp;
  let key: { id: string; key: string };
  beforeAll(async () => {
    app = await startTestApp({ env: { ...EMBEDDED_SAFE_ENV, MCP_CONFORMANCE_FIXTURES: 'true' } });
    key = await makeApiKey(app, await makeUser(app), { scopes: ['tasks:read'] });
  }, 180_000);
  afterAll(async () => {
    await app?.close();
  });

  it('serves the suite fixtures on the same endpoint, for a valid credential only', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    await app.http.post(MCP_PATH).set('Accept', ACCEPT).send(body).expect(401);
    await app.http.post(MCP_PATH).set(bearer('atr_notavalidkeyatall')).set('Accept', ACCEPT).send(body).expect(401);
    const res = await app.http.post(MCP_PATH).set(bearer(key.key)).set('Accept', ACCEPT).send(body).expect(200);
    const names = (res.body.result.tools as { name: string }[]).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['list_tasks', 'test_simple_text', 'test_tool_with_progress']));
    const init = await app.http
      .post(MCP_PATH)
      .set(bearer(key.key))
      .set('Accept', ACCEPT)
      .send({
        jsonrpc: '2.0',
        id: 2,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      })
      .expect(200);
    expect(init.body.result.capabilities).toMatchObject({
      logging: {},
      prompts: {},
      resources: { subscribe: true },
      completions: {},
    });
  });
});
