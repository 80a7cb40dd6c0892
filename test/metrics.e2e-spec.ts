import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MetricsServer } from '../src/common/metrics/metrics.server.js';
import { bearer, callTool, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { parsePrometheusText, sampleValue, type Sample } from './support/prometheus-text.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/wait.js';

/** See api-keys.e2e-spec.ts: one pooled connection keeps the embedded engine correct under concurrency. */
const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };

/** The series API.md (Operations, revision 2) names, and some of Node's default process metrics. */
const NAMED_SERIES = [
  'http_requests_total',
  'http_request_duration_seconds',
  'atrium_tool_calls_total',
  'atrium_rate_limited_total',
  'atrium_jobs_total',
  'atrium_job_duration_seconds',
  'atrium_queue_waiting',
  'process_cpu_user_seconds_total',
  'process_resident_memory_bytes',
  'nodejs_eventloop_lag_seconds',
];

describe('GET /metrics on the main port, behind METRICS_TOKEN', () => {
  const metricsToken = randomBytes(24).toString('base64url');
  let app: TestApp;
  let user: TestUser;
  const mcpClients: McpClient[] = [];

  const scrapeText = async (): Promise<string> => {
    const res = await app.http.get('/metrics').set(bearer(metricsToken)).expect(200);
    return res.text;
  };
  const scrape = async (): Promise<Sample[]> => parsePrometheusText(await scrapeText());
  /** How much each series (name + labels) moved between two scrapes. */
  const moved = (before: Sample[], after: Sample[], name: string, labels: Record<string, string>) =>
    sampleValue(after, name, labels) - sampleValue(before, name, labels);

  const mcp = async (key: string): Promise<McpClient> => {
    const client = new McpClient({ name: 'metrics-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.baseUrl}/api/v1/public/mcp`), {
        requestInit: { headers: bearer(key) },
      }),
    );
    mcpClients.push(client);
    return client;
  };

  beforeAll(async () => {
    app = await startTestApp({
      env: {
        ...EMBEDDED_SAFE_ENV,
        METRICS_TOKEN: metricsToken,
        RATE_LIMIT_KEY_PER_MIN: '12',
        RATE_LIMIT_USER_TOOLS_PER_MIN: '100000',
      },
    });
    user = await makeUser(app);
  }, 180_000);
  afterAll(async () => {
    for (const client of mcpClients) await client.close().catch(() => undefined);
    await app?.close();
  });

  it('answers 401 without the token or with a wrong one, and the Prometheus text with it', async () => {
    const missing = await app.http.get('/metrics').expect(401);
    expect(missing.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(missing.body.error.code).toBe('AUTH_REQUIRED');
    const wrong = await app.http
      .get('/metrics')
      .set(bearer(`${metricsToken}x`))
      .expect(401);
    expect(wrong.body.error.code).toBe('AUTH_INVALID');
    await app.http
      .get('/metrics')
      .set('Authorization', `Basic ${Buffer.from(`x:${metricsToken}`).toString('base64')}`)
      .expect(401);
    // Neither answer gives anything away.
    expect(missing.text + wrong.text).not.toMatch(/atrium_|process_cpu/);

    const res = await app.http.get('/metrics').set(bearer(metricsToken)).expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.headers['cache-control']).toBe('no-store');
    for (const series of NAMED_SERIES) expect(res.text).toContain(`# TYPE ${series} `);
    expect(res.text).not.toContain(metricsToken);
  });

  it('serves every series the Grafana dashboard in docs/ queries', async () => {
    const dashboard = JSON.parse(readFileSync(join(__dirname, '..', 'docs', 'grafana-dashboard.json'), 'utf8')) as {
      panels: { targets?: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
    expect(exprs.length).toBeGreaterThan(10);
    const text = await scrapeText();
    for (const name of new Set(
      exprs.flatMap((expr) => expr.match(/\b(?:http|atrium|process|nodejs)_[a-z0-9_]+/g) ?? []),
    )) {
      // A histogram's _bucket series belongs to the histogram its # TYPE line names.
      expect(text).toContain(`# TYPE ${name.replace(/_bucket$/, '')} `);
    }
  });

  it('counts tool calls by registered tool, outcome and door; a name that is not a tool is counted as unknown', async () => {
    const { key } = await makeApiKey(app, user, { scopes: ['tasks:read', 'tasks:write'] });
    const invented = `no_such_tool_${randomBytes(4).toString('hex')}`;
    const before = await scrape();

    // The JSON door: a success, a failure of the tool, a refusal before the tool (unknown name).
    const created = await callTool(app, key, 'create_task', { title: 'counted' }).expect(200);
    await callTool(app, key, 'get_task', { task_id: randomUUID() }).expect(404);
    await callTool(app, key, invented, {}).expect(404);
    // The MCP door.
    const client = await mcp(key);
    const listed = await client.callTool({ name: 'list_tasks', arguments: {} });
    expect(listed.isError).toBeFalsy();
    const failed = await client.callTool({ name: 'get_task', arguments: { task_id: randomUUID() } });
    expect(failed.isError).toBe(true);
    await expect(client.callTool({ name: invented, arguments: {} })).rejects.toThrow();

    const text = await scrapeText();
    const after = parsePrometheusText(text);
    const calls = (labels: Record<string, string>) => moved(before, after, 'atrium_tool_calls_total', labels);
    expect(calls({ tool: 'create_task', status: 'ok', door: 'json' })).toBe(1);
    expect(calls({ tool: 'get_task', status: 'not_found', door: 'json' })).toBe(1);
    expect(calls({ tool: 'unknown', status: 'unknown_tool', door: 'json' })).toBe(1);
    expect(calls({ tool: 'list_tasks', status: 'ok', door: 'mcp' })).toBe(1);
    expect(calls({ tool: 'get_task', status: 'not_found', door: 'mcp' })).toBe(1);
    expect(calls({ tool: 'unknown', status: 'unknown_tool', door: 'mcp' })).toBe(1);
    expect(moved(before, after, 'atrium_tool_call_duration_seconds_count', { tool: 'create_task', door: 'json' })).toBe(
      1,
    );
    // Label values come from the registry, never from what a caller sent.
    expect(text).not.toContain(invented);
    expect(text).not.toContain(created.body.result.id);
  });

  it('labels the HTTP series with the route pattern, never the raw path', async () => {
    const id = randomUUID();
    const stray = `/api/stray-${randomBytes(4).toString('hex')}/${id}`;
    const before = await scrape();
    await app.http.get(`/api/documents/${id}`).set(bearer(user.token)).expect(404);
    await app.http.get(`/api/documents/${randomUUID()}`).set(bearer(user.token)).expect(404);
    await app.http.get(stray).expect(404);
    await app.http.get('/api/health').expect(200);
    const text = await scrapeText();
    const after = parsePrometheusText(text);
    expect(
      moved(before, after, 'http_requests_total', { method: 'GET', route: '/api/documents/:id', status: '404' }),
    ).toBe(2);
    expect(
      moved(before, after, 'http_request_duration_seconds_count', {
        method: 'GET',
        route: '/api/documents/:id',
        status: '404',
      }),
    ).toBe(2);
    expect(moved(before, after, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(moved(before, after, 'http_requests_total', { method: 'GET', route: '/api/health', status: '200' })).toBe(1);
    expect(text).not.toContain(id);
    expect(text).not.toContain(stray);
    // Every route label is a pattern the app declares (or the one fixed label), whatever paths were requested.
    const routes = new Set(after.filter((s) => s.name === 'http_requests_total').map((s) => s.labels.route));
    for (const route of routes)
      expect(route === 'unmatched' || route === '/metrics' || /^\/(api|oauth|\.well-known)\//.test(route)).toBe(true);
  });

  it('counts the calls a rate limit refused, by area', async () => {
    const { key } = await makeApiKey(app, user, { scopes: ['tasks:read'] });
    const before = await scrape();
    let limited = 0;
    for (let i = 0; i < 14; i += 1) {
      const res = await callTool(app, key, 'list_tasks', {});
      if (res.status === 429) limited += 1;
    }
    expect(limited).toBe(2);
    const after = await scrape();
    expect(moved(before, after, 'atrium_rate_limited_total', { area: 'tool-api' })).toBe(2);
    expect(moved(before, after, 'http_requests_total', { route: '/api/v1/public/mcp/call', status: '429' })).toBe(2);
  });

  it('counts queue jobs by queue and outcome, and reports each queue’s depth from the queue backend', async () => {
    const { key } = await makeApiKey(app, user, { scopes: ['docs:read', 'docs:write'] });
    const before = await scrape();
    const doc = (
      await callTool(app, key, 'create_document', {
        title: 'Metrics',
        content: 'The indexing job of this document is counted.',
      }).expect(200)
    ).body.result;
    await pollUntil(
      'document indexed',
      async () => (await app.http.get(`/api/documents/${doc.id}`).set(bearer(user.token))).body.data?.status,
      (status) => status === 'indexed',
      { timeoutMs: 60_000 },
    );
    const after = await pollUntil(
      'job counted',
      scrape,
      (samples) => moved(before, samples, 'atrium_jobs_total', { queue: 'rag-indexing', status: 'completed' }) >= 1,
      { timeoutMs: 10_000 },
    );
    expect(
      moved(before, after, 'atrium_job_duration_seconds_count', { queue: 'rag-indexing', status: 'completed' }),
    ).toBeGreaterThanOrEqual(1);
    expect(moved(before, after, 'atrium_jobs_total', { queue: 'rag-indexing', status: 'failed' })).toBe(0);
    // Every queue of the app, read from BullMQ's backend (Redis with TEST_REDIS_URL, else PostgreSQL).
    for (const queue of ['rag-indexing', 'agent-runs', 'agent-webhooks', 'atrium-system']) {
      expect(after.some((s) => s.name === 'atrium_queue_waiting' && s.labels.queue === queue)).toBe(true);
    }
    expect(sampleValue(after, 'atrium_queue_waiting', { queue: 'rag-indexing' })).toBe(0);
  }, 90_000);
});

describe('GET /metrics on METRICS_PORT', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ env: { ...EMBEDDED_SAFE_ENV, METRICS_PORT: '0' } });
  }, 180_000);
  afterAll(async () => {
    await app?.close();
  });

  it('serves the metrics on a listener of its own; the main port answers 404 for /metrics', async () => {
    const port = app.app.get(MetricsServer).port;
    expect(port).toBeGreaterThan(0);
    expect(port).not.toBe(Number(new URL(app.baseUrl).port));
    await app.http.get('/api/health').expect(200);
    const main = await app.http.get('/metrics').expect(404);
    expect(main.text).not.toContain('http_requests_total');
    const own = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(own.status).toBe(200);
    const samples = parsePrometheusText(await own.text());
    expect(sampleValue(samples, 'http_requests_total', { route: '/api/health', status: '200' })).toBeGreaterThanOrEqual(
      1,
    );
    // The metrics listener serves nothing else.
    expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(404);
  });
});
