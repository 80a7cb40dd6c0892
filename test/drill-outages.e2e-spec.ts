import { call, excerpt, internalsIn, type RawRequest, type RawResponse } from './support/drill-helpers';
import { makeApiKey, makeUser, type TestUser } from './support/factories';
import { FakeEmbeddings } from './support/fake-embeddings-server';
import { FakeGithubServer } from './support/fake-github-server';
import { FakeLlmServer } from './support/fake-llm-server';
import { TcpProxy } from './support/tcp-proxy';
import { createTestDatabase, startTestApp, type TestApp, type TestDatabase } from './support/test-app';
import { pollUntil, sleep, timeUntil } from './support/wait';

/**
 * Outage drill (issue 10): each dependency goes away in turn — PostgreSQL and Redis (cut at a TCP proxy
 * the app's URL points at), GitHub, the LLM and the embeddings service (fake servers that stop answering
 * in time). While it is away `/api/ready` answers 503, requests fail fast (FAIL_FAST_MS) with
 * DEPENDENCY_UNAVAILABLE (Area B) or a documented Area A code, never a 500 or a stack; nothing escapes as
 * an unhandled rejection; and the service recovers by itself when the dependency returns.
 */

const FAIL_FAST_MS = 5_000;
const UPSTREAM_TIMEOUT_MS = 600;
const DIMS = 8;

describe('outage drill: dependencies unreachable or timing out', () => {
  let database: TestDatabase;
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy | undefined;
  let t: TestApp;
  let github: FakeGithubServer;
  let llm: FakeLlmServer;
  let embeddings: FakeEmbeddings;
  let user: TestUser;
  let key: string;
  let projectId: string;
  const figures: Record<string, string | number> = {};
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  const b = (req: Omit<RawRequest, 'token'>) => call(t.baseUrl, { ...req, token: user.token });
  const tool = (name: string, args: Record<string, unknown>) =>
    call(t.baseUrl, { method: 'POST', path: '/api/v1/public/mcp/call', token: key, body: { name, arguments: args } });

  /** Runs a request and returns its answer and duration; a request that hangs past 3× the bound fails the test. */
  async function timed(label: string, send: () => Promise<RawResponse>): Promise<{ res: RawResponse; ms: number }> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${label}: no answer within ${FAIL_FAST_MS * 3} ms (hung)`)),
        FAIL_FAST_MS * 3,
      );
    });
    // The timer is cleared either way, so a finished drill leaves nothing that keeps Jest running.
    const res = await Promise.race([send(), hung]).finally(() => clearTimeout(timer));
    const ms = Math.round(performance.now() - started);
    figures[label] = `${res.status} ${res.json?.error?.code ?? ''} in ${ms} ms`;
    return { res, ms };
  }

  /** A failed answer during an outage: fast, the expected status/code, no implementation details. */
  function expectOutageAnswer(
    label: string,
    r: { res: RawResponse; ms: number },
    allowed: { status: number; code: string }[],
  ): void {
    const { res, ms } = r;
    const code = res.json?.error?.code;
    const ok = allowed.some((a) => a.status === res.status && a.code === code);
    if (!ok)
      throw new Error(`${label}: expected one of ${JSON.stringify(allowed)}, got ${res.status} ${excerpt(res.text)}`);
    expect(res.status).not.toBe(500);
    expect(internalsIn(res.text)).toBeNull();
    expect(ms).toBeLessThan(FAIL_FAST_MS);
  }

  async function waitUntil(label: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<number> {
    const ms = await timeUntil(`${label}: recovery`, check, { timeoutMs, intervalMs: 250, ignoreErrors: true });
    figures[`${label} recovered after`] = `${ms} ms`;
    return ms;
  }

  const ready = async () => (await call(t.baseUrl, { method: 'GET', path: '/api/ready' })).status === 200;

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    github = await FakeGithubServer.start();
    github.addRepo('acme', 'widgets').issues.push({
      number: 1,
      title: 'One',
      body: 'x',
      state: 'open',
      labels: [],
      user: 'octo',
      createdAt: '2026-01-01T00:00:00Z',
    });
    github.grant('ghp_drill000000000000000000000000000000', 'all');
    llm = await new FakeLlmServer().start();
    embeddings = await new FakeEmbeddings(DIMS).start();

    database = await createTestDatabase();
    const pgTarget = new URL(database.url);
    pgProxy = new TcpProxy(pgTarget.hostname, Number(pgTarget.port || 5432));
    await pgProxy.open();
    const viaProxy = new URL(database.url);
    viaProxy.port = String(pgProxy.port);
    const env: Record<string, string> = {
      RATE_LIMIT_KEY_PER_MIN: '100000',
      RATE_LIMIT_USER_PER_MIN: '100000',
      DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '10' : '1',
      GITHUB_API_URL: github.baseUrl,
      GITHUB_TOKEN: 'ghp_drill000000000000000000000000000000',
      GITHUB_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      GITHUB_MAX_RETRIES: '1',
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: llm.baseUrl,
      LLM_MODEL: 'fake-model-1',
      LLM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      LLM_MAX_RETRIES: '1',
      AGENT_STEP_TIMEOUT_MS: '3000',
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: embeddings.baseUrl,
      EMBEDDINGS_MODEL: 'fake-embed',
      EMBEDDINGS_DIMENSIONS: String(DIMS),
      EMBEDDINGS_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
    };
    if (process.env.TEST_REDIS_URL) {
      const redisTarget = new URL(process.env.TEST_REDIS_URL);
      redisProxy = new TcpProxy(redisTarget.hostname, Number(redisTarget.port || 6379));
      await redisProxy.open();
      const redisVia = new URL(process.env.TEST_REDIS_URL);
      redisVia.hostname = '127.0.0.1';
      redisVia.port = String(redisProxy.port);
      env.REDIS_URL = redisVia.toString();
    }
    t = await startTestApp({ database: { ...database, url: viaProxy.toString(), drop: async () => undefined }, env });
    const admin = await makeUser(t);
    user = admin;
    projectId = (await b({ method: 'POST', path: '/api/projects', body: { name: 'outages' } })).json.data.id;
    key = (
      await makeApiKey(t, user, {
        scopes: ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'],
      })
    ).key;
    expect(
      (await b({ method: 'POST', path: '/api/admin/github/repos', body: { owner: 'acme', name: 'widgets' } })).status,
    ).toBe(201);
    expect(
      (
        await tool('create_document', {
          title: 'Outage runbook',
          content: 'When the database is down, answer 503 and recover.',
          project_id: projectId,
        })
      ).status,
    ).toBe(200);
    expect(await ready()).toBe(true);
  }, 120_000);

  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await pgProxy?.open().catch(() => undefined);
    await redisProxy?.open().catch(() => undefined);
    await t?.close();
    await pgProxy?.cut();
    await redisProxy?.cut();
    await database?.drop();
    await github?.stop();
    await llm?.stop();
    await embeddings?.stop();
    // eslint-disable-next-line no-console
    console.log(
      `drill-outages figures:\n${Object.entries(figures)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n  unhandled rejections: ${unhandled.length}`,
    );
  });

  afterEach(() => {
    expect(unhandled.map(String)).toEqual([]);
  });

  it('LLM timing out: the run fails fast with a readable error; the next run succeeds', async () => {
    llm.play({ hang: true }, { hang: true }, { hang: true });
    const started = Date.now();
    const exec = await b({ method: 'POST', path: '/api/agent/execute', body: { projectId, input: 'plan the week' } });
    expect(exec.status).toBe(202);
    const statusOf = async (jobId: string) =>
      (await b({ method: 'GET', path: `/api/agent/status/${jobId}` })).json.data;
    let run = await pollUntil(
      'llm slow: agent run final',
      () => statusOf(exec.json.data.jobId),
      (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status),
      {
        timeoutMs: 20_000,
        intervalMs: 200,
      },
    );
    figures['llm slow: agent run'] = `${run.status} in ${Date.now() - started} ms (${run.error})`;
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/time|timed out/i);
    expect(internalsIn(JSON.stringify(run))).toBeNull();
    expect(Date.now() - started).toBeLessThan(10_000);

    llm.play({ content: 'All good again.' });
    const next = await b({ method: 'POST', path: '/api/agent/execute', body: { projectId, input: 'plan the week' } });
    run = await pollUntil(
      'run after recovery final',
      () => statusOf(next.json.data.jobId),
      (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status),
      {
        timeoutMs: 20_000,
        intervalMs: 200,
      },
    );
    if (run.status !== 'succeeded') throw new Error(`run after recovery: ${JSON.stringify(run)}`);
  }, 60_000);

  it('PostgreSQL unreachable: 503 everywhere, fast, no 500; recovers by itself', async () => {
    await pgProxy.cut();
    try {
      const r = await timed('pg down: GET /api/ready', () => call(t.baseUrl, { method: 'GET', path: '/api/ready' }));
      expectOutageAnswer('ready', r, [{ status: 503, code: 'DEPENDENCY_UNAVAILABLE' }]);
      const health = await call(t.baseUrl, { method: 'GET', path: '/api/health' });
      expect(health.status).toBe(200);
      expect(health.json.data.checks.database.status).toBe('down');

      const areaB = [
        ['pg down: GET /api/projects', () => b({ method: 'GET', path: '/api/projects' })],
        [
          'pg down: POST /api/projects',
          () => b({ method: 'POST', path: '/api/projects', body: { name: 'during outage' } }),
        ],
        ['pg down: GET /api/auth/me', () => b({ method: 'GET', path: '/api/auth/me' })],
        [
          'pg down: POST /api/rag/search',
          () => b({ method: 'POST', path: '/api/rag/search', body: { query: 'database', projectId, mode: 'keyword' } }),
        ],
        [
          'pg down: POST /api/auth/login',
          () =>
            call(t.baseUrl, {
              method: 'POST',
              path: '/api/auth/login',
              body: { email: user.email, password: user.password },
            }),
        ],
      ] as const;
      for (const [label, send] of areaB)
        expectOutageAnswer(label, await timed(label, send), [{ status: 503, code: 'DEPENDENCY_UNAVAILABLE' }]);

      const label = 'pg down: Area A list_tasks';
      // Area A renders a dependency outage as 503 with the documented catch-all code `internal`.
      expectOutageAnswer(label, await timed(label, () => tool('list_tasks', {})), [{ status: 503, code: 'internal' }]);
    } finally {
      await pgProxy.open();
    }
    await waitUntil(
      'pg',
      async () => (await ready()) && (await b({ method: 'GET', path: '/api/projects' })).status === 200,
    );
    expect((await tool('list_tasks', {})).status).toBe(200);
  }, 60_000);

  const withRedis = process.env.TEST_REDIS_URL ? it : it.skip;
  withRedis(
    'Redis unreachable: 503, fast, no 500; queued work and limits come back by themselves',
    async () => {
      await redisProxy!.cut();
      try {
        await sleep(300); // let the clients notice the dropped connections
        const r = await timed('redis down: GET /api/ready', () =>
          call(t.baseUrl, { method: 'GET', path: '/api/ready' }),
        );
        expectOutageAnswer('ready', r, [{ status: 503, code: 'DEPENDENCY_UNAVAILABLE' }]);
        const areaB = [
          ['redis down: GET /api/projects', () => b({ method: 'GET', path: '/api/projects' })],
          [
            'redis down: POST /api/rag/ingest',
            () => b({ method: 'POST', path: '/api/rag/ingest', body: { projectId } }),
          ],
          [
            'redis down: POST /api/agent/execute',
            () => b({ method: 'POST', path: '/api/agent/execute', body: { projectId, input: 'hello' } }),
          ],
        ] as const;
        for (const [label, send] of areaB) {
          const res = await timed(label, send);
          // The rate limiter needs Redis before anything else runs, so every Area B call is refused the same way.
          expectOutageAnswer(label, res, [{ status: 503, code: 'DEPENDENCY_UNAVAILABLE' }]);
        }
        const label = 'redis down: Area A list_tasks';
        expectOutageAnswer(label, await timed(label, () => tool('list_tasks', {})), [
          { status: 503, code: 'internal' },
        ]);
      } finally {
        await redisProxy!.open();
      }
      await waitUntil('redis', async () => (await ready()) && (await tool('list_tasks', {})).status === 200);
      // Queued work flows again: an ingest job is accepted and finishes.
      const job = await b({ method: 'POST', path: '/api/rag/ingest', body: { projectId } });
      expect(job.status).toBe(202);
      const jobId = job.json.data.jobId;
      await waitUntil('redis: ingest job after recovery', async () =>
        ['succeeded'].includes((await b({ method: 'GET', path: `/api/rag/ingest/${jobId}` })).json.data.status),
      );
    },
    60_000,
  );

  it('GitHub timing out: Area A 502 upstream_error within the timeout; recovers', async () => {
    github.failNext({ status: 200, body: [], delayMs: UPSTREAM_TIMEOUT_MS * 10, times: 10 });
    const label = 'github slow: Area A list_issues';
    expectOutageAnswer(label, await timed(label, () => tool('list_issues', { repo: 'acme/widgets' })), [
      { status: 502, code: 'upstream_error' },
    ]);
    const labelW = 'github slow: Area A create_issue';
    expectOutageAnswer(
      labelW,
      await timed(labelW, () => tool('create_issue', { repo: 'acme/widgets', title: 'during outage' })),
      [{ status: 502, code: 'upstream_error' }],
    );
    // Drain what is left of the slow answers, then GitHub is back.
    (github as unknown as { queue: unknown[] }).queue.length = 0;
    const back = await tool('list_issues', { repo: 'acme/widgets' });
    expect(back.status).toBe(200);
  }, 60_000);

  it('embeddings timing out: search answers 503 DEPENDENCY_UNAVAILABLE / 502 upstream_error fast; keyword search still works; recovers', async () => {
    embeddings.delayMs = UPSTREAM_TIMEOUT_MS * 20;
    try {
      const label = 'embeddings slow: POST /api/rag/search hybrid';
      expectOutageAnswer(
        label,
        await timed(label, () =>
          b({ method: 'POST', path: '/api/rag/search', body: { query: 'database down', projectId } }),
        ),
        [
          { status: 502, code: 'DEPENDENCY_UNAVAILABLE' },
          { status: 503, code: 'DEPENDENCY_UNAVAILABLE' },
        ],
      );
      const labelA = 'embeddings slow: Area A search_documents';
      expectOutageAnswer(
        labelA,
        await timed(labelA, () => tool('search_documents', { query: 'database down', project_id: projectId })),
        [{ status: 502, code: 'upstream_error' }],
      );
      const keyword = await b({
        method: 'POST',
        path: '/api/rag/search',
        body: { query: 'database', projectId, mode: 'keyword' },
      });
      expect(keyword.status).toBe(200);
    } finally {
      embeddings.delayMs = 0;
    }
    const back = await b({ method: 'POST', path: '/api/rag/search', body: { query: 'database down', projectId } });
    expect(back.status).toBe(200);
    expect(back.json.data.results.length).toBeGreaterThan(0);
  }, 60_000);

  /**
   * Queued work after the PostgreSQL outage above flows again, on Redis and on the PostgreSQL queue
   * backend. On the latter a worker that failed during the outage then waits for a NOTIFY for up to an
   * hour (BullMQ's PostgreSQL block ceiling); on the embedded engine that NOTIFY used to go back to the
   * notifier, so the job stayed `queued` until a restart. The wire server now routes notifications to
   * the listening connection (test/embedded-wire-server.e2e-spec.ts).
   */
  it('queued work (an indexing job and an agent run) flows again after the PostgreSQL outage', async () => {
    llm.play({ content: 'Back after the outage.' });
    const job = await b({ method: 'POST', path: '/api/rag/reindex', body: { projectId } });
    expect(job.status).toBe(202);
    const exec = await b({
      method: 'POST',
      path: '/api/agent/execute',
      body: { projectId, input: 'after the outage' },
    });
    expect(exec.status).toBe(202);
    const flows = async () => {
      await waitUntil(
        'pg: reindex job after the outage',
        async () =>
          (await b({ method: 'GET', path: `/api/rag/ingest/${job.json.data.jobId}` })).json.data.status === 'succeeded',
        10_000,
      );
      await waitUntil(
        'pg: agent run after the outage',
        async () =>
          (await b({ method: 'GET', path: `/api/agent/status/${exec.json.data.jobId}` })).json.data.status ===
          'succeeded',
        10_000,
      );
    };
    await flows();
    figures[`${process.env.TEST_REDIS_URL ? 'redis' : 'pg'} queue backend: queued work after the outage`] = 'resumed';
  }, 30_000);
});
