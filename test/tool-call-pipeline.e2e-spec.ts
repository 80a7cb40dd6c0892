import { AuditService } from '../src/modules/audit/audit.service.js';
import { CredentialRegistry } from '../src/modules/credentials/credential-registry.js';
import { ToolRegistry } from '../src/modules/tool-kit/tool-registry.js';
import { McpServerFactory } from '../src/modules/tools/mcp-server.factory.js';
import { toolCallBody } from '../src/modules/tools/tool-call-body.js';
import { ToolCallPipeline } from '../src/modules/tools/tool-call-pipeline.js';
import { bearer, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { FakeLlmServer } from './support/fake-llm-server.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/wait.js';

const MCP_PATH = '/api/v1/public/mcp';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'pipeline-test', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
/** A `_meta` key neither SDK acts on: it keeps a request off the fast path, so an SDK server answers it. */
const TO_SDK = { 'atrium.test/through-the-sdk': true };

type Step = 'parse' | 'spend' | 'resolve' | 'authorise' | 'validate' | 'invoke' | 'run' | 'sdkServer';

/**
 * Every door hands a tool call to the one pipeline (ToolCallPipeline), and each step runs once per call: the body is
 * read once, the budget spent once, the tool looked up once, its scope checked once, its arguments validated once, the
 * tool run once inside its audit entry. Counted on the services that do each step, in-process, on the JSON door, both
 * MCP revisions by their fast path and through the SDK, and the agent loop, whose audit entries have the doors' shape.
 */
describe('one tool call pipeline: each step once per call, on every door', () => {
  let app: TestApp;
  let llm: FakeLlmServer;
  let alice: TestUser;
  let key: string;
  let readOnlyKey: string;
  let projectId: string;
  let counts: Record<Step, number>;
  let doors: string[];

  const reset = () => {
    counts = { parse: 0, spend: 0, resolve: 0, authorise: 0, validate: 0, invoke: 0, run: 0, sdkServer: 0 };
    doors = [];
  };

  /** Counts the calls of `object[method]`, still running the real thing. */
  function count<T extends object>(step: Step, object: T, method: keyof T & string): void {
    const original = (object[method] as (...args: unknown[]) => unknown).bind(object);
    jest.spyOn(object, method as never).mockImplementation(((...args: unknown[]) => {
      counts[step] += 1;
      return original(...args);
    }) as never);
  }

  beforeAll(async () => {
    llm = await new FakeLlmServer().start();
    app = await startTestApp({
      env: {
        DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '10' : '1',
        LLM_PROVIDER: 'openai',
        LLM_BASE_URL: llm.baseUrl,
        LLM_API_KEY: 'sk-test-fake',
        LLM_MODEL: 'fake-model-1',
      },
    });
    alice = await makeUser(app);
    key = (await makeApiKey(app, alice, { scopes: ['tasks:read', 'tasks:write'] })).key;
    readOnlyKey = (await makeApiKey(app, alice, { scopes: ['tasks:read'] })).key;
    projectId = (await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Pipeline' }).expect(201))
      .body.data.id;
    const pipeline = app.app.get(ToolCallPipeline);
    count('parse', toolCallBody, 'parse');
    count('spend', app.app.get(CredentialRegistry), 'spend');
    count('resolve', app.app.get(ToolRegistry), 'get');
    count('authorise', pipeline, 'authorise');
    count('validate', pipeline, 'validate');
    count('invoke', app.app.get(AuditService), 'runToolCall');
    const run = pipeline.run.bind(pipeline);
    jest.spyOn(pipeline, 'run').mockImplementation(((request: Parameters<typeof run>[0]) => {
      counts.run += 1;
      doors.push(request.door);
      return run(request);
    }) as never);
    const factory = app.app.get(McpServerFactory);
    count('sdkServer', factory, 'create');
    count('sdkServer', factory, 'serveModern');
  }, 180_000);
  afterAll(async () => {
    await app?.close();
    await llm?.stop();
  });
  beforeEach(reset);

  const json = (
    credential: string,
    name: string,
    args: Record<string, unknown>,
    headers: Record<string, string> = {},
  ) => app.http.post(`${MCP_PATH}/call`).set(bearer(credential)).set(headers).send({ name, arguments: args });

  const mcp = (
    era: 'legacy' | 'modern',
    credential: string,
    method: string,
    params: Record<string, unknown>,
    throughSdk = false,
  ) => {
    const meta = { ...(era === 'modern' ? ENVELOPE : {}), ...(throughSdk ? TO_SDK : {}) };
    const request = app.http
      .post(MCP_PATH)
      .set(bearer(credential))
      .set('Accept', 'application/json, text/event-stream');
    if (era === 'modern') {
      request.set('MCP-Protocol-Version', '2026-07-28').set('Mcp-Method', method);
      if (typeof params.name === 'string') request.set('Mcp-Name', params.name);
    } else {
      request.set('MCP-Protocol-Version', '2025-11-25');
    }
    return request.send({
      jsonrpc: '2.0',
      id: 7,
      method,
      params: Object.keys(meta).length ? { ...params, _meta: meta } : params,
    });
  };

  /** One of everything, as a call that ran: what each door's successful call costs. */
  const ONCE = { spend: 1, resolve: 1, authorise: 1, validate: 1, invoke: 1, run: 1 };

  it('JSON door: one body read, one spend, one lookup, one scope check, one validation, one run', async () => {
    await json(key, 'list_tasks', { limit: 5 }).expect(200);
    expect(counts).toEqual({ ...ONCE, parse: 1, sdkServer: 0 });
    expect(doors).toEqual(['json']);

    // A write with an Idempotency-Key, then its replay: the replay runs every step but the tool.
    reset();
    await json(key, 'create_task', { title: 'once' }, { 'Idempotency-Key': 'pipeline-1' }).expect(200);
    expect(counts).toEqual({ ...ONCE, parse: 1, sdkServer: 0 });
    reset();
    const replay = await json(key, 'create_task', { title: 'once' }, { 'Idempotency-Key': 'pipeline-1' }).expect(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(counts).toEqual({ ...ONCE, invoke: 0, parse: 1, sdkServer: 0 });
  });

  it('JSON door refusals stop at their step, each earlier step having run once', async () => {
    const denied = await json(readOnlyKey, 'create_task', { title: 'nope' }).expect(403);
    expect(denied.headers['www-authenticate']).toMatch(/insufficient_scope.*scope="tasks:write"/);
    expect(counts).toEqual({ ...ONCE, validate: 0, invoke: 0, parse: 1, sdkServer: 0 });

    reset();
    await json(key, 'no_such_tool', {}).expect(404);
    expect(counts).toEqual({ ...ONCE, authorise: 0, validate: 0, invoke: 0, parse: 1, sdkServer: 0 });

    reset();
    await json(key, 'list_tasks', { limit: 'many' }).expect(400);
    expect(counts).toEqual({ ...ONCE, invoke: 0, parse: 1, sdkServer: 0 });

    // A body that is not a call never reaches the pipeline; the limit was still spent, once.
    reset();
    await app.http.post(`${MCP_PATH}/call`).set(bearer(key)).send({ name: 'list_tasks', extra: 1 }).expect(400);
    expect(counts).toMatchObject({ parse: 1, spend: 1, authorise: 0, run: 0 });
  });

  describe.each(['legacy', 'modern'] as const)('MCP door, revision %s', (era) => {
    it.each([
      ['fast path', false, 0],
      ['SDK server', true, 1],
    ] as const)('tools/call by the %s: each step once, the body never re-read', async (_path, throughSdk, servers) => {
      const answer = await mcp(era, key, 'tools/call', { name: 'list_tasks', arguments: { limit: 5 } }, throughSdk);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text).result.isError).toBeUndefined();
      expect(counts).toEqual({ ...ONCE, parse: 0, sdkServer: servers });
      expect(doors).toEqual(['mcp']);
    });

    it('a refused tools/call: one spend, one lookup, one scope check, nothing run', async () => {
      const answer = await mcp(era, readOnlyKey, 'tools/call', { name: 'create_task', arguments: { title: 'x' } });
      expect(JSON.parse(answer.text).result).toMatchObject({
        isError: true,
        structuredContent: { error: { code: 'insufficient_scope' } },
      });
      expect(counts).toEqual({ ...ONCE, validate: 0, invoke: 0, parse: 0, sdkServer: 0 });
    });

    it('tools/list spends the budget once and calls nothing', async () => {
      await mcp(era, key, 'tools/list', {}).expect(200);
      expect(counts).toMatchObject({ spend: 1, resolve: 0, run: 0, invoke: 0 });
    });
  });

  it('the agent loop goes through the same pipeline, and its audit entry has the doors’ shape', async () => {
    llm.play(
      { toolCalls: [{ name: 'create_task', arguments: { title: 'agent pipeline task', project_id: projectId } }] },
      { content: 'Done.' },
    );
    const started = await app.http
      .post('/api/agent/execute')
      .set(bearer(alice.token))
      .send({ projectId, input: 'Create the task' })
      .expect(202);
    const run = await pollUntil(
      'the run finished',
      async () =>
        (await app.http.get(`/api/agent/status/${started.body.data.jobId}`).set(bearer(alice.token)).expect(200)).body
          .data,
      (state: { status: string }) => ['succeeded', 'failed', 'cancelled'].includes(state.status),
      { timeoutMs: 30_000 },
    );
    expect(run.status).toBe('succeeded');
    expect(doors).toEqual(['agent']);
    expect(counts).toEqual({ ...ONCE, parse: 0, sdkServer: 0 });

    // The same call by a key, for comparison: the two entries differ only in who acted.
    await json(key, 'create_task', { title: 'key pipeline task', project_id: projectId }).expect(200);
    await app.app.get(AuditService).flush();
    const entries = (
      await app.http.get('/api/audit').query({ action: 'tool.call', limit: '100' }).set(bearer(alice.token)).expect(200)
    ).body.data.items as { actor: { via: string }; details: { tool: string; arguments: { title?: string } } }[];
    const byAgent = entries.find((entry) => entry.details.arguments?.title === 'agent pipeline task');
    const byKey = entries.find((entry) => entry.details.arguments?.title === 'key pipeline task');
    expect(byAgent?.actor.via).toBe('agent_run');
    expect(byKey?.actor.via).toBe('api_key');
    const shape = (entry: object | undefined) => ({
      entry: Object.keys(entry ?? {}).sort(),
      details: Object.keys((entry as { details?: object } | undefined)?.details ?? {}).sort(),
    });
    expect(shape(byAgent)).toEqual(shape(byKey));
    expect(byAgent).toMatchObject({ action: 'tool.call', outcome: { status: 'ok' }, details: { tool: 'create_task' } });
  });
});
