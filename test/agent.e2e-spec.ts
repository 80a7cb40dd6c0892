import { DatabasePool } from '../src/database/database-pool.js';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { raceExecuteAndCancel } from './support/cancel-race.js';
import { FakeLlmServer, toolData } from './support/fake-llm-server.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/wait.js';

/** Agent runs against a fake OpenAI-compatible model: the tool loop, permissions, limits, cancel, retries, isolation. */
describe('agent runs (openai provider, fake model)', () => {
  let app: TestApp;
  let llm: FakeLlmServer;
  let owner: TestUser;
  let viewer: TestUser;
  let stranger: TestUser;
  let projectId: string;
  let db: DatabasePool;

  const FINAL = ['succeeded', 'failed', 'cancelled'];

  async function execute(user: TestUser | string, body: Record<string, unknown>, expected = 202) {
    const token = typeof user === 'string' ? user : user.token;
    return app.http.post('/api/agent/execute').set(bearer(token)).send(body).expect(expected);
  }

  async function status(user: TestUser, jobId: string) {
    return (await app.http.get(`/api/agent/status/${jobId}`).set(bearer(user.token)).expect(200)).body.data;
  }

  const waitFor = (
    user: TestUser,
    jobId: string,
    done: (run: any) => boolean = (run) => FINAL.includes(run.status),
    timeoutMs = 20_000,
  ) => pollUntil(`run ${jobId} in the expected state`, () => status(user, jobId), done, { timeoutMs });

  async function taskCount(title: string): Promise<number> {
    const [row] = await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = $1`, [title]);
    return row.n;
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
        LLM_MAX_RETRIES: '2',
        AGENT_STEP_TIMEOUT_MS: '2500',
      },
    });
    db = app.app.get(DatabasePool);
    owner = await makeUser(app);
    viewer = await makeUser(app);
    stranger = await makeUser(app);
    projectId = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'Agents' }).expect(201))
      .body.data.id;
    await app.http
      .post(`/api/projects/${projectId}/members`)
      .set(bearer(owner.token))
      .send({ userId: viewer.id, role: 'viewer' })
      .expect(201);
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await llm?.stop();
  });

  it('runs the tool loop end to end: the model asks create_task, the task really exists, then the final answer', async () => {
    llm.play(
      {
        toolCalls: [
          { name: 'create_task', arguments: { title: 'Agent-made task', project_id: projectId, priority: 'high' } },
        ],
      },
      { content: 'I created the task.' },
    );
    const started = await execute(owner, { projectId, input: 'Please create a task called Agent-made task' });
    expect(started.body.data).toEqual({ jobId: expect.any(String), status: 'queued' });
    const run = await waitFor(owner, started.body.data.jobId);

    expect(run).toMatchObject({
      jobId: started.body.data.jobId,
      projectId,
      status: 'succeeded',
      output: 'I created the task.',
      error: null,
      input: 'Please create a task called Agent-made task',
    });
    expect(run.steps.map((s: any) => [s.index, s.type, s.tool ?? null, s.status])).toEqual([
      [0, 'message', null, 'ok'],
      [1, 'tool_call', 'create_task', 'ok'],
      [2, 'message', null, 'ok'],
    ]);
    expect(run.steps[1].arguments).toEqual({ title: 'Agent-made task', project_id: projectId, priority: 'high' });
    expect(run.steps[1].resultSummary).toMatch(/title=Agent-made task/);
    for (const step of run.steps)
      expect(Date.parse(step.finishedAt)).toBeGreaterThanOrEqual(Date.parse(step.startedAt));
    expect(run.startedAt && run.finishedAt && run.createdAt).toBeTruthy();

    const [task] = await db.query(`SELECT creator_id, project_id, priority FROM tasks WHERE title = 'Agent-made task'`);
    expect(task).toEqual({ creator_id: owner.id, project_id: projectId, priority: 'high' });

    // The wire format: bearer key, model, tools with JSON Schemas, and the tool result sent back to the model.
    const [first, second] = llm.requests;
    expect(first.headers.authorization).toBe('Bearer sk-test-fake');
    expect(first.body.model).toBe('fake-model-1');
    const createTool = first.body.tools!.find((t) => t.function.name === 'create_task')!;
    expect(createTool.type).toBe('function');
    expect(createTool.function.parameters).toMatchObject({
      type: 'object',
      properties: { title: expect.any(Object) },
      required: ['title'],
    });
    const toolMessage = second.body.messages.find((m) => m.role === 'tool')!;
    expect(toolMessage.tool_call_id).toBe(second.body.messages.find((m) => m.role === 'assistant')!.tool_calls![0].id);
    expect(toolData(toolMessage.content)).toMatchObject({ title: 'Agent-made task', creator_id: owner.id });
  });

  it("never executes a tool outside the caller's scopes: a viewer gets read tools only, and the model gets an error back", async () => {
    llm.play(
      { toolCalls: [{ name: 'create_task', arguments: { title: 'Viewer sneaks a task' } }] },
      { content: 'I could not create it.' },
    );
    const started = await execute(viewer, { projectId, input: 'Create a task please' });
    const run = await waitFor(viewer, started.body.data.jobId);
    expect(run.status).toBe('succeeded');
    expect(run.steps[1]).toMatchObject({ type: 'tool_call', tool: 'create_task', status: 'error' });
    expect(run.steps[1].resultSummary).toMatch(/tool_not_allowed/);
    expect(await taskCount('Viewer sneaks a task')).toBe(0);
    const offered = llm.requests[0].body.tools!.map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(['list_tasks', 'get_task']));
    expect(offered).not.toContain('create_task');
    expect(offered).not.toContain('delete_task');
    expect(toolData(llm.requests[1].body.messages.find((m) => m.role === 'tool')!.content).error.code).toBe(
      'tool_not_allowed',
    );
  });

  it("never executes a tool outside the request's allowlist", async () => {
    llm.play(
      {
        toolCalls: [
          { name: 'create_task', arguments: { title: 'Outside the allowlist' } },
          { name: 'list_tasks', arguments: {} },
        ],
      },
      { content: 'ok' },
    );
    const started = await execute(owner, { projectId, input: 'List my tasks', tools: ['list_tasks'] });
    const run = await waitFor(owner, started.body.data.jobId);
    expect(llm.requests[0].body.tools!.map((t) => t.function.name)).toEqual(['list_tasks']);
    expect(run.steps.filter((s: any) => s.type === 'tool_call').map((s: any) => [s.tool, s.status])).toEqual([
      ['create_task', 'error'],
      ['list_tasks', 'ok'],
    ]);
    expect(await taskCount('Outside the allowlist')).toBe(0);
  });

  it('reports bad arguments from the model as a tool error without running it', async () => {
    llm.play(
      {
        toolCalls: [
          { name: 'create_task', arguments: '{"title": ' },
          { name: 'create_task', arguments: { title: '' } },
        ],
      },
      { content: 'gave up' },
    );
    const started = await execute(owner, { projectId, input: 'x' });
    const run = await waitFor(owner, started.body.data.jobId);
    expect(run.steps[1]).toMatchObject({ status: 'error', arguments: '{"title": ' });
    expect(run.steps[2].status).toBe('error');
    expect(run.steps[2].resultSummary).toMatch(/invalid_argument/);
  });

  it('stops at maxSteps', async () => {
    llm.play(...Array.from({ length: 5 }, () => ({ toolCalls: [{ name: 'list_tasks', arguments: {} }] })));
    const started = await execute(owner, { projectId, input: 'loop forever', maxSteps: 2 });
    const run = await waitFor(owner, started.body.data.jobId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/maxSteps \(2\)/);
    expect(llm.requests).toHaveLength(2);
    expect(run.steps.filter((s: any) => s.type === 'message')).toHaveLength(2);
  });

  it('enforces the per-step timeout on a model that does not answer', async () => {
    llm.play({ hang: true });
    const begun = Date.now();
    const started = await execute(owner, { projectId, input: 'slow' });
    const run = await waitFor(owner, started.body.data.jobId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/Step timed out.*2500 ms/);
    expect(Date.now() - begun).toBeLessThan(10_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(llm.requests[0].abortedAt).toBeDefined();
  });

  it('cancels a running run promptly, aborting the slow model request', async () => {
    llm.play({ hang: true });
    const started = await execute(owner, { projectId, input: 'think hard' });
    const jobId = started.body.data.jobId;
    await waitFor(owner, jobId, (run) => run.status === 'running');
    await pollUntil(
      'the model request',
      async () => llm.requests.length,
      (n) => n > 0,
      { timeoutMs: 2_500, intervalMs: 50 },
    );
    const begun = Date.now();
    const cancelled = await app.http.post(`/api/agent/cancel/${jobId}`).set(bearer(owner.token)).expect(202);
    expect(cancelled.body.data).toEqual({ jobId, status: 'cancelled' });
    // The answer does not wait for the model (which never answers); the bound is loose for a busy CI box.
    expect(Date.now() - begun).toBeLessThan(5_000);
    const run = await status(owner, jobId);
    expect(run.status).toBe('cancelled');
    expect(run.finishedAt).toBeTruthy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(llm.requests[0].abortedAt).toBeDefined();

    const again = await app.http.post(`/api/agent/cancel/${jobId}`).set(bearer(owner.token)).expect(409);
    expect(again.body.error.code).toBe('STATE_CONFLICT');
  });

  it('a cancel answered 202 always ends cancelled; a run that finished first answers 409 (raced 40 times)', async () => {
    // Every model call answers a final message: at once for half the runs (they race the cancel to their end and
    // may finish first: 409), after 150 ms for the other half, so a cancel sent within ~60 ms of the start lands
    // mid-run however fast the machine is (202) and both outcomes are checked in every run of this test.
    llm.play(
      ...Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? { content: 'quick' } : { content: 'slow', delayMs: 150 })),
    );
    const tally = await raceExecuteAndCancel(app, owner, { projectId, input: 'quick one' }, 40);
    expect(tally.broken).toEqual([]);
    expect(tally.wrongConflicts).toEqual([]);
    expect(tally.accepted + tally.conflicts).toBe(40);
    expect(tally.accepted).toBeGreaterThan(0);
  }, 180_000);

  it('retries 500 and 429 with backoff, then succeeds', async () => {
    llm.play({ status: 500 }, { status: 429, headers: { 'retry-after': '0' } }, { content: 'third time lucky' });
    const started = await execute(owner, { projectId, input: 'retry please' });
    const run = await waitFor(owner, started.body.data.jobId);
    expect(run).toMatchObject({ status: 'succeeded', output: 'third time lucky' });
    expect(llm.requests).toHaveLength(3);
  });

  it('fails with a clear reason when the model keeps failing', async () => {
    llm.play({ status: 503 }, { status: 500 }, { status: 502 }, { content: 'never reached' });
    const started = await execute(owner, { projectId, input: 'doomed' });
    const run = await waitFor(owner, started.body.data.jobId);
    expect(run.status).toBe('failed');
    expect(run.error).toBe('LLM service answered HTTP 502 (gave up after 3 attempts)');
    expect(llm.requests).toHaveLength(3);

    llm.play({ status: 400 }, { content: 'never reached' });
    const bad = await waitFor(owner, (await execute(owner, { projectId, input: 'bad request' })).body.data.jobId);
    expect(bad.error).toMatch(/HTTP 400/);
    expect(llm.requests).toHaveLength(1); // a 4xx other than 429 is not retried
  });

  it('validates bodies (400) and membership (404)', async () => {
    const cases: Record<string, unknown>[] = [
      {},
      { projectId, input: '' },
      { projectId, input: 'x'.repeat(8001) },
      { projectId: 'not-a-uuid', input: 'x' },
      { projectId, input: 'x', maxSteps: 0 },
      { projectId, input: 'x', maxSteps: 21 },
      { projectId, input: 'x', maxSteps: 2.5 },
      { projectId, input: 'x', tools: 'list_tasks' },
      { projectId, input: 'x', tools: [42] },
      { projectId, input: 'x', extra: true },
    ];
    for (const body of cases) {
      const res = await execute(owner, body, 400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    const unknown = await execute(owner, { projectId, input: 'x', tools: ['list_tasks', 'launch_rockets'] }, 400);
    expect(unknown.body.error.message).toMatch(/launch_rockets/);
    await execute(stranger, { projectId, input: 'x' }, 404);
    await app.http.post('/api/agent/execute').send({ projectId, input: 'x' }).expect(401);
  });

  it("shows status and history to the run's caller only; other users, unknown and malformed ids are 404", async () => {
    llm.play({ content: 'one' }, { content: 'two' });
    const a = (await execute(owner, { projectId, input: 'first' })).body.data.jobId;
    await waitFor(owner, a);
    const b = (await execute(owner, { projectId, input: 'second' })).body.data.jobId;
    await waitFor(owner, b);

    for (const path of [
      `/api/agent/status/${a}`,
      `/api/agent/status/00000000-0000-4000-8000-000000000000`,
      '/api/agent/status/nope',
      "/api/agent/status/'%20OR%201=1",
    ]) {
      const res = await app.http.get(path).set(bearer(stranger.token)).expect(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    await app.http.get('/api/agent/status/nope').set(bearer(owner.token)).expect(404);
    await app.http.post(`/api/agent/cancel/${a}`).set(bearer(stranger.token)).expect(404);
    await app.http.post('/api/agent/cancel/nope').set(bearer(owner.token)).expect(404);

    const strangers = (await app.http.get('/api/agent/history').set(bearer(stranger.token)).expect(200)).body.data;
    expect(strangers).toEqual({ items: [], nextCursor: null });
    const viewers = (await app.http.get('/api/agent/history').set(bearer(viewer.token)).expect(200)).body.data.items;
    expect(viewers.every((item: any) => item.jobId !== a && item.jobId !== b)).toBe(true);

    const page1 = (await app.http.get('/api/agent/history?limit=1').set(bearer(owner.token)).expect(200)).body.data;
    expect(page1.items.map((i: any) => i.jobId)).toEqual([b]);
    expect(page1.items[0]).toMatchObject({
      status: 'succeeded',
      output: 'two',
      projectId,
      input: 'second',
      stepCount: 1,
    });
    expect(page1.nextCursor).toEqual(expect.any(String));
    const page2 = (
      await app.http.get(`/api/agent/history?limit=1&cursor=${page1.nextCursor}`).set(bearer(owner.token)).expect(200)
    ).body.data;
    expect(page2.items.map((i: any) => i.jobId)).toEqual([a]);

    const failed = (
      await app.http
        .get(`/api/agent/history?status=failed&projectId=${projectId}&limit=200`)
        .set(bearer(owner.token))
        .expect(200)
    ).body.data.items;
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((item: any) => item.status === 'failed')).toBe(true);
    await app.http.get('/api/agent/history?status=exploded').set(bearer(owner.token)).expect(400);
    await app.http.get('/api/agent/history?cursor=garbage').set(bearer(owner.token)).expect(400);
  });

  it('honours Idempotency-Key on execute', async () => {
    llm.play({ content: 'once' }, { content: 'twice' });
    const body = { projectId, input: 'idempotent please' };
    const first = await app.http
      .post('/api/agent/execute')
      .set(bearer(owner.token))
      .set('Idempotency-Key', 'agent-key-1')
      .send(body)
      .expect(202);
    const repeat = await app.http
      .post('/api/agent/execute')
      .set(bearer(owner.token))
      .set('Idempotency-Key', 'agent-key-1')
      .send(body)
      .expect(202);
    expect(repeat.body.data.jobId).toBe(first.body.data.jobId);
    const conflict = await app.http
      .post('/api/agent/execute')
      .set(bearer(owner.token))
      .set('Idempotency-Key', 'agent-key-1')
      .send({ ...body, input: 'other' })
      .expect(409);
    expect(conflict.body.error.code).toBe('CONFLICT');
    await waitFor(owner, first.body.data.jobId);
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM agent_runs WHERE input = 'idempotent please'`);
    expect(n).toBe(1);
  });

  it('accepts project session tokens in their own project only; a viewer token gets read tools', async () => {
    const viewerToken = (
      await app.http
        .post(`/api/projects/${projectId}/session-tokens`)
        .set(bearer(owner.token))
        .send({ name: 'ro', role: 'viewer' })
        .expect(201)
    ).body.data.token;
    const other = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'Other' }).expect(201))
      .body.data.id;
    await execute(viewerToken, { projectId: other, input: 'x' }, 401);

    llm.play({ toolCalls: [{ name: 'create_task', arguments: { title: 'Token task' } }] }, { content: 'done' });
    const jobId = (await execute(viewerToken, { projectId, input: 'make a task' })).body.data.jobId;
    const run = await waitFor(owner, jobId); // the token acts as its owner: the owner sees the run
    expect(run.steps[1]).toMatchObject({ tool: 'create_task', status: 'error' });
    expect(await taskCount('Token task')).toBe(0);
    expect(llm.requests[0].body.tools!.map((t) => t.function.name)).not.toContain('create_task');
    const viaToken = (await app.http.get(`/api/agent/status/${jobId}`).set(bearer(viewerToken)).expect(200)).body.data;
    expect(viaToken.jobId).toBe(jobId);
    const history = (await app.http.get('/api/agent/history').set(bearer(viewerToken)).expect(200)).body.data.items;
    expect(history.every((item: any) => item.projectId === projectId)).toBe(true);
  });
});
