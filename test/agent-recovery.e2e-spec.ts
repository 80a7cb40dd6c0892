import { randomUUID } from 'node:crypto';
import { DatabasePool } from '../src/database/database-pool.js';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { FakeLlmServer, toolData } from './support/fake-llm-server.js';
import {
  createTestDatabase,
  deploymentEnv,
  describeOnSharedServices,
  startTestApp,
  type TestApp,
} from './support/test-app.js';
import { pollUntil } from './support/wait.js';

const FINAL = ['succeeded', 'failed', 'cancelled'];

const waitFor = (
  app: TestApp,
  user: TestUser,
  jobId: string,
  done: (run: any) => boolean = (run) => FINAL.includes(run.status),
  timeoutMs = 30_000,
) =>
  pollUntil(
    `run ${jobId} in the expected state`,
    async () => (await app.http.get(`/api/agent/status/${jobId}`).set(bearer(user.token)).expect(200)).body.data,
    done,
    { timeoutMs },
  );

function llmEnv(llm: FakeLlmServer): Record<string, string> {
  return {
    DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '10' : '1',
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: llm.baseUrl,
    LLM_MODEL: 'fake-model-1',
    AGENT_STALE_AFTER_MS: '1500',
    AGENT_RECOVERY_INTERVAL_MS: '300',
  };
}

/**
 * A worker that died mid-run: its run is taken over (stale heartbeat → recovery sweep → claim), and a tool
 * call that started without a recorded outcome is never executed again.
 */
describe('agent runs: recovery after a worker died', () => {
  let app: TestApp;
  let llm: FakeLlmServer;
  let owner: TestUser;
  let projectId: string;
  let db: DatabasePool;

  beforeAll(async () => {
    llm = await new FakeLlmServer().start();
    app = await startTestApp({ env: llmEnv(llm) });
    db = app.app.get(DatabasePool);
    owner = await makeUser(app);
    projectId = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'Recovery' }).expect(201))
      .body.data.id;
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await llm?.stop();
  });

  /** A run as a dead worker leaves it: running, heartbeat long gone, with the given steps. */
  async function insertOrphan(steps: unknown[]): Promise<string> {
    const id = randomUUID();
    await db.query(
      `INSERT INTO agent_runs (id, user_id, project_id, status, input, provider, model, tools, scopes, actor, max_steps, claim_token, heartbeat_at, attempts, started_at)
       VALUES ($1, $2, $3, 'running', 'make the task', 'openai', 'fake-model-1', NULL, $4::text[], $5::jsonb, 8, $6, now() - interval '1 hour', 1, now())`,
      [
        id,
        owner.id,
        projectId,
        ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'],
        JSON.stringify({ userId: owner.id, projectIds: [projectId], repos: null }),
        randomUUID(),
      ],
    );
    return id;
  }

  const now = () => new Date().toISOString();
  const askedFor = (title: string) => ({
    index: 0,
    type: 'message',
    status: 'ok',
    content: null,
    startedAt: now(),
    finishedAt: now(),
    toolCalls: [{ id: 'call_1', name: 'create_task', arguments: JSON.stringify({ title, project_id: projectId }) }],
  });

  it('marks a started tool call without an outcome as unknown and never runs it again', async () => {
    llm.play({ content: 'Recovered without repeating the call.' });
    const id = await insertOrphan([]);
    await db.query(`UPDATE agent_runs SET steps = $2::jsonb WHERE id = $1`, [
      id,
      JSON.stringify([
        askedFor('Maybe created'),
        {
          index: 1,
          type: 'tool_call',
          status: 'started',
          tool: 'create_task',
          arguments: {},
          startedAt: now(),
          finishedAt: null,
          callId: 'call_1',
        },
      ]),
    ]);
    const run = await waitFor(app, owner, id);
    expect(run.status).toBe('succeeded');
    expect(run.output).toBe('Recovered without repeating the call.');
    expect(run.steps[1]).toMatchObject({ type: 'tool_call', tool: 'create_task', status: 'unknown' });
    expect(run.steps[1].finishedAt).toBeTruthy();
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = 'Maybe created'`);
    expect(n).toBe(0);
    const toolMessage = llm.requests[0].body.messages.find((m) => m.role === 'tool')!;
    expect(toolData(toolMessage.content).error.code).toBe('outcome_unknown');
    const [{ attempts }] = await db.query(`SELECT attempts FROM agent_runs WHERE id = $1`, [id]);
    expect(attempts).toBe(2);
  });

  it('runs a requested tool call that never started exactly once on resume', async () => {
    llm.play({ content: 'Created after resuming.' });
    const id = await insertOrphan([]);
    await db.query(`UPDATE agent_runs SET steps = $2::jsonb WHERE id = $1`, [
      id,
      JSON.stringify([askedFor('Created on resume')]),
    ]);
    const run = await waitFor(app, owner, id);
    expect(run.status).toBe('succeeded');
    expect(run.steps.map((s: any) => [s.type, s.status])).toEqual([
      ['message', 'ok'],
      ['tool_call', 'ok'],
      ['message', 'ok'],
    ]);
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = 'Created on resume'`);
    expect(n).toBe(1);
  });

  it('fails a run interrupted too many times instead of resuming it for ever', async () => {
    const id = await insertOrphan([]);
    await db.query(`UPDATE agent_runs SET attempts = 3 WHERE id = $1`, [id]);
    const run = await waitFor(app, owner, id);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/interrupted 3 times/);
  });

  it('cancels an orphaned running run at once (no live worker to ask)', async () => {
    const id = await insertOrphan([]);
    // Keep the sweep from resuming it first: the heartbeat looks fresh, but no worker holds the run.
    await db.query(`UPDATE agent_runs SET heartbeat_at = now() + interval '1 hour' WHERE id = $1`, [id]);
    const began = Date.now();
    const res = await app.http.post(`/api/agent/cancel/${id}`).set(bearer(owner.token)).expect(202);
    expect(Date.now() - began).toBeLessThan(3_000);
    expect(['running', 'cancelled']).toContain(res.body.data.status);
    await db.query(`UPDATE agent_runs SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [id]);
    const run = await waitFor(app, owner, id);
    expect(run.status).toBe('cancelled');
  });
});

describeOnSharedServices(
  'agent runs: a second instance takes over from one that stopped mid-run (real PostgreSQL only)',
  () => {
    it('the second instance finishes the run; the tool call already made is not repeated', async () => {
      const llm = await new FakeLlmServer().start();
      const database = await createTestDatabase();
      // Two instances of one deployment: same database, queue prefix and secrets.
      const env = {
        ...llmEnv(llm),
        ...deploymentEnv('agent'),
      };
      let first: TestApp | undefined = await startTestApp({ database, env });
      let second: TestApp | undefined;
      try {
        const owner = await makeUser(first);
        const projectId = (
          await first.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'Handover' }).expect(201)
        ).body.data.id;
        llm.play(
          { toolCalls: [{ name: 'create_task', arguments: { title: 'Handover task', project_id: projectId } }] },
          { hang: true },
        );
        const jobId = (
          await first.http
            .post('/api/agent/execute')
            .set(bearer(owner.token))
            .send({ projectId, input: 'hand over' })
            .expect(202)
        ).body.data.jobId;
        await waitFor(
          first,
          owner,
          jobId,
          (run) => run.steps.some((s: any) => s.type === 'tool_call' && s.status === 'ok') && llm.requests.length === 2,
        );

        // The first instance goes away mid-run (its in-flight model call is dropped; no final write).
        await first.close();
        first = undefined;
        llm.play({ content: 'Finished by the second instance.' });
        second = await startTestApp({ database, env });
        const run = await waitFor(second, owner, jobId);
        expect(run).toMatchObject({ status: 'succeeded', output: 'Finished by the second instance.' });
        expect(run.steps.filter((s: any) => s.type === 'tool_call').map((s: any) => s.status)).toEqual(['ok']);
        const db = second.app.get(DatabasePool);
        const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = 'Handover task'`);
        expect(n).toBe(1);
      } finally {
        await first?.close();
        await second?.close();
        await database.drop();
        await llm.stop();
      }
    }, 120_000);
  },
);
