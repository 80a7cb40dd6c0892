import { Client } from 'pg';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { FakeEmbeddings } from './support/fake-embeddings-server.js';
import { FakeLlmServer } from './support/fake-llm-server.js';
import {
  createTestDatabase,
  deploymentEnv,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from './support/test-app.js';
import { pollUntil, waitFor } from './support/wait.js';

/**
 * A drain (a worker shutting down gracefully: SIGTERM, a rolling upgrade) hands its job back; that is not an
 * interruption. A job is given up after 5 interruptions (indexing) or 3 (agent runs): only claims lost to a crash or a
 * stale heartbeat count, so a job survives any number of deploys. Several app instances, one after the other, on one
 * database: each is closed (drained) mid-job and the next one takes the job over. On whichever queue backend the run
 * selects (BullMQ on Redis with TEST_REDIS_URL, else BullMQ's PostgreSQL backend).
 */
describe('drains are not interruptions', () => {
  /** More drains than either kind of job survives interruptions. */
  const DRAINS = 6;
  let database: TestDatabase;
  let db: Client;
  let embeddings: FakeEmbeddings;
  let llm: FakeLlmServer;
  let shared: Record<string, string>;
  const open: TestApp[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = new Client({ connectionString: database.url });
    await db.connect();
    embeddings = await new FakeEmbeddings(8).start();
    // Every batch waits a little: the document is mid-way at each drain.
    embeddings.delayMs = 150;
    llm = await new FakeLlmServer().start();
    shared = {
      ...deploymentEnv('drains'),
      DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '5' : '1',
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: embeddings.baseUrl,
      EMBEDDINGS_MODEL: 'fake-embed',
      EMBEDDINGS_DIMENSIONS: '8',
      RAG_CHUNK_TARGET_CHARS: '200',
      RAG_CHUNK_OVERLAP_CHARS: '0',
      // A released claim is taken over at once; a stale-heartbeat takeover would be a crash, which this test is not about.
      RAG_STALE_AFTER_MS: '60000',
      RAG_RECOVERY_INTERVAL_MS: '500',
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: llm.baseUrl,
      LLM_MODEL: 'fake-model-1',
      AGENT_STALE_AFTER_MS: '60000',
      AGENT_RECOVERY_INTERVAL_MS: '500',
    };
  }, 120_000);

  afterAll(async () => {
    for (const app of open) await app.close().catch(() => undefined);
    await db?.end();
    await database?.drop();
    await embeddings?.stop();
    await llm?.stop();
  });

  const start = async (): Promise<TestApp> => {
    const app = await startTestApp({ database, env: shared });
    open.push(app);
    return app;
  };
  const close = async (app: TestApp): Promise<void> => {
    open.splice(open.indexOf(app), 1);
    await app.close();
  };
  const login = async (app: TestApp, email: string): Promise<string> =>
    (await app.http.post('/api/auth/login').send({ email, password: 'drain-test-password' }).expect(200)).body.data
      .accessToken as string;
  const newUser = async (app: TestApp, email: string): Promise<TestUser> =>
    makeUser(app, { email, password: 'drain-test-password' });

  it(`an indexing job drained ${DRAINS} times mid-document is resumed each time and ends indexed, every chunk stored once`, async () => {
    let app = await start();
    const user = await newUser(app, 'drained-indexing@example.com');
    const projectId = (
      await app.http.post('/api/projects').set(bearer(user.token)).send({ name: 'Drained' }).expect(201)
    ).body.data.id as string;
    const text = Array.from(
      { length: 3_000 },
      (_, i) => `Paragraph ${i}: a document indexed across many deploys, each chunk once (${i}).`,
    ).join('\n\n');
    const upload = await app.http
      .post('/api/documents/upload')
      .set(bearer(user.token))
      .field('projectId', projectId)
      .attach('file', Buffer.from(text), 'long.md')
      .expect(201);
    const documentId = upload.body.data.id as string;
    const stored = async () =>
      Number(
        (await db.query(`SELECT count(*) AS n FROM document_chunks WHERE document_id = $1`, [documentId])).rows[0].n,
      );

    const storedAtDrain: number[] = [];
    for (let drain = 0; drain < DRAINS; drain += 1) {
      const before = await stored();
      await pollUntil('indexing under way on this instance', stored, (n) => n > before, {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      storedAtDrain.push(await stored());
      await close(app); // the drain: the job's claim is handed back between two batches
      app = await start();
    }
    const token = await login(app, 'drained-indexing@example.com');
    const document = await pollUntil(
      'the document indexed',
      async () => (await app.http.get(`/api/documents/${documentId}`).set(bearer(token)).expect(200)).body.data,
      (doc) => doc.status === 'indexed' || doc.status === 'failed',
      { timeoutMs: 240_000, intervalMs: 300 },
    );
    expect(document.status).toBe('indexed');
    const job = (
      await db.query(`SELECT status, attempts, slices, error FROM indexing_jobs WHERE $1 = ANY(document_ids)`, [
        documentId,
      ])
    ).rows[0];
    // Every drain was counted as a hand-back, none as an interruption: the claims less the hand-backs is the last one.
    expect(job).toMatchObject({ status: 'succeeded', error: null });
    expect(job.attempts - job.slices).toBe(1);
    expect(job.attempts).toBeGreaterThanOrEqual(DRAINS + 1);
    const chunks = (
      await db.query(
        `SELECT count(*)::int AS n, count(DISTINCT chunk_index)::int AS distinct_n FROM document_chunks WHERE document_id = $1`,
        [documentId],
      )
    ).rows[0];
    expect(chunks.n).toBe(document.chunkCount);
    expect(chunks.distinct_n).toBe(document.chunkCount);
    // Each instance went on after the chunks stored before it: nothing was embedded twice.
    expect(embeddings.texts.length - new Set(embeddings.texts).size).toBe(0);
    // eslint-disable-next-line no-console
    console.log(
      `indexing drained ${DRAINS} times: chunks stored at each drain ${storedAtDrain.join(', ')} of ${document.chunkCount}; attempts ${job.attempts}, hand-backs ${job.slices}`,
    );
    await close(app);
  }, 600_000);

  it(`an agent run drained ${DRAINS} times mid model call is resumed each time and succeeds`, async () => {
    let app = await start();
    const user = await newUser(app, 'drained-run@example.com');
    const projectId = (
      await app.http.post('/api/projects').set(bearer(user.token)).send({ name: 'Drained runs' }).expect(201)
    ).body.data.id as string;
    // Each instance's model call never answers: the run is mid-step at every drain; the last instance's call answers.
    llm.play(...Array.from({ length: DRAINS }, () => ({ hang: true })), { content: 'Finished after the deploys.' });
    const runId = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(user.token))
        .send({ projectId, input: 'say done', approval: 'none' })
        .expect(202)
    ).body.data.jobId as string;
    for (let drain = 0; drain < DRAINS; drain += 1) {
      const asked = drain + 1;
      await waitFor(
        'the model call of this instance under way',
        async () => llm.requests.length >= asked || undefined,
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      await close(app);
      app = await start();
    }
    const token = await login(app, 'drained-run@example.com');
    const run = await pollUntil(
      'the run finished',
      async () => (await app.http.get(`/api/agent/status/${runId}`).set(bearer(token)).expect(200)).body.data,
      (view) => ['succeeded', 'failed', 'cancelled'].includes(view.status),
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(run).toMatchObject({ status: 'succeeded', output: 'Finished after the deploys.' });
    expect(llm.requests.length).toBe(DRAINS + 1);
    // Only the claim that finished it counts.
    expect((await db.query(`SELECT attempts FROM agent_runs WHERE id = $1`, [runId])).rows[0].attempts).toBe(1);
    await close(app);
  }, 600_000);
});
