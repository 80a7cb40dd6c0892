import { DatabasePool } from '../src/database/database-pool.js';
import { metricsRegistry } from '../src/common/metrics/metrics.registry.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { bearer, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** See api-keys.e2e-spec.ts: one pooled connection keeps the embedded engine correct under concurrency. */
const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };
const MCP_PATH = '/api/v1/public/mcp';
const ACCEPT = 'application/json, text/event-stream';

describe('MCP Streamable HTTP at /api/v1/public/mcp', () => {
  let app: TestApp;
  let alice: TestUser;
  let rw: { id: string; key: string };
  let ro: { id: string; key: string };
  const clients: Client[] = [];

  const makeKey = (user: TestUser, scopes: string[]) => makeApiKey(app, user, { name: 'mcp', scopes });

  /** The official SDK client, the Authorization header set as a desktop client would. */
  const connect = async (key: string): Promise<Client> => {
    const client = new Client({ name: 'atrium-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${app.baseUrl}${MCP_PATH}`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };

  /** Hand-made JSON-RPC over plain HTTP. */
  const rpc = (body: unknown, key: string | undefined, headers: Record<string, string> = {}) => {
    let req = app.http.post(MCP_PATH).set('Accept', ACCEPT).set('Content-Type', 'application/json');
    if (key) req = req.set(bearer(key));
    req = req.set(headers);
    return typeof body === 'string' ? req.send(body) : req.send(body as object);
  };

  beforeAll(async () => {
    app = await startTestApp({ env: EMBEDDED_SAFE_ENV });
    alice = await makeUser(app);
    rw = await makeKey(alice, ['tasks:read', 'tasks:write']);
    ro = await makeKey(alice, ['tasks:read']);
  }, 180_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await app.close();
  });

  describe('with the SDK Client + StreamableHTTPClientTransport', () => {
    it('connects (protocol 2025-11-25 negotiated), lists the same tools as the JSON door with schemas and annotations', async () => {
      const client = await connect(rw.key);
      expect(client.getServerVersion()).toMatchObject({ name: 'atrium' });
      expect(client.getServerCapabilities()?.tools).toBeDefined();
      const { tools } = await client.listTools();
      const jsonDoor = await app.http.get(`${MCP_PATH}/tools`).set(bearer(rw.key)).expect(200);
      expect(tools.map((t) => t.name)).toEqual(jsonDoor.body.tools.map((t: { name: string }) => t.name));
      expect(tools.map((t) => t.name)).toEqual([
        'list_tasks',
        'get_task',
        'search_tasks',
        'task_stats',
        'create_task',
        'update_task',
        'delete_task',
      ]);
      const create = tools.find((t) => t.name === 'create_task')!;
      expect(create.title).toEqual(expect.any(String));
      expect(create.description).toEqual(expect.any(String));
      expect(create.inputSchema).toMatchObject({ type: 'object', required: ['title'], additionalProperties: false });
      expect(create.inputSchema.properties).toHaveProperty(
        'priority',
        expect.objectContaining({ enum: ['low', 'medium', 'high', 'urgent'] }),
      );
      expect(create.outputSchema).toMatchObject({ type: 'object' });
      expect(create.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, openWorldHint: false });
      expect(tools.find((t) => t.name === 'list_tasks')!.annotations).toMatchObject({
        readOnlyHint: true,
        openWorldHint: false,
      });
      expect(tools.find((t) => t.name === 'delete_task')!.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
      });
    });

    it('calls create_task then list_tasks: structuredContent plus the same JSON as a text block; lists wrapped as {items}', async () => {
      const client = await connect(rw.key);
      const created = (await client.callTool({
        name: 'create_task',
        arguments: { title: 'Write the MCP docs', priority: 'high' },
      })) as CallToolResult;
      expect(created.isError).toBeFalsy();
      const task = created.structuredContent as Record<string, unknown>;
      expect(task).toMatchObject({
        title: 'Write the MCP docs',
        priority: 'high',
        status: 'todo',
        creator_id: alice.id,
      });
      expect(created.content).toEqual([{ type: 'text', text: JSON.stringify(task) }]);

      const listed = (await client.callTool({ name: 'list_tasks', arguments: { priority: 'high' } })) as CallToolResult;
      expect(listed.isError).toBeFalsy();
      const items = (listed.structuredContent as { items: Record<string, unknown>[] }).items;
      expect(items.map((t) => t.id)).toContain(task.id);
      expect(JSON.parse((listed.content[0] as { text: string }).text)).toEqual(listed.structuredContent);

      // The JSON door sees the same task: one registry, one service.
      const viaJson = await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(rw.key))
        .send({ name: 'get_task', arguments: { task_id: task.id } })
        .expect(200);
      expect(viaJson.body.result).toEqual(task);
    });

    it('answers a tool failure as an isError result carrying the Area A code (invalid enum, not_found)', async () => {
      const client = await connect(rw.key);
      const bad = (await client.callTool({
        name: 'create_task',
        arguments: { title: 'x', priority: 'extreme' },
      })) as CallToolResult;
      expect(bad.isError).toBe(true);
      const body = bad.structuredContent as { error: { code: string; details: Record<string, unknown> } };
      expect(body.error).toMatchObject({
        code: 'invalid_argument',
        details: { argument: 'priority', allowed: ['low', 'medium', 'high', 'urgent'] },
      });
      expect(JSON.parse((bad.content[0] as { text: string }).text)).toEqual(bad.structuredContent);

      const missing = (await client.callTool({
        name: 'get_task',
        arguments: { task_id: '00000000-0000-4000-8000-000000000000' },
      })) as CallToolResult;
      expect(missing.isError).toBe(true);
      expect((missing.structuredContent as { error: { code: string } }).error.code).toBe('not_found');
    });

    it('a key without tasks:write never sees create_task and cannot run it', async () => {
      const client = await connect(ro.key);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['list_tasks', 'get_task', 'search_tasks', 'task_stats']);
      const denied = (await client.callTool({ name: 'create_task', arguments: { title: 'sneaky' } })) as CallToolResult;
      expect(denied.isError).toBe(true);
      expect((denied.structuredContent as { error: { code: string; details: unknown } }).error).toMatchObject({
        code: 'insufficient_scope',
        details: { required_scope: 'tasks:write' },
      });
      const all = await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(rw.key))
        .send({ name: 'search_tasks', arguments: { query: 'sneaky' } })
        .expect(200);
      expect(all.body.result).toEqual([]);
    });

    it('an unknown tool is JSON-RPC error -32602', async () => {
      const client = await connect(rw.key);
      await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    });

    it('a wrong key cannot connect: HTTP 401', async () => {
      await expect(connect('atr_wrongwrongwrongwrongwrongwrongwr000000')).rejects.toMatchObject({ code: 401 });
    });

    it('logs MCP calls in the same usage log and call count as the JSON door (failures with their Area A status)', async () => {
      const key = await makeKey(alice, ['tasks:read', 'tasks:write']);
      const client = await connect(key.key);
      await client.callTool({ name: 'task_stats', arguments: {} });
      await client.callTool({ name: 'create_task', arguments: { title: '' } });
      const one = await app.http.get(`/api/api-keys/${key.id}`).set(bearer(alice.token)).expect(200);
      const usage = one.body.data.recentUsage as { tool: string; status: number }[];
      expect(usage.slice(0, 2)).toEqual([
        expect.objectContaining({ tool: 'create_task', status: 400 }),
        expect.objectContaining({ tool: 'task_stats', status: 200 }),
      ]);
      expect(usage.map((u) => u.tool)).toContain('initialize');
      expect(one.body.data.callCount).toBe(usage.length);
    });
  });

  describe('under concurrency', () => {
    it('50 concurrent tools/call requests from separate clients each get their own task back', async () => {
      const N = 50;
      const connected = await Promise.all(Array.from({ length: N }, () => connect(rw.key)));
      const results = await Promise.all(
        connected.map(
          (client, i) =>
            client.callTool({
              name: 'create_task',
              arguments: { title: `concurrent #${i}`, description: `body ${i}` },
            }) as Promise<CallToolResult>,
        ),
      );
      results.forEach((result, i) => {
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toMatchObject({
          title: `concurrent #${i}`,
          description: `body ${i}`,
          creator_id: alice.id,
        });
        expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(result.structuredContent);
      });
      expect(new Set(results.map((r) => (r.structuredContent as { id: string }).id)).size).toBe(N);
      // And reads, interleaved, from the same clients.
      const reads = await Promise.all(
        results.map(
          (r, i) =>
            connected[i].callTool({
              name: 'get_task',
              arguments: { task_id: (r.structuredContent as { id: string }).id },
            }) as Promise<CallToolResult>,
        ),
      );
      reads.forEach((read, i) => expect(read.structuredContent).toMatchObject({ title: `concurrent #${i}` }));
    }, 120_000);
  });

  describe('hand-made JSON-RPC', () => {
    it('initialize with protocolVersion 2025-11-25 answers that version, server info and the tools capability', async () => {
      for (const older of ['2025-06-18', '2025-03-26']) {
        const res = await rpc(
          {
            jsonrpc: '2.0',
            id: 0,
            method: 'initialize',
            params: { protocolVersion: older, capabilities: {}, clientInfo: { name: 'old', version: '0' } },
          },
          rw.key,
        );
        expect(res.body.result.protocolVersion).toBe(older);
      }
      const res = await rpc(
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'curl', version: '0' } },
        },
        rw.key,
      ).expect(200);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      // A label session: it names the client on later calls (docs/mcp.md, "Sessions").
      expect(res.headers['mcp-session-id']).toMatch(/^l1\./);
      expect(res.body).toMatchObject({
        jsonrpc: '2.0',
        id: 1,
        result: {
          protocolVersion: '2025-11-25',
          serverInfo: { name: 'atrium' },
          capabilities: { tools: expect.any(Object) },
        },
      });
    });

    it('ping answers an empty result; notifications answer 202', async () => {
      const res = await rpc({ jsonrpc: '2.0', id: 'p1', method: 'ping' }, rw.key, {
        'Mcp-Protocol-Version': '2025-11-25',
      }).expect(200);
      expect(res.body).toEqual({ jsonrpc: '2.0', id: 'p1', result: {} });
      await rpc({ jsonrpc: '2.0', method: 'notifications/initialized' }, rw.key, {
        'Mcp-Protocol-Version': '2025-11-25',
      }).expect(202);
    });

    it('a credential-shaped string in a task comes back [redacted] on both doors (single result and list), counted by kind', async () => {
      const secret = 'ghp_Mcp0123456789abcdefghijABCDEFGHIJklmn';
      const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----';
      const metric = async () =>
        (await metricsRegistry.getSingleMetric('atrium_redactions_total')!.get()).values.find(
          (v) => v.labels.kind === 'github' && v.labels.where === 'tool_result',
        )?.value ?? 0;
      const before = await metric();
      const json = (name: string, args: Record<string, unknown>) =>
        app.http.post(`${MCP_PATH}/call`).set(bearer(rw.key)).send({ name, arguments: args }).expect(200);
      const created = (
        await json('create_task', { title: 'Rotate keys', description: `old token ${secret}\n${pem}\nkeep this line` })
      ).body.result;
      const expected = 'old token [redacted]\n[redacted]\nkeep this line';
      expect(created.description).toBe(expected);
      expect((await json('get_task', { task_id: created.id })).body.result.description).toBe(expected);
      const listed = await json('list_tasks', { limit: 200 });
      expect(listed.body.result.find((t: { id: string }) => t.id === created.id).description).toBe(expected);
      expect(listed.text).not.toContain('ghp_Mcp');

      const client = await connect(rw.key);
      const viaMcp = (await client.callTool({
        name: 'get_task',
        arguments: { task_id: created.id },
      })) as CallToolResult;
      expect((viaMcp.structuredContent as { description: string }).description).toBe(expected);
      const mcpList = (await client.callTool({ name: 'list_tasks', arguments: { limit: 200 } })) as CallToolResult;
      expect(JSON.stringify([viaMcp, mcpList])).not.toMatch(/ghp_Mcp|MIIEvQ/);
      expect((await metric()) - before).toBe(5);
      // Only what leaves is redacted: the task keeps its text (its creator edits the real thing).
      const [row] = await app.app.get(DatabasePool).query(`SELECT description FROM tasks WHERE id = $1`, [created.id]);
      expect(row.description).toContain(secret);
    });

    it('tools/list and tools/call work without a prior initialize (stateless)', async () => {
      const list = await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, ro.key).expect(200);
      expect(list.body.result.tools.map((t: { name: string }) => t.name)).toEqual([
        'list_tasks',
        'get_task',
        'search_tasks',
        'task_stats',
      ]);
      const call = await rpc(
        { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_tasks', arguments: { limit: 1 } } },
        rw.key,
      ).expect(200);
      expect(call.body.result.structuredContent).toEqual({ items: [expect.any(Object)], truncated: true });
      const unknown = await rpc(
        { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'nope' } },
        rw.key,
      ).expect(200);
      expect(unknown.body).toMatchObject({ id: 4, error: { code: -32602 } });
    });

    it('a body that is not JSON is a JSON-RPC parse error (-32700), not the Area A error body', async () => {
      const res = await rpc('{"jsonrpc": "2.0", "id": 1, "method": ', rw.key).expect(400);
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: expect.any(String), data: expect.any(Object) },
      });
    });

    it('JSON that is not a JSON-RPC message is invalid request (-32600)', async () => {
      for (const body of [
        { hello: 'world' },
        [],
        { jsonrpc: '1.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', id: 1, method: 7 },
      ]) {
        const res = await rpc(body, rw.key).expect(400);
        expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
      }
    });

    it('GET and DELETE answer 405', async () => {
      const get = await app.http.get(MCP_PATH).set('Accept', 'text/event-stream').set(bearer(rw.key)).expect(405);
      expect(get.headers.allow).toBe('POST, DELETE');
      expect(get.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
      await app.http.delete(MCP_PATH).set(bearer(rw.key)).expect(405);
    });

    it('a foreign Origin is 403; no Origin is fine', async () => {
      const res = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, rw.key, {
        Origin: 'https://evil.example',
      }).expect(403);
      expect(res.body).toMatchObject({
        jsonrpc: '2.0',
        id: 1,
        error: { code: -32000, data: { error: { code: 'forbidden' } } },
      });
    });

    it('a bad or missing key is HTTP 401 with WWW-Authenticate: Bearer (resource_metadata, invalid_token when sent) and the Area A code', async () => {
      const wrong = await rpc(
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        'atr_wrongwrongwrongwrongwrongwrongwr000000',
      ).expect(401);
      expect(wrong.headers['www-authenticate']).toMatch(
        /^Bearer error="invalid_token", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
      );
      expect(wrong.body).toMatchObject({
        jsonrpc: '2.0',
        id: 1,
        error: { data: { error: { code: 'invalid_api_key' } } },
      });
      const none = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, undefined).expect(401);
      expect(none.headers['www-authenticate']).toMatch(
        /^Bearer resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/v1\/public\/mcp"$/,
      );
      expect(none.body.error.data.error.code).toBe('missing_api_key');
    });

    it('a wrong Accept is 406 and a non-JSON Content-Type 415, as JSON-RPC errors', async () => {
      const accept = await app.http
        .post(MCP_PATH)
        .set(bearer(rw.key))
        .set('Accept', 'application/json')
        .send({ jsonrpc: '2.0', id: 1, method: 'ping' })
        .expect(406);
      expect(accept.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
      const type = await app.http
        .post(MCP_PATH)
        .set(bearer(rw.key))
        .set('Accept', ACCEPT)
        .set('Content-Type', 'text/plain')
        .send('ping')
        .expect(415);
      expect(type.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    });

    it('an unsupported Mcp-Protocol-Version header is rejected by the transport', async () => {
      const res = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, rw.key, {
        'Mcp-Protocol-Version': '1999-01-01',
      }).expect(400);
      expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    });
  });
});

describe('MCP allowed origins and the per-key limit', () => {
  let app: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    app = await startTestApp({
      env: {
        ...EMBEDDED_SAFE_ENV,
        MCP_ALLOWED_ORIGINS: 'https://app.example',
        RATE_LIMIT_KEY_PER_MIN: '3',
        RATE_LIMIT_USER_TOOLS_PER_MIN: '100000',
      },
    });
    user = await makeUser(app);
  }, 180_000);
  afterAll(async () => {
    await app.close();
  });

  const newKey = async () =>
    (
      await app.http
        .post('/api/api-keys')
        .set(bearer(user.token))
        .send({ name: 'lim', scopes: ['tasks:read'], expiresIn: 'never' })
        .expect(201)
    ).body.data.key as string;
  const post = (key: string, body: object, headers: Record<string, string> = {}) =>
    app.http.post(MCP_PATH).set('Accept', ACCEPT).set(bearer(key)).set(headers).send(body);

  it('an Origin on MCP_ALLOWED_ORIGINS passes, another does not', async () => {
    const key = await newKey();
    await post(key, { jsonrpc: '2.0', id: 1, method: 'ping' }, { Origin: 'https://app.example' }).expect(200);
    await post(key, { jsonrpc: '2.0', id: 1, method: 'ping' }, { Origin: 'https://other.example' }).expect(403);
  });

  it('over the limit: tools/call is an isError rate_limited result with retry_after_seconds; other methods HTTP 429', async () => {
    const key = await newKey();
    for (let i = 0; i < 3; i += 1) await post(key, { jsonrpc: '2.0', id: i, method: 'ping' }).expect(200);
    const call = await post(key, {
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: 'list_tasks', arguments: {} },
    }).expect(200);
    expect(call.body.result.isError).toBe(true);
    expect(call.body.result.structuredContent.error).toMatchObject({
      code: 'rate_limited',
      details: { retry_after_seconds: expect.any(Number) },
    });
    const ping = await post(key, { jsonrpc: '2.0', id: 10, method: 'ping' }).expect(429);
    expect(Number(ping.headers['retry-after'])).toBeGreaterThan(0);
    expect(ping.body).toMatchObject({
      jsonrpc: '2.0',
      id: 10,
      error: { code: -32000, data: { error: { code: 'rate_limited' } } },
    });
    // The JSON door shares the same budget.
    await app.http.get(`${MCP_PATH}/tools`).set(bearer(key)).expect(429);
  });

  it('a JSON-RPC batch is refused (400, -32600) before anything runs, so a batch cannot multiply the limit', async () => {
    const key = await newKey();
    const batch = Array.from({ length: 50 }, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'tools/call',
      params: { name: 'list_tasks', arguments: {} },
    }));
    const res = await post(key, batch).expect(400);
    expect(res.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: expect.stringContaining('batch') },
    });
    // Nothing of the batch ran or counted: the key still has its 3 calls (one message each), then 429.
    for (let i = 0; i < 3; i += 1) await post(key, { jsonrpc: '2.0', id: i, method: 'ping' }).expect(200);
    await post(key, { jsonrpc: '2.0', id: 3, method: 'ping' }).expect(429);
  });
});
