import { createServer, get as httpGet, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { bearer, callTool, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil, sleep, waitFor } from './support/wait.js';

/**
 * Fair shares between users (docs/operations.md "Fair shares and limits"), on whichever queue backend the run
 * selects: BullMQ on Redis with TEST_REDIS_URL, else BullMQ's PostgreSQL backend in the app's database.
 */

/** An OpenAI-compatible model that answers every call with a final message after `delayMs`: a run is one slow step. */
class SlowModel {
  private server?: Server;
  baseUrl = '';
  constructor(private readonly delayMs: number) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              id: 'chatcmpl-slow',
              object: 'chat.completion',
              created: Math.floor(Date.now() / 1000),
              model: 'slow-model',
              choices: [{ index: 0, message: { role: 'assistant', content: 'Done.' }, finish_reason: 'stop' }],
              usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
            }),
          );
        }, this.delayMs);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

const project = async (app: TestApp, user: TestUser, name: string): Promise<string> =>
  (await app.http.post('/api/projects').set(bearer(user.token)).send({ name }).expect(201)).body.data.id;

const upload = (app: TestApp, user: TestUser, projectId: string, name: string, text: string) =>
  app.http
    .post('/api/documents/upload')
    .set(bearer(user.token))
    .field('projectId', projectId)
    .attach('file', Buffer.from(text), name);

const documentStatus = async (app: TestApp, user: TestUser, id: string): Promise<string> =>
  (await app.http.get(`/api/documents/${id}`).set(bearer(user.token)).expect(200)).body.data.status;

const runView = async (app: TestApp, user: TestUser, id: string) =>
  (await app.http.get(`/api/agent/status/${id}`).set(bearer(user.token)).expect(200)).body.data;

/** Milliseconds from the request until `done` holds. */
async function timed(
  label: string,
  start: () => Promise<string>,
  done: (id: string) => Promise<boolean>,
  timeoutMs = 90_000,
): Promise<{ id: string; ms: number }> {
  const started = performance.now();
  const id = await start();
  await pollUntil(
    label,
    () => done(id),
    (ok) => ok,
    { timeoutMs, intervalMs: 50 },
  );
  return { id, ms: performance.now() - started };
}

function prose(bytes: number): string {
  const words = [
    'harbor',
    'lantern',
    'meadow',
    'quartz',
    'ember',
    'willow',
    'cobalt',
    'saffron',
    'glacier',
    'thistle',
    'orchid',
    'basalt',
  ];
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i += 1) {
    const sentence = `Paragraph ${i} tells of ${words[i % 12]} and ${words[(i * 7) % 12]} near the ${words[(i * 5) % 12]} ridge. `;
    parts.push(i % 8 === 7 ? `${sentence}\n\n` : sentence);
    size += sentence.length;
  }
  return parts.join('');
}

describe('fair shares: scheduling across users', () => {
  const RUN_STEP_MS = 1_500;
  let app: TestApp;
  let model: SlowModel;

  beforeAll(async () => {
    model = await new SlowModel(RUN_STEP_MS).start();
    app = await startTestApp({
      env: {
        DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '10' : '1',
        LLM_PROVIDER: 'openai',
        LLM_BASE_URL: model.baseUrl,
        LLM_MODEL: 'slow-model',
        AGENT_MAX_ACTIVE_PER_USER: '40',
        INDEX_SLICE_MS: '300',
        INDEX_SLICE_CHUNKS: '100000',
        RATE_LIMIT_USER_PER_MIN: '100000',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await model?.stop();
  });

  it("a user's backlog of runs does not hold another user's run: it finishes within about 2x its idle time", async () => {
    const bulk = await makeUser(app);
    const small = await makeUser(app);
    const bulkProject = await project(app, bulk, 'Bulk runs');
    const smallProject = await project(app, small, 'Small runs');
    const execute = async (user: TestUser, projectId: string) =>
      (
        await app.http
          .post('/api/agent/execute')
          .set(bearer(user.token))
          .send({ projectId, input: 'summarise', approval: 'none' })
          .expect(202)
      ).body.data.jobId as string;
    const finished = async (user: TestUser, id: string) => (await runView(app, user, id)).status === 'succeeded';

    const idle = await timed(
      'idle run',
      () => execute(small, smallProject),
      (id) => finished(small, id),
    );
    // Four runs at a time per process: 24 make six waves of one slow model call each.
    const backlog = await Promise.all(Array.from({ length: 24 }, () => execute(bulk, bulkProject)));
    const behind = await timed(
      'run behind a backlog',
      () => execute(small, smallProject),
      (id) => finished(small, id),
    );

    const bulkLeft = await Promise.all(backlog.map(async (id) => (await runView(app, bulk, id)).status));
    expect(bulkLeft.filter((status) => status === 'queued').length).toBeGreaterThan(0); // it went ahead of the backlog
    expect(behind.ms).toBeLessThanOrEqual(2 * idle.ms + 1_000);
    for (const id of backlog)
      await pollUntil(
        'bulk run',
        () => runView(app, bulk, id),
        (run) => run.status === 'succeeded',
        { timeoutMs: 60_000, intervalMs: 200 },
      );
  }, 180_000);

  it("a large document is indexed in slices: another user's one-line document is indexed meanwhile, within about 2x its idle time", async () => {
    const bulk = await makeUser(app);
    const small = await makeUser(app);
    const bulkProject = await project(app, bulk, 'Bulk docs');
    const smallProject = await project(app, small, 'Small docs');
    let n = 0;
    const uploadOne = async () =>
      (await upload(app, small, smallProject, `note-${(n += 1)}.txt`, `One line about a ${n} teal kettle.`).expect(201))
        .body.data.id as string;
    const indexed = async (id: string) => (await documentStatus(app, small, id)) === 'indexed';

    const idle = await timed('idle document', uploadOne, indexed);
    const large = (await upload(app, bulk, bulkProject, 'large.txt', prose(700_000)).expect(201)).body.data
      .id as string;
    await waitFor('large document under way', async () => (await documentStatus(app, bulk, large)) === 'processing', {
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    const behind = await timed('document behind a large one', uploadOne, indexed);

    expect(await documentStatus(app, bulk, large)).toBe('processing'); // the small one did not wait for the whole large one
    expect(behind.ms).toBeLessThanOrEqual(2 * idle.ms + 1_500);
    await pollUntil(
      'large document',
      () => documentStatus(app, bulk, large),
      (status) => status === 'indexed',
      { timeoutMs: 240_000, intervalMs: 500 },
    );
  }, 300_000);
});

describe('fair shares: a large document yields between its batches, not only at a slice end', () => {
  let app: TestApp;

  beforeAll(async () => {
    // Slices that never end within the test: only the question asked between batches can let the small document in.
    app = await startTestApp({
      env: {
        DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '10' : '1',
        INDEX_SLICE_MS: '3600000',
        INDEX_SLICE_CHUNKS: '10000000',
        RATE_LIMIT_USER_PER_MIN: '100000',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await app?.close();
  });

  it("another user's one-line document is indexed while the large one is still processing", async () => {
    const bulk = await makeUser(app);
    const small = await makeUser(app);
    const large = (
      await upload(app, bulk, await project(app, bulk, 'Bulk docs'), 'large.txt', prose(700_000)).expect(201)
    ).body.data.id as string;
    await waitFor('large document under way', async () => (await documentStatus(app, bulk, large)) === 'processing', {
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    const note = (
      await upload(
        app,
        small,
        await project(app, small, 'Small docs'),
        'note.txt',
        'One line about a teal kettle.',
      ).expect(201)
    ).body.data.id as string;
    await pollUntil(
      'small document',
      () => documentStatus(app, small, note),
      (status) => status === 'indexed',
      { timeoutMs: 60_000, intervalMs: 50 },
    );

    expect(await documentStatus(app, bulk, large)).toBe('processing');
    await pollUntil(
      'large document',
      () => documentStatus(app, bulk, large),
      (status) => status === 'indexed',
      { timeoutMs: 240_000, intervalMs: 500 },
    );
  }, 300_000);
});

/** Webhook receivers: a good one (records arrival times), one that stalls after its headers, one that never answers. */
class Receivers {
  readonly arrivals = new Map<string, number>();
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly trickles = new Set<NodeJS.Timeout>();
  base = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => this.answer(req.url ?? '', String(req.headers['atrium-delivery-id']), res));
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private answer(path: string, deliveryId: string, res: ServerResponse): void {
    if (path === '/good') {
      this.arrivals.set(deliveryId, Date.now());
      res.writeHead(200).end('ok');
    } else if (path === '/trickle') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('.');
      const timer = setInterval(() => res.write('.'), 2_000);
      this.trickles.add(timer);
      res.on('close', () => clearInterval(timer));
    }
    // '/silent': never answers
  }

  async stop(): Promise<void> {
    for (const timer of this.trickles) clearInterval(timer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

describe('fair shares: webhook deliveries', () => {
  const DEADLINE_MS = 1_500;
  let app: TestApp;
  let receivers: Receivers;

  beforeAll(async () => {
    receivers = await new Receivers().start();
    app = await startTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_TIMEOUT_MS: String(DEADLINE_MS),
        WEBHOOK_RETRY_BASE_MS: '500',
        WEBHOOK_MAX_ATTEMPTS: '3',
        RATE_LIMIT_USER_PER_MIN: '100000',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await receivers?.stop();
  });

  it("stalled and silent receivers of one user delay no other user's webhook by more than one attempt deadline", async () => {
    const hostile = await makeUser(app);
    const other = await makeUser(app);
    const hostileProject = await project(app, hostile, 'Hostile hooks');
    const otherProject = await project(app, other, 'Other hooks');
    const execute = async (user: TestUser, projectId: string, path: string) =>
      (
        await app.http
          .post('/api/agent/execute')
          .set(bearer(user.token))
          .send({ projectId, input: 'find notes', approval: 'none', webhookUrl: `${receivers.base}${path}` })
          .expect(202)
      ).body.data.jobId as string;

    const hostileRuns: string[] = [];
    for (let i = 0; i < 6; i += 1)
      hostileRuns.push(await execute(hostile, hostileProject, i % 2 === 0 ? '/silent' : '/trickle'));
    // Wait until the hostile deliveries are under way, then the other user's run.
    await waitFor(
      'hostile deliveries attempted',
      async () => {
        const views = await Promise.all(hostileRuns.map((id) => runView(app, hostile, id)));
        return views.every((view) => view.status === 'succeeded');
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const runId = await execute(other, otherProject, '/good');
    const finishedAt = await pollUntil(
      'other run',
      () => runView(app, other, runId),
      (view) => view.status === 'succeeded',
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    const delivery = await waitFor(
      'other webhook delivered',
      async () => {
        const view = await runView(app, other, runId);
        const done = view.webhook?.deliveries?.find((d: { status: string }) => d.status === 'delivered');
        return done ? { id: done.deliveryId as string } : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    const arrival = receivers.arrivals.get(delivery.id)!;
    expect(arrival - new Date(finishedAt.finishedAt).getTime()).toBeLessThanOrEqual(DEADLINE_MS + 1_500);

    // A trickling receiver is answered at its status line (delivered); a silent one fails each attempt at the deadline.
    // (The owner's own deliveries take turns, one at a time per worker.)
    await waitFor(
      'trickling receivers answered at their status line',
      async () => {
        const views = await Promise.all(
          hostileRuns.filter((_, i) => i % 2 === 1).map((id) => runView(app, hostile, id)),
        );
        return views
          .flatMap((view) => view.webhook.deliveries)
          .every(
            (d: { status: string; lastStatusCode: number | null }) =>
              d.status === 'delivered' && d.lastStatusCode === 200,
          );
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const silent = await waitFor(
      'a silent delivery attempted',
      async () => {
        const views = await Promise.all(
          hostileRuns.filter((_, i) => i % 2 === 0).map((id) => runView(app, hostile, id)),
        );
        return views.flatMap((view) => view.webhook.deliveries).find((d: { attempts: number }) => d.attempts >= 1);
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(silent.lastError).toMatch(/no answer within 1500 ms/);
  }, 120_000);
});

describe('fair shares: per-user caps and budgets', () => {
  let app: TestApp;

  beforeAll(async () => {
    // APP_ROLE=api: nothing is processed, so queued work stays queued while the caps are tried.
    app = await startTestApp({
      env: {
        APP_ROLE: 'api',
        AGENT_MAX_ACTIVE_PER_USER: '2',
        INDEX_MAX_QUEUED_PER_USER: '2',
        MAX_CREDENTIALS_PER_USER: '2',
        RATE_LIMIT_KEY_PER_MIN: '100',
        RATE_LIMIT_USER_TOOLS_PER_MIN: '5',
        RATE_LIMIT_USER_PER_MIN: '40',
        AGENT_MAX_STREAMS_PER_USER: '1',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await app?.close();
  });

  const expectRateLimited = (
    res: { status: number; headers: Record<string, string>; body: any },
    code = 'RATE_LIMITED',
  ) => {
    expect(res.status).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(res.body.error.code).toBe(code);
  };

  it('AGENT_MAX_ACTIVE_PER_USER: a third queued run is 429 RATE_LIMITED with Retry-After; another user is unaffected', async () => {
    const user = await makeUser(app);
    const projectId = await project(app, user, 'Capped runs');
    const execute = (who: TestUser, id: string) =>
      app.http.post('/api/agent/execute').set(bearer(who.token)).send({ projectId: id, input: 'hello' });
    await execute(user, projectId).expect(202);
    await execute(user, projectId).expect(202);
    expectRateLimited(await execute(user, projectId));
    const stranger = await makeUser(app);
    await execute(stranger, await project(app, stranger, 'Theirs')).expect(202);
  });

  it('INDEX_MAX_QUEUED_PER_USER: uploads and ingests beyond the cap are 429 RATE_LIMITED with Retry-After', async () => {
    const user = await makeUser(app);
    const projectId = await project(app, user, 'Capped docs');
    await upload(app, user, projectId, 'a.txt', 'first').expect(201);
    await upload(app, user, projectId, 'b.txt', 'second').expect(201);
    expectRateLimited(await upload(app, user, projectId, 'c.txt', 'third'));
    expectRateLimited(await app.http.post('/api/rag/ingest').set(bearer(user.token)).send({ projectId }));
    // Area A: a document written by a tool is refused the same way, in the tool API's casing.
    const { key } = await makeApiKey(app, user, { scopes: ['docs:write'] });
    const refused = await callTool(app, key, 'create_document', {
      title: 'Over the cap',
      content: 'third',
      project_id: projectId,
    });
    expectRateLimited(refused, 'rate_limited');
  });

  it('MAX_CREDENTIALS_PER_USER: a key beyond the cap is 409 CONFLICT; revoking one makes room', async () => {
    const user = await makeUser(app);
    const create = () =>
      app.http
        .post('/api/api-keys')
        .set(bearer(user.token))
        .send({ name: 'k', scopes: ['tasks:read'], expiresIn: 'never' });
    const first = (await create().expect(201)).body.data.id;
    await create().expect(201);
    const refused = await create().expect(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    await app.http.delete(`/api/api-keys/${first}`).set(bearer(user.token)).expect(200);
    await create().expect(201);
  });

  it("RATE_LIMIT_USER_TOOLS_PER_MIN: Area A calls of a user's keys share one budget (429 rate_limited with Retry-After)", async () => {
    const user = await makeUser(app);
    const one = await makeApiKey(app, user, { scopes: ['tasks:read'] });
    const two = await makeApiKey(app, user, { scopes: ['tasks:read'] });
    for (let i = 0; i < 5; i += 1) await callTool(app, i % 2 === 0 ? one.key : two.key, 'list_tasks', {}).expect(200);
    const refused = await callTool(app, two.key, 'list_tasks', {});
    expectRateLimited(refused, 'rate_limited');
    expect(refused.body.error.details.retry_after_seconds).toBeGreaterThanOrEqual(1);
    // Another user's key is not touched by it.
    const stranger = await makeUser(app);
    await callTool(app, (await makeApiKey(app, stranger, { scopes: ['tasks:read'] })).key, 'list_tasks', {}).expect(
      200,
    );
  });

  it("a project token's Area B calls count against its user's budget", async () => {
    const user = await makeUser(app);
    const projectId = await project(app, user, 'Token budget');
    const token = (
      await app.http
        .post(`/api/projects/${projectId}/session-tokens`)
        .set(bearer(user.token))
        .send({ name: 't', role: 'viewer' })
        .expect(201)
    ).body.data.token;
    let calls = 2;
    while (calls < 40) {
      await app.http.get('/api/projects').set(bearer(user.token)).expect(200);
      await app.http.get(`/api/projects/${projectId}`).set(bearer(token)).expect(200);
      calls += 2;
    }
    expectRateLimited(await app.http.get(`/api/projects/${projectId}`).set(bearer(token)));
    expectRateLimited(await app.http.get('/api/projects').set(bearer(user.token)));
  });

  it('AGENT_MAX_STREAMS_PER_USER: a second open run stream is 429 RATE_LIMITED; closing the first makes room', async () => {
    const user = await makeUser(app);
    const projectId = await project(app, user, 'Streams');
    const jobId = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(user.token))
        .send({ projectId, input: 'stream me' })
        .expect(202)
    ).body.data.jobId;
    const open = () =>
      new Promise<IncomingMessage>((resolve, reject) => {
        const req = httpGet(
          `${app.baseUrl}/api/agent/stream/${jobId}`,
          { headers: { authorization: `Bearer ${user.token}`, accept: 'text/event-stream' } },
          resolve,
        );
        req.on('error', reject);
      });
    const first = await open();
    expect(first.statusCode).toBe(200);
    expectRateLimited(await app.http.get(`/api/agent/stream/${jobId}`).set(bearer(user.token)));
    first.destroy(); // the client leaves: its slot is freed
    const again = await waitFor(
      'a stream slot again',
      async () => {
        const res = await open();
        if (res.statusCode === 200) return res;
        res.resume();
        return undefined;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    again.destroy();
  }, 30_000);
});

describe('fair shares: the default per-user tool budget', () => {
  const MCP_PATH = '/api/v1/public/mcp';
  let app: TestApp;

  beforeAll(async () => {
    // No limit set: RATE_LIMIT_KEY_PER_MIN and RATE_LIMIT_USER_TOOLS_PER_MIN as a deployment gets them.
    app = await startTestApp();
  }, 120_000);

  afterAll(async () => {
    await app?.close();
  });

  it('320 Area A calls on two keys of one user within a minute: 429 rate_limited on the JSON door, an in-band isError on MCP', async () => {
    expect(app.config.limits).toMatchObject({ keyCallsPerMinute: 300, userToolCallsPerMinute: 300 });
    const user = await makeUser(app);
    const one = await makeApiKey(app, user, { scopes: ['tasks:read'] });
    const two = await makeApiKey(app, user, { scopes: ['tasks:read'] });
    const mcpCall = (key: string, id: number) =>
      app.http
        .post(MCP_PATH)
        .set('Accept', 'application/json, text/event-stream')
        .set(bearer(key))
        .send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_tasks', arguments: {} } });

    const call = async (i: number): Promise<string> => {
      if (i % 2 === 0) {
        const res = await callTool(app, one.key, 'list_tasks', {});
        if (res.status === 200) return 'ok';
        expect(res.status).toBe(429);
        expect(res.body.error).toMatchObject({
          code: 'rate_limited',
          details: { retry_after_seconds: expect.any(Number) },
        });
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        return 'json-429';
      }
      const res = await mcpCall(two.key, i).expect(200);
      if (!res.body.result.isError) return 'ok';
      expect(res.body.result.structuredContent.error).toMatchObject({
        code: 'rate_limited',
        details: { retry_after_seconds: expect.any(Number) },
      });
      return 'mcp-isError';
    };

    const started = performance.now();
    const outcomes: string[] = [];
    // Alternating keys and doors: key one on the JSON door, key two on MCP, 160 calls each (neither key near its own
    // 300). The first 300 ten at a time, the last 20 one by one, so the order of the refusals is known.
    for (let i = 0; i < 300; i += 10)
      outcomes.push(...(await Promise.all(Array.from({ length: 10 }, (_, j) => call(i + j)))));
    for (let i = 300; i < 320; i += 1) outcomes.push(await call(i));
    const elapsedMs = performance.now() - started;
    expect(elapsedMs).toBeLessThan(60_000);
    // The first 300 pass, the user's budget; the other 20 are refused on both doors alike.
    expect(outcomes.slice(0, 300).every((outcome) => outcome === 'ok')).toBe(true);
    expect(outcomes.slice(300)).toEqual(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 'json-429' : 'mcp-isError')),
    );
    // eslint-disable-next-line no-console
    console.log(
      `320 tool calls on two keys of one user: ${Math.round(elapsedMs)} ms, refused from call ${outcomes.indexOf('json-429') + 1}`,
    );
    // Another user's key still has its whole budget.
    const stranger = await makeUser(app);
    await callTool(app, (await makeApiKey(app, stranger, { scopes: ['tasks:read'] })).key, 'list_tasks', {}).expect(
      200,
    );
  }, 90_000);
});
