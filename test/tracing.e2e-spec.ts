import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { buildOnce, startAppProcess, type AppProcess } from './support/app-process.js';
import { bearer, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { OtlpReceiver, SpanKind, descendsFrom, type ReceivedSpan } from './support/otlp-receiver.js';
import { parsePrometheusText, sampleValue } from './support/prometheus-text.js';
import { createTestDatabase, deploymentEnv, type TestDatabase } from './support/test-app.js';
import { pollUntil } from './support/wait.js';

const ROOT = join(__dirname, '..');
const PG_SCOPE = '@opentelemetry/instrumentation-pg';

/**
 * Traces of the built server (`node dist/src/main.js`, where the OpenTelemetry preload runs before anything it
 * instruments is loaded), exported over OTLP/HTTP to a receiver in this test that decodes the protobuf it gets.
 * On PostgreSQL (TEST_DATABASE_URL) the jobs run in a separate worker process (APP_ROLE=api + APP_ROLE=worker),
 * so the job's spans reach the request's trace only through the traceparent stored with the job; on the embedded
 * default one process does both, still through the queue backend.
 */
describe('OpenTelemetry traces of the built server', () => {
  let receiver: OtlpReceiver;
  let database: TestDatabase | undefined;
  const processes: AppProcess[] = [];
  const dirs: string[] = [];
  let api: AppProcess;
  let http: ReturnType<typeof request>;
  let user: TestUser;
  const separateWorker = !!process.env.TEST_DATABASE_URL;

  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'atrium-trace-'));
    dirs.push(dir);
    return dir;
  };

  /** A W3C traceparent the client sends, so the test knows the trace id its request continues. */
  const newTrace = () => {
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    return { traceId, parentId, traceparent: `00-${traceId}-${parentId}-01` };
  };

  const one = (spans: ReceivedSpan[], label: string, match: (span: ReceivedSpan) => boolean): ReceivedSpan => {
    const found = spans.filter(match);
    if (found.length === 0)
      throw new Error(`no ${label} span in the trace: ${spans.map((s) => `${s.name} [${s.scope}]`).join(', ')}`);
    return found[0];
  };

  beforeAll(async () => {
    buildOnce();
    receiver = await OtlpReceiver.start();
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' };
    if (separateWorker) {
      database = await createTestDatabase();
      const shared = {
        ...deploymentEnv('trace'),
        ...otel,
        DATABASE_URL: database.url,
        ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
      };
      api = await startAppProcess({
        ...shared,
        DATA_DIR: freshDir(),
        APP_ROLE: 'api',
        OTEL_SERVICE_NAME: 'atrium-api',
      });
      processes.push(api);
      processes.push(
        await startAppProcess({
          ...shared,
          DATA_DIR: freshDir(),
          APP_ROLE: 'worker',
          OTEL_SERVICE_NAME: 'atrium-worker',
        }),
      );
    } else {
      api = await startAppProcess({ ...otel, DATA_DIR: freshDir(), OTEL_SERVICE_NAME: 'atrium-api' });
      processes.push(api);
    }
    http = request(api.baseUrl);
    user = await makeUser({ http });
  }, 240_000);

  afterAll(async () => {
    for (const app of processes) {
      if (app.child.exitCode === null) app.child.kill('SIGTERM');
      await app.exited;
    }
    await database?.drop();
    await receiver?.stop();
    dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
  });

  it('one trace spans the HTTP request, its tool call, its SQL and the indexing job it queued', async () => {
    const { key } = await makeApiKey({ http }, user, { scopes: ['docs:read', 'docs:write'] });
    const { traceId, parentId, traceparent } = newTrace();
    const created = await http
      .post('/api/v1/public/mcp/call')
      .set(bearer(key))
      .set('traceparent', traceparent)
      .send({
        name: 'create_document',
        arguments: { title: 'Traced', content: 'A document whose indexing joins the trace of its creation.' },
      })
      .expect(200);
    await pollUntil(
      'document indexed',
      async () =>
        (await http.get(`/api/documents/${created.body.result.id}`).set(bearer(user.token))).body.data?.status,
      (status) => status === 'indexed',
      { timeoutMs: 60_000 },
    );
    // The worker exports its spans in batches: wait until the job's span (and the SQL inside it) has arrived.
    const spans = await pollUntil(
      'the job span and its SQL exported',
      async () => receiver.trace(traceId),
      (trace) => {
        const job = trace.find((s) => s.name === 'process rag-indexing');
        return !!job && trace.some((s) => s.scope === PG_SCOPE && descendsFrom(trace, s, job));
      },
      { timeoutMs: 30_000 },
    );

    const server = one(spans, 'HTTP server', (s) => s.kind === SpanKind.SERVER && s.parentSpanId === parentId);
    expect(server.service).toBe('atrium-api');
    expect(server.attributes['http.route']).toBe('/api/v1/public/mcp/call');
    const tool = one(spans, 'tool call', (s) => s.name === 'tool create_document');
    expect(tool.attributes).toMatchObject({
      'atrium.tool.name': 'create_document',
      'atrium.tool.door': 'json',
      'atrium.tool.status': 'ok',
    });
    expect(descendsFrom(spans, tool, server)).toBe(true);
    const insert = one(
      spans,
      'SQL of the tool call',
      (s) => s.scope === PG_SCOPE && s.kind === SpanKind.CLIENT && descendsFrom(spans, s, tool),
    );
    expect(insert.attributes['db.system'] ?? insert.attributes['db.system.name']).toBe('postgresql');
    const enqueue = one(spans, 'enqueue', (s) => s.kind === SpanKind.PRODUCER && s.name.startsWith('add rag-indexing'));
    expect(descendsFrom(spans, enqueue, tool)).toBe(true);
    const job = one(spans, 'job', (s) => s.kind === SpanKind.CONSUMER && s.name === 'process rag-indexing');
    expect(job.parentSpanId).toBe(enqueue.spanId);
    expect(job.service).toBe(separateWorker ? 'atrium-worker' : 'atrium-api');
    const jobSql = one(spans, 'SQL of the job', (s) => s.scope === PG_SCOPE && descendsFrom(spans, s, job));
    expect(jobSql.service).toBe(job.service);
    // Nothing secret rides along: no API key in any exported byte, no SQL parameter values.
    for (const payload of receiver.payloads) expect(payload.toString('latin1')).not.toContain(key.slice(-20));
    for (const span of spans.filter((s) => s.scope === PG_SCOPE))
      expect(
        Object.keys(span.attributes).filter((k) => k.startsWith('db.query.parameter') || k === 'db.postgresql.values'),
      ).toEqual([]);
  }, 120_000);

  it("an agent run's tool calls (door agent) join the trace of the request that started the run", async () => {
    const projectId = (
      await http.post('/api/projects').set(bearer(user.token)).send({ name: 'Traced runs' }).expect(201)
    ).body.data.id as string;
    const { traceId, traceparent } = newTrace();
    const jobId = (
      await http
        .post('/api/agent/execute')
        .set(bearer(user.token))
        .set('traceparent', traceparent)
        .send({ projectId, input: 'What do the documents say?' })
        .expect(202)
    ).body.data.jobId;
    await pollUntil(
      `run ${jobId} final`,
      async () => (await http.get(`/api/agent/status/${jobId}`).set(bearer(user.token)).expect(200)).body.data.status,
      (status) => ['succeeded', 'failed', 'cancelled'].includes(status),
      { timeoutMs: 60_000 },
    );
    // The job's span ends (and is exported) after its tool calls: wait for both.
    const spans = await pollUntil(
      'the run’s job and tool spans exported',
      async () => receiver.trace(traceId),
      (trace) =>
        trace.some((s) => s.attributes['atrium.tool.door'] === 'agent') &&
        trace.some((s) => s.name === 'process agent-runs'),
      { timeoutMs: 30_000 },
    );
    const server = one(spans, 'HTTP server', (s) => s.kind === SpanKind.SERVER);
    const job = one(spans, 'run job', (s) => s.kind === SpanKind.CONSUMER && s.name === 'process agent-runs');
    const tool = one(spans, 'agent tool call', (s) => s.attributes['atrium.tool.door'] === 'agent');
    expect(descendsFrom(spans, job, server)).toBe(true);
    expect(descendsFrom(spans, tool, job)).toBe(true);
    expect(tool.service).toBe(separateWorker ? 'atrium-worker' : 'atrium-api');
    expect(tool.name).toBe(`tool ${tool.attributes['atrium.tool.name']}`);
  }, 120_000);

  (separateWorker ? it : it.skip)(
    'a worker serves its own /metrics on WORKER_HTTP_PORT: the jobs it ran, the queues it sees',
    async () => {
      const worker = processes[1];
      const res = await fetch(`${worker.baseUrl}/metrics`);
      expect(res.status).toBe(200);
      const samples = parsePrometheusText(await res.text());
      expect(
        sampleValue(samples, 'atrium_jobs_total', { queue: 'rag-indexing', status: 'completed' }),
      ).toBeGreaterThanOrEqual(1);
      expect(
        sampleValue(samples, 'atrium_jobs_total', { queue: 'agent-runs', status: 'completed' }),
      ).toBeGreaterThanOrEqual(1);
      expect(samples.some((s) => s.name === 'atrium_queue_waiting' && s.labels.queue === 'rag-indexing')).toBe(true);
      // The API process ran no job: its job counters stay empty.
      const apiSamples = parsePrometheusText(await (await fetch(`${api.baseUrl}/metrics`)).text());
      expect(sampleValue(apiSamples, 'atrium_jobs_total')).toBe(0);
    },
  );

  it('the request id (X-Request-Id, log lines, error bodies) is the trace id, also when the client sent no traceparent', async () => {
    const res = await http.get('/api/auth/me').set(bearer(user.token)).expect(200);
    const requestId = res.headers['x-request-id'] as string;
    expect(requestId).toMatch(/^[0-9a-f]{32}$/);
    const spans = await pollUntil(
      'the request’s span exported',
      async () => receiver.trace(requestId),
      (trace) => trace.some((s) => s.kind === SpanKind.SERVER),
      { timeoutMs: 15_000 },
    );
    expect(one(spans, 'HTTP server', (s) => s.kind === SpanKind.SERVER).attributes['http.route']).toBe('/api/auth/me');
  });

  it('probes and scrapes start no trace, and idle workers polling their queues start none either', async () => {
    const { traceId, traceparent } = newTrace();
    await http.get('/api/health').set('traceparent', traceparent).expect(200);
    await http.get('/metrics').expect(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.trace(traceId)).toEqual([]);
    expect(
      receiver.spans.filter((s) => /^(getNextJob|moveStalledJobsToWait)/.test(s.name) && s.parentSpanId === ''),
    ).toEqual([]);
    expect(receiver.spans.filter((s) => s.scope === PG_SCOPE && s.parentSpanId === '')).toEqual([]);
  });

  it('without OTEL_EXPORTER_OTLP_ENDPOINT the preload loads nothing of the SDK', () => {
    const probe = `require('./dist/src/common/tracing/tracing.preload.js');
      const loaded = Object.keys(require.cache).filter((file) => file.includes('@opentelemetry') || file.includes('bullmq-otel'));
      process.stdout.write(String(loaded.length));
      process.exit(0);`;
    const run = (env: Record<string, string>) =>
      execFileSync(process.execPath, ['-e', probe], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', ...env },
      }).toString();
    expect(run({})).toBe('0');
    expect(Number(run({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }))).toBeGreaterThan(0);
  });
});
