import { McpServerFactory } from '../src/modules/tools/mcp-server.factory.js';
import { bearer, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const MCP_PATH = '/api/v1/public/mcp';
const ACCEPT = 'application/json, text/event-stream';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'fast-path-test', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
/** A `_meta` key neither SDK acts on: it keeps a request off the fast path, so the SDK server answers it. */
const TO_SDK = { 'atrium.test/through-the-sdk': true };

type Era = 'legacy' | 'modern';

/**
 * The MCP door answers plain tools/list and tools/call without building an SDK server per request. These tests send
 * each request twice, once plain and once with a `_meta` key that sends it through the SDK, and expect the same
 * answer: same status, same Content-Type, same JSON (but for the per-request trace id and what a write creates).
 */
describe('MCP door fast path answers exactly what the SDK answers', () => {
  let app: TestApp;
  let alice: TestUser;
  let key: { key: string };
  let readOnlyKey: { key: string };
  /** The same scopes as `key`, narrowed: a cached list keyed by scopes alone would answer it `key`'s tools. */
  let restrictedKey: { key: string };
  /** Pinned to one project: its schemas lack project_id, so its list is cached apart too. */
  let pinnedKey: { key: string };
  let sdkServers: { legacy: number; modern: number };

  beforeAll(async () => {
    app = await startTestApp();
    alice = await makeUser(app);
    key = await makeApiKey(app, alice, { scopes: ['tasks:read', 'tasks:write'] });
    readOnlyKey = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
    const project = await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Fast' }).expect(201);
    pinnedKey = await makeApiKey(app, alice, {
      scopes: ['tasks:read', 'tasks:write'],
      projectIds: [project.body.data.id as string],
    });
    restrictedKey = await makeApiKey(app, alice, {
      scopes: ['tasks:read', 'tasks:write'],
      tools: ['list_tasks', 'get_task', 'create_task'],
      readOnly: true,
    });
    for (const title of ['one', 'two', 'three']) {
      await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(key.key))
        .send({ name: 'create_task', arguments: { title } })
        .expect(200);
    }
    const factory = app.app.get(McpServerFactory);
    sdkServers = { legacy: 0, modern: 0 };
    const create = factory.create.bind(factory);
    jest.spyOn(factory, 'create').mockImplementation((context) => {
      sdkServers.legacy += 1;
      return create(context);
    });
    const serveModern = factory.serveModern.bind(factory);
    jest.spyOn(factory, 'serveModern').mockImplementation((...args) => {
      sdkServers.modern += 1;
      return serveModern(...args);
    });
  }, 180_000);
  afterAll(async () => app?.close());

  const post = (
    era: Era,
    credential: string,
    method: string,
    params: Record<string, unknown>,
    throughSdk: boolean,
    path = MCP_PATH,
  ) => {
    const meta = { ...(era === 'modern' ? ENVELOPE : {}), ...(throughSdk ? TO_SDK : {}) };
    const request = app.http.post(path).set(bearer(credential)).set('Accept', ACCEPT);
    if (era === 'modern') {
      request.set('MCP-Protocol-Version', '2026-07-28').set('Mcp-Method', method);
      if (typeof params.name === 'string') request.set('Mcp-Name', params.name);
    } else {
      request.set('MCP-Protocol-Version', '2025-11-25');
    }
    return request.send({
      jsonrpc: '2.0',
      id: era === 'modern' ? 'req-1' : 41,
      method,
      params: Object.keys(meta).length ? { ...params, _meta: meta } : params,
    });
  };

  /** The answer with what differs per request (trace id) or per write (`masked` fields) replaced, text content parsed. */
  const comparable = (text: string, masked: string[] = []): unknown => {
    const mask = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(mask);
      if (typeof value !== 'object' || value === null) return value;
      return Object.fromEntries(
        Object.entries(value).map(([field, inner]) => {
          if (field === 'traceId' || masked.includes(field)) return [field, '…'];
          if (field === 'text' && typeof inner === 'string' && inner.startsWith('{'))
            return [field, mask(JSON.parse(inner))];
          return [field, mask(inner)];
        }),
      );
    };
    return mask(JSON.parse(text));
  };

  const both = async (
    era: Era,
    credential: string,
    method: string,
    params: Record<string, unknown>,
    masked: string[] = [],
    path = MCP_PATH,
  ) => {
    const before = { ...sdkServers };
    const plain = await post(era, credential, method, params, false, path);
    const fastServers = { legacy: sdkServers.legacy - before.legacy, modern: sdkServers.modern - before.modern };
    const sdk = await post(era, credential, method, params, true, path);
    expect(fastServers).toEqual({ legacy: 0, modern: 0 });
    expect(sdkServers[era] - before[era]).toBe(1);
    expect(plain.status).toBe(sdk.status);
    expect(plain.headers['content-type']).toBe(sdk.headers['content-type']);
    expect(comparable(plain.text, masked)).toEqual(comparable(sdk.text, masked));
    return JSON.parse(plain.text) as { result: Record<string, any> };
  };

  describe.each<Era>(['legacy', 'modern'])('revision %s', (era) => {
    it('tools/list: the same tools, schemas and cache hints', async () => {
      const answer = await both(era, key.key, 'tools/list', {});
      expect(answer.result.tools.map((t: { name: string }) => t.name)).toEqual(
        expect.arrayContaining(['list_tasks', 'create_task']),
      );
      const readOnly = await both(era, readOnlyKey.key, 'tools/list', {});
      expect(readOnly.result.tools.map((t: { name: string }) => t.name)).not.toContain('create_task');
      const restricted = await both(era, restrictedKey.key, 'tools/list', {});
      expect(restricted.result.tools.map((t: { name: string }) => t.name)).toEqual(['list_tasks', 'get_task']);
      const pinned = await both(era, pinnedKey.key, 'tools/list', {});
      const create = pinned.result.tools.find((t: { name: string }) => t.name === 'create_task');
      expect(create.inputSchema.properties).not.toHaveProperty('project_id');
    });

    it('tools/list on a narrowed URL: the narrowed tools, cached apart from the full list', async () => {
      const narrowed = await both(era, key.key, 'tools/list', {}, [], `${MCP_PATH}/x/tasks/readonly`);
      expect(narrowed.result.tools.map((t: { name: string }) => t.name)).toEqual([
        'list_tasks',
        'get_task',
        'search_tasks',
        'task_stats',
      ]);
    });

    it('tools/call of a list tool: the rows as text and as structuredContent', async () => {
      const answer = await both(era, key.key, 'tools/call', { name: 'list_tasks', arguments: { limit: 2 } });
      expect(answer.result.structuredContent).toMatchObject({
        items: [{ creator_id: alice.id }, { creator_id: alice.id }],
        truncated: true,
      });
      expect(JSON.parse(answer.result.content[0].text)).toEqual(answer.result.structuredContent);
    });

    it('tools/call of a list tool: quotes, backslashes, line breaks and non-ASCII text escaped as the SDK does', async () => {
      const title = `"quoted" back\\slash\nnew line \u2028 café 漢字 😀 ${era}`;
      await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(key.key))
        .send({ name: 'create_task', arguments: { title } })
        .expect(200);
      const answer = await both(era, key.key, 'tools/call', { name: 'list_tasks', arguments: { limit: 1 } });
      expect(answer.result.structuredContent.items[0].title).toBe(title);
      expect(JSON.parse(answer.result.content[0].text)).toEqual(answer.result.structuredContent);
    });

    it('tools/call failures are the same isError results', async () => {
      const bad = await both(era, key.key, 'tools/call', { name: 'list_tasks', arguments: { limit: 'many' } });
      expect(bad.result).toMatchObject({ isError: true, structuredContent: { error: { code: 'invalid_argument' } } });
      const denied = await both(era, readOnlyKey.key, 'tools/call', {
        name: 'create_task',
        arguments: { title: 'nope' },
      });
      expect(denied.result).toMatchObject({
        isError: true,
        structuredContent: { error: { code: 'insufficient_scope' } },
      });
      const notAllowed = await both(era, restrictedKey.key, 'tools/call', {
        name: 'create_task',
        arguments: { title: 'nope' },
      });
      expect(notAllowed.result).toMatchObject({
        isError: true,
        structuredContent: { error: { code: 'tool_not_allowed' } },
      });
      await both(era, restrictedKey.key, 'tools/call', { name: 'list_tasks', arguments: { limit: 2 } });
    });

    it('tools/call of a write tool: the created object', async () => {
      const answer = await both(
        era,
        key.key,
        'tools/call',
        { name: 'create_task', arguments: { title: `written on ${era}` } },
        ['id', 'created_at', 'updated_at'],
      );
      expect(answer.result.structuredContent).toMatchObject({ title: `written on ${era}`, status: 'todo' });
    });
  });

  it('requests the SDK must answer still reach it: an unknown tool, a cursor, a progress token, a missing Mcp-Name', async () => {
    const before = { ...sdkServers };
    const unknown = await post('legacy', key.key, 'tools/call', { name: 'no_such_tool', arguments: {} }, false);
    expect(unknown.body).toMatchObject({ error: { code: -32602 } });
    await post('legacy', key.key, 'tools/list', { cursor: 'x' }, false);
    const progress = await app.http
      .post(MCP_PATH)
      .set(bearer(key.key))
      .set('Accept', ACCEPT)
      .send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'list_tasks', arguments: {}, _meta: { progressToken: 'p' } },
      });
    expect(progress.headers['content-type']).toMatch(/text\/event-stream/);
    const noName = await app.http
      .post(MCP_PATH)
      .set(bearer(key.key))
      .set('Accept', ACCEPT)
      .set('MCP-Protocol-Version', '2026-07-28')
      .set('Mcp-Method', 'tools/call')
      .send({
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'list_tasks', arguments: {}, _meta: ENVELOPE },
      });
    expect(noName.status).toBeGreaterThanOrEqual(200);
    expect(sdkServers.legacy - before.legacy).toBe(3);
    expect(sdkServers.modern - before.modern).toBe(1);
  });
  it('a 2026-07-28 envelope is checked by the SDK on every request that differs: a bad one after a good one is still refused', async () => {
    const send = (meta: Record<string, unknown>, headers: Record<string, string>, id: string | number = 5) =>
      app.http
        .post(MCP_PATH)
        .set(bearer(key.key))
        .set('Accept', ACCEPT)
        .set(headers)
        .send({ jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: meta } });
    const modernHeaders = { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' };
    const before = { ...sdkServers };
    for (const id of [0, -7, 2 ** 40, 'id with "quotes", \\ and ünïcode']) {
      const good = await send(ENVELOPE, modernHeaders, id);
      expect(good.status).toBe(200);
      expect(good.body).toMatchObject({ jsonrpc: '2.0', id, result: { tools: expect.any(Array) } });
    }
    expect(sdkServers.modern - before.modern).toBe(0);
    const badCapabilities = {
      ...ENVELOPE,
      'io.modelcontextprotocol/clientCapabilities': { elicitation: 'yes' },
    };
    for (let i = 0; i < 2; i += 1) {
      const bad = await send(badCapabilities, modernHeaders);
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32602 } });
    }
    // A modern header without the envelope is the classifier's refusal, not a 2025-era answer.
    const noEnvelope = await send({}, modernHeaders);
    expect(noEnvelope.status).toBe(400);
    expect(noEnvelope.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32602 } });
    // An unknown 2025-era revision is the v1 transport's 400.
    const unknownRevision = await send({}, { 'MCP-Protocol-Version': '2024-01-01' });
    expect(unknownRevision.status).toBe(400);
  });
});
