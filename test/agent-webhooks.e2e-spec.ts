import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DatabasePool } from '../src/database/database-pool.js';
import { metricsRegistry } from '../src/common/metrics/metrics.registry.js';
import { guardedLookup } from '../src/common/net/outbound-guard.js';
import { bearer, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { pkcePair, REDIRECT_URI } from './support/oauth-helpers.js';
import { FakeLlmServer, fakeModelEnv } from './support/fake-llm-server.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { waitFor } from './support/wait.js';

/** A local webhook receiver: records raw bodies and headers, answers scripted status codes (then 200). */
class Receiver {
  readonly received: { headers: IncomingHttpHeaders; body: string }[] = [];
  answers: number[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(this.answers.shift() ?? 200).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/atrium`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** What a receiver does: recompute the HMAC over "<t>.<raw body>" with its secret and compare. */
function verify(secret: string, headers: IncomingHttpHeaders, body: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(headers['atrium-signature']));
  if (!match) return false;
  return createHmac('sha256', secret).update(`${match[1]}.${body}`).digest('hex') === match[2];
}

const LLM_KEY = 'sk-llm-upstream-key-never-shown-0123456789';
const FAKE_GITHUB_TOKEN = 'ghp_R3dactMe0123456789abcdefghijABCDEFGH';
const FAKE_AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';
const redactions = async (where: string) =>
  (await metricsRegistry.getSingleMetric('atrium_redactions_total')!.get()).values
    .filter((v) => v.labels.where === where)
    .reduce((sum, v) => sum + v.value, 0);

const until = <T>(probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> =>
  waitFor('webhook condition', probe, { timeoutMs });

describe('agent runs: signed webhooks (local receiver, WEBHOOK_ALLOW_PRIVATE=true)', () => {
  let app: TestApp;
  let llm: FakeLlmServer;
  let receiver: Receiver;
  let owner: TestUser;
  let projectId: string;

  const status = async (jobId: string) =>
    (await app.http.get(`/api/agent/status/${jobId}`).set(bearer(owner.token)).expect(200)).body.data;

  beforeAll(async () => {
    llm = await new FakeLlmServer().start();
    receiver = await new Receiver().start();
    app = await startTestApp({
      env: fakeModelEnv(llm, {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRY_BASE_MS: '200',
        WEBHOOK_MAX_ATTEMPTS: '4',
        LLM_API_KEY: LLM_KEY,
      }),
    });
    owner = await makeUser(app);
    projectId = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'Hooks' }).expect(201)).body
      .data.id;
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await receiver?.stop();
    await llm?.stop();
  });

  it('signs awaiting_approval and the final state; the secret is shown once, stored encrypted, never in status', async () => {
    receiver.received.length = 0;
    llm.play(
      { toolCalls: [{ name: 'create_task', arguments: { title: 'Hooked', project_id: projectId } }] },
      { content: 'Made it.' },
    );
    const started = await app.http
      .post('/api/agent/execute')
      .set(bearer(owner.token))
      .send({ projectId, input: 'make a task', approval: 'writes', webhookUrl: receiver.url })
      .expect(202);
    expect(started.headers['cache-control']).toBe('no-store');
    const { jobId, webhookSecret } = started.body.data;
    expect(webhookSecret).toMatch(/^whsec_[A-Za-z0-9_-]{40,}$/);

    // Approve-by-webhook: the receiver learns the run waits, then approves through the API.
    await until(async () => receiver.received.length >= 1);
    const waiting = receiver.received[0];
    expect(verify(webhookSecret, waiting.headers, waiting.body)).toBe(true);
    expect(verify('whsec_wrong', waiting.headers, waiting.body)).toBe(false);
    const event = JSON.parse(waiting.body);
    expect(event).toEqual({
      type: 'agent_run.awaiting_approval',
      jobId,
      status: 'awaiting_approval',
      output: null,
      error: null,
      occurredAt: expect.any(String),
    });
    const stepIndex = (await status(jobId)).steps.findIndex((s: any) => s.status === 'awaiting_approval');
    await app.http
      .post(`/api/agent/approve/${jobId}`)
      .set(bearer(owner.token))
      .send({ stepIndex, decision: 'approve' })
      .expect(202);

    await until(async () => receiver.received.length >= 2);
    const final = receiver.received[1];
    expect(verify(webhookSecret, final.headers, final.body)).toBe(true);
    expect(JSON.parse(final.body)).toMatchObject({
      type: 'agent_run.succeeded',
      jobId,
      status: 'succeeded',
      output: 'Made it.',
      error: null,
    });
    expect(final.headers['atrium-delivery-id']).not.toBe(waiting.headers['atrium-delivery-id']);
    expect(final.headers['content-type']).toBe('application/json');

    const view = await until(async () => {
      const run = await status(jobId);
      return run.webhook?.deliveries.every((d: any) => d.status === 'delivered') && run.webhook.deliveries.length === 2
        ? run
        : undefined;
    });
    expect(view.webhook.url).toBe(receiver.url);
    expect(view.webhook.deliveries.map((d: any) => [d.type, d.attempts, d.lastStatusCode])).toEqual([
      ['agent_run.awaiting_approval', 1, 200],
      ['agent_run.succeeded', 1, 200],
    ]);
    expect(view.webhook.deliveries.map((d: any) => d.deliveryId)).toEqual([
      waiting.headers['atrium-delivery-id'],
      final.headers['atrium-delivery-id'],
    ]);
    expect(JSON.stringify(view)).not.toContain(webhookSecret);
    const [row] = await app.app.get(DatabasePool).query(`SELECT webhook_secret FROM agent_runs WHERE id = $1`, [jobId]);
    expect(row.webhook_secret).not.toContain(webhookSecret.slice(6));
  });

  it('retries after a receiver answering 500, with the same delivery id, until a 2xx', async () => {
    receiver.received.length = 0;
    receiver.answers = [500, 500];
    llm.play({ content: 'quick' });
    const { jobId, webhookSecret } = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(owner.token))
        .send({ projectId, input: 'hi', webhookUrl: receiver.url })
        .expect(202)
    ).body.data;
    const run = await until(async () => {
      const current = await status(jobId);
      return current.webhook?.deliveries[0]?.status === 'delivered' ? current : undefined;
    });
    expect(run.webhook.deliveries[0]).toMatchObject({
      type: 'agent_run.succeeded',
      attempts: 3,
      lastStatusCode: 200,
      lastError: null,
    });
    expect(receiver.received).toHaveLength(3);
    expect(new Set(receiver.received.map((r) => r.headers['atrium-delivery-id'])).size).toBe(1);
    for (const attempt of receiver.received) expect(verify(webhookSecret, attempt.headers, attempt.body)).toBe(true);
  });

  it('gives up after WEBHOOK_MAX_ATTEMPTS and says so in the delivery log', async () => {
    receiver.received.length = 0;
    receiver.answers = [503, 503, 503, 503, 503];
    llm.play({ content: 'quick' });
    const { jobId } = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(owner.token))
        .send({ projectId, input: 'hi', webhookUrl: receiver.url })
        .expect(202)
    ).body.data;
    const run = await until(async () => {
      const current = await status(jobId);
      return current.webhook?.deliveries[0]?.status === 'failed' ? current : undefined;
    });
    expect(run.webhook.deliveries[0]).toMatchObject({
      attempts: 4,
      lastStatusCode: 503,
      lastError: 'receiver answered 503',
    });
    receiver.answers = [];
  });

  it('credential shapes never leave: a tool result the model reads, the run output and the webhook body say [redacted]', async () => {
    receiver.received.length = 0;
    const created = await app.http
      .post('/api/v1/public/mcp/call')
      .set(bearer((await makeApiKey(app, owner, { scopes: ['tasks:read', 'tasks:write'] })).key))
      .send({
        name: 'create_task',
        arguments: {
          title: 'Deploy notes',
          description: `use ${FAKE_GITHUB_TOKEN} and ${FAKE_AWS_KEY}`,
          project_id: projectId,
        },
      })
      .expect(200);
    expect(created.body.result.description).toBe('use [redacted] and [redacted]');
    const taskId = created.body.result.id;
    const [toolBefore, outputBefore] = [await redactions('tool_result'), await redactions('run_output')];
    llm.play(
      { toolCalls: [{ name: 'get_task', arguments: { task_id: taskId } }] },
      { content: `The token is ${FAKE_GITHUB_TOKEN}.` },
    );
    const { jobId } = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(owner.token))
        .send({ projectId, input: 'read the task', webhookUrl: receiver.url })
        .expect(202)
    ).body.data;
    await until(async () => receiver.received.length >= 1);
    const run = await status(jobId);
    expect(run.output).toBe('The token is [redacted].');
    const toolMessage = llm.requests.at(-1)!.body.messages.find((m: { role: string }) => m.role === 'tool') as {
      content: string;
    };
    expect(toolMessage.content).toContain('use [redacted] and [redacted]');
    const body = receiver.received[0].body;
    expect(JSON.parse(body)).toMatchObject({ output: 'The token is [redacted].' });
    expect(JSON.stringify([run, body, llm.requests.map((r) => r.body)])).not.toMatch(/ghp_R3dact|AKIAIOSFODNN7/);
    expect((await redactions('tool_result')) - toolBefore).toBeGreaterThanOrEqual(2);
    expect((await redactions('run_output')) - outputBefore).toBeGreaterThanOrEqual(1);

    // A stored output written before redaction existed is redacted again as the webhook body leaves.
    const webhookBefore = await redactions('webhook_body');
    const db = app.app.get(DatabasePool);
    await db.query(`UPDATE agent_runs SET output = $2 WHERE id = $1`, [jobId, `legacy ${FAKE_AWS_KEY}`]);
    await db.query(`INSERT INTO agent_run_webhook_deliveries (run_id, type) VALUES ($1, 'agent_run.succeeded')`, [
      jobId,
    ]);
    await until(async () => receiver.received.length >= 2);
    expect(JSON.parse(receiver.received[1].body).output).toBe('legacy [redacted]');
    expect((await redactions('webhook_body')) - webhookBefore).toBe(1);
  });

  it('an LLM error body echoing the API key never reaches the run error', async () => {
    llm.play({ status: 401, echoAuthorization: true });
    const { jobId } = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(owner.token))
        .send({ projectId, input: 'fail please' })
        .expect(202)
    ).body.data;
    const run = await until(async () => {
      const current = await status(jobId);
      return current.status === 'failed' ? current : undefined;
    });
    expect(run.error).toBe('LLM service answered HTTP 401 (check LLM_API_KEY)');
    expect(JSON.stringify(run)).not.toContain(LLM_KEY);
  });

  it('an Idempotency-Key replay answers the same run without the secret', async () => {
    llm.play({ content: 'x' }, { content: 'x' });
    const body = { projectId, input: 'once', webhookUrl: receiver.url };
    const first = await app.http
      .post('/api/agent/execute')
      .set(bearer(owner.token))
      .set('Idempotency-Key', 'hook-replay-1')
      .send(body)
      .expect(202);
    const again = await app.http
      .post('/api/agent/execute')
      .set(bearer(owner.token))
      .set('Idempotency-Key', 'hook-replay-1')
      .send(body)
      .expect(202);
    expect(first.body.data.webhookSecret).toBeDefined();
    expect(again.body.data).toEqual({ jobId: first.body.data.jobId, status: 'queued' });
  });
});

describe('agent runs: webhook URLs are checked against SSRF (default configuration)', () => {
  let app: TestApp;
  let owner: TestUser;
  let projectId: string;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await new Receiver().start();
    app = await startTestApp({
      env: { DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '10' : '1', WEBHOOK_RETRY_BASE_MS: '200' },
    });
    owner = await makeUser(app);
    projectId = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'SSRF' }).expect(201)).body
      .data.id;
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await receiver?.stop();
  });

  // The whole table of refused URLs is src/modules/agent/webhooks/webhook-address.spec.ts; here, one of each kind
  // through the route.
  it.each([
    ['http (not https)', 'http://example.com/hook'],
    ['link-local metadata', 'https://169.254.169.254/latest/meta-data'],
    ['a name resolving to loopback', 'https://localhost/hook'],
    ['not a URL', 'hook please'],
  ])('%s → 400 VALIDATION_FAILED on webhookUrl, no run created', async (_label, webhookUrl) => {
    const res = await app.http
      .post('/api/agent/execute')
      .set(bearer(owner.token))
      .send({ projectId, input: 'x', webhookUrl })
      .expect(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(res.body.error)).toContain('webhookUrl');
    const [row] = await app.app.get(DatabasePool).query(`SELECT count(*)::int AS n FROM agent_runs`);
    expect(row.n).toBe(0);
  });

  it('a name that resolves to a private address after the URL was accepted is refused when the delivery connects', async () => {
    // A public literal passes the execute-time check; the stored URL is then swapped for a name resolving to the
    // receiver on 127.0.0.1, as DNS rebinding would do between the check and the delivery.
    const { jobId } = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(owner.token))
        .send({ projectId, input: 'hello', webhookUrl: 'https://93.184.216.34/hook' })
        .expect(202)
    ).body.data;
    const port = new URL(receiver.url).port;
    await app.app
      .get(DatabasePool)
      .query(`UPDATE agent_runs SET webhook_url = $2 WHERE id = $1`, [jobId, `https://localhost:${port}/hooks/atrium`]);
    const refused = await waitFor(
      'a delivery attempt refused by the connect-time lookup',
      async () => {
        const rows: { last_error: string | null }[] = await app.app
          .get(DatabasePool)
          .query(`SELECT last_error FROM agent_run_webhook_deliveries WHERE run_id = $1`, [jobId]);
        return rows.find((row) => /resolves to a private or special-purpose address/.test(row.last_error ?? ''));
      },
      { timeoutMs: 60_000 },
    );
    expect(refused.last_error).toContain('localhost');
    expect(receiver.received).toHaveLength(0);
  }, 90_000);

  it.each([
    ['IPv4-compatible IPv6 loopback', 'https://[::7f00:1]/client.json', 'private or special-purpose address'],
    ['benchmarking 198.18/15', 'https://198.18.0.1/client.json', 'private or special-purpose address'],
    ['CGNAT 100.64/10', 'https://100.64.0.1/client.json', 'private or special-purpose address'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/client.json', 'private or special-purpose address'],
    [
      'a name resolving to loopback (refused by the connection lookup)',
      'https://localhost:9/client.json',
      'resolves to a private or special-purpose address',
    ],
  ])(
    'the same guard refuses an OAuth client metadata document at %s: a 400 error page, never a fetch',
    async (_label, clientId, reason) => {
      const res = await app.http
        .get(
          `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, code_challenge: pkcePair().challenge, code_challenge_method: 'S256' })}`,
        )
        .redirects(0)
        .expect(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain(reason);
    },
  );

  it('re-checks at connect time: a name that resolves to a private address is refused by the delivery lookup', async () => {
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) =>
      guardedLookup({ allowPrivate: false, label: 'webhookUrl' })('localhost', {}, (err) => resolve(err)),
    );
    expect(error?.code).toBe('EADDRNOTPUBLIC');
    const allowed = await new Promise<string | unknown>((resolve) =>
      guardedLookup({ allowPrivate: true, label: 'webhookUrl' })('localhost', {}, (err, address) =>
        resolve(err ?? address),
      ),
    );
    expect(typeof allowed).toBe('string');
  });
});
