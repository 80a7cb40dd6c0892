import { bearer, makeUser, type TestUser } from './support/factories.js';
import { FakeLlmServer, fakeModelEnv } from './support/fake-llm-server.js';
import { readSse } from './support/sse-reader.js';
import {
  createTestDatabase,
  deploymentEnv,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from './support/test-app.js';
import { pollUntil } from './support/wait.js';

const FINAL = ['succeeded', 'failed', 'cancelled'];

/**
 * GET /api/agent/stream/:jobId: Server-Sent Events from the run's stored event log, with ids, Last-Event-ID
 * resume (also on another instance after a restart), heartbeats, replay-and-close of a finished run, and the
 * visibility of status.
 */
describe('agent runs: live step streams (SSE)', () => {
  let database: TestDatabase;
  let app: TestApp;
  let llm: FakeLlmServer;
  let owner: TestUser;
  let stranger: TestUser;
  let projectId: string;
  let env: Record<string, string>;

  const streamUrl = (jobId: string) => `${app.baseUrl}/api/agent/stream/${jobId}`;

  const waitFor = (jobId: string, done: (run: any) => boolean = (run) => FINAL.includes(run.status)) =>
    pollUntil(
      `run ${jobId} in the expected state`,
      async () => (await app.http.get(`/api/agent/status/${jobId}`).set(bearer(owner.token)).expect(200)).body.data,
      done,
      {
        timeoutMs: 45_000,
      },
    );

  beforeAll(async () => {
    llm = await new FakeLlmServer().start();
    // One database kept across app restarts (on the embedded default too: the second app starts after the first stopped).
    database = await createTestDatabase();
    env = fakeModelEnv(llm, { ...deploymentEnv('stream'), AGENT_STREAM_HEARTBEAT_MS: '300' });
    app = await startTestApp({ env, database });
    owner = await makeUser(app);
    stranger = await makeUser(app);
    projectId = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'Streams' }).expect(201))
      .body.data.id;
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await database?.drop();
    await llm?.stop();
  });

  it('streams a run live: status and step events with increasing ids, then done with the final view, then closes', async () => {
    llm.play(
      {
        delayMs: 400,
        toolCalls: [{ name: 'create_task', arguments: { title: 'Streamed task', project_id: projectId } }],
      },
      { delayMs: 400, content: 'All done.' },
    );
    const jobId = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(owner.token))
        .send({ projectId, input: 'make a task' })
        .expect(202)
    ).body.data.jobId;
    const read = await readSse(streamUrl(jobId), owner.token);
    expect(read.status).toBe(200);
    expect(read.contentType).toMatch(/^text\/event-stream/);
    expect(read.closedByServer).toBe(true);
    const ids = read.events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(read.events.map((e) => [e.event, e.data.status ?? null, e.data.index ?? null])).toEqual([
      ['status', 'queued', null],
      ['status', 'running', null],
      ['step', 'ok', 0],
      ['step', 'started', 1],
      ['step', 'ok', 1],
      ['step', 'ok', 2],
      ['status', 'succeeded', null],
      ['done', 'succeeded', null],
    ]);
    const done = read.events.at(-1)!.data;
    expect(done).toMatchObject({ jobId, status: 'succeeded', output: 'All done.' });
    expect(done).toEqual(
      (await app.http.get(`/api/agent/status/${jobId}`).set(bearer(owner.token)).expect(200)).body.data,
    );
    // Steps look as in status: no internal fields.
    expect(read.events[4].data).toMatchObject({
      tool: 'create_task',
      arguments: { title: 'Streamed task', project_id: projectId },
    });
    expect(read.events[4].data.modelContent).toBeUndefined();
    expect(read.events[4].data.callId).toBeUndefined();

    // A finished run replays everything and closes; Last-Event-ID resumes after the given id.
    const replay = await readSse(streamUrl(jobId), owner.token);
    expect(replay.events).toEqual(read.events);
    const resumed = await readSse(streamUrl(jobId), owner.token, { lastEventId: read.events[3].id });
    expect(resumed.events).toEqual(read.events.slice(4));
    expect(resumed.closedByServer).toBe(true);
  });

  it("same visibility as status: another user's run and junk ids are 404 (no stream opened)", async () => {
    llm.play({ content: 'x' });
    const jobId = (
      await app.http.post('/api/agent/execute').set(bearer(owner.token)).send({ projectId, input: 'hi' }).expect(202)
    ).body.data.jobId;
    expect((await readSse(streamUrl(jobId), stranger.token)).status).toBe(404);
    expect((await readSse(`${app.baseUrl}/api/agent/stream/not-a-uuid`, owner.token)).status).toBe(404);
    expect(
      (await readSse(`${app.baseUrl}/api/agent/stream/00000000-0000-4000-8000-000000000000`, owner.token)).status,
    ).toBe(404);
    expect((await fetch(streamUrl(jobId))).status).toBe(401);
    // Finished before the next test scripts the model, so this run cannot take the next test's reply.
    await waitFor(jobId);
  });

  it('sends heartbeats while a run waits, and resumes with Last-Event-ID on a new instance after a restart', async () => {
    llm.play(
      { toolCalls: [{ name: 'create_task', arguments: { title: 'Across restart', project_id: projectId } }] },
      { content: 'Finished after restart.' },
    );
    const jobId = (
      await app.http
        .post('/api/agent/execute')
        .set(bearer(owner.token))
        .send({ projectId, input: 'make a task', approval: 'writes' })
        .expect(202)
    ).body.data.jobId;
    await waitFor(jobId, (run) => run.status === 'awaiting_approval');
    // Read while it waits: the events so far, plus heartbeat comments on the idle stream.
    const first = await readSse(streamUrl(jobId), owner.token, {
      stop: (read) => read.comments.filter((c) => c === 'keep-alive').length >= 2,
      timeoutMs: 15_000,
    });
    expect(first.comments.filter((c) => c === 'keep-alive').length).toBeGreaterThanOrEqual(2);
    expect(first.events.at(-1)).toMatchObject({ event: 'status', data: { status: 'awaiting_approval' } });
    expect(first.events.at(-2)).toMatchObject({
      event: 'step',
      data: { index: 1, status: 'awaiting_approval', tool: 'create_task' },
    });
    const lastSeen = first.events.at(-1)!.id!;

    // Restart: an open stream does not hold the shutdown up (the server ends it), and a new process on the
    // same database serves the rest of the stream.
    const open = readSse(streamUrl(jobId), owner.token, { timeoutMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await app.close();
    const cut = await open;
    expect(cut.closedByServer).toBe(true);
    expect(cut.events.at(-1)!.id).toBe(lastSeen);
    app = await startTestApp({ env, database });
    const rest = readSse(streamUrl(jobId), owner.token, { lastEventId: lastSeen });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await app.http
      .post(`/api/agent/approve/${jobId}`)
      .set(bearer(owner.token))
      .send({ stepIndex: 1, decision: 'approve' })
      .expect(202);
    const read = await rest;
    expect(read.closedByServer).toBe(true);
    expect(Number(read.events[0].id)).toBe(Number(lastSeen) + 1);
    expect(read.events.map((e) => [e.event, e.data.status ?? null, e.data.index ?? null])).toEqual([
      ['step', 'approved', 1],
      ['status', 'queued', null],
      ['status', 'running', null],
      ['step', 'started', 1],
      ['step', 'ok', 1],
      ['step', 'ok', 2],
      ['status', 'succeeded', null],
      ['done', 'succeeded', null],
    ]);
    expect(read.events[0].data.approval).toMatchObject({
      decision: 'approve',
      decidedBy: { userId: owner.id, via: 'user_token', credentialId: null },
    });
    expect(read.events.at(-1)!.data.output).toBe('Finished after restart.');
  }, 120_000);
});
