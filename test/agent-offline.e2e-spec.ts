import { raceExecuteAndCancel } from './support/cancel-race.js';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/wait.js';

/** The default provider: a deterministic retrieval agent that quotes and cites only what the caller may see. */
describe('agent runs: offline retrieval agent (no LLM configured)', () => {
  let app: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let projectId: string;
  let publicDoc: string;
  let privateDoc: string;

  async function upload(
    user: TestUser,
    project: string,
    name: string,
    text: string,
    isPublic: boolean,
  ): Promise<string> {
    const res = await app.http
      .post('/api/documents/upload')
      .set(bearer(user.token))
      .field('projectId', project)
      .field('isPublic', String(isPublic))
      .attach('file', Buffer.from(text), name)
      .expect(201);
    return res.body.data.id;
  }

  async function run(user: TestUser, body: Record<string, unknown>) {
    const jobId = (await app.http.post('/api/agent/execute').set(bearer(user.token)).send(body).expect(202)).body.data
      .jobId;
    return pollUntil(
      `run ${jobId} final`,
      async () => (await app.http.get(`/api/agent/status/${jobId}`).set(bearer(user.token)).expect(200)).body.data,
      (data) => ['succeeded', 'failed', 'cancelled'].includes(data.status),
      { timeoutMs: 45_000 },
    );
  }

  beforeAll(async () => {
    app = await startTestApp({ env: { DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '10' : '1' } });
    owner = await makeUser(app);
    member = await makeUser(app);
    projectId = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'Ops' }).expect(201)).body
      .data.id;
    await app.http
      .post(`/api/projects/${projectId}/members`)
      .set(bearer(owner.token))
      .send({ userId: member.id, role: 'editor' })
      .expect(201);
    publicDoc = await upload(
      owner,
      projectId,
      'runbook.md',
      '# Runbook\n\nIntro text.\n\nThe rollback procedure: drain traffic, then redeploy the previous release tag.\n',
      true,
    );
    privateDoc = await upload(
      member,
      projectId,
      'secret.md',
      '# Private notes\n\nMy rollback procedure secret is zebra-42.\n',
      false,
    );
    // Text is extracted in the background since uploads answer at once: the agent reads it once indexed.
    await untilIndexed(owner, publicDoc);
    await untilIndexed(member, privateDoc);
  }, 120_000);

  async function untilIndexed(user: TestUser, documentId: string): Promise<void> {
    const status = await pollUntil(
      `document ${documentId} indexed`,
      async () =>
        (await app.http.get(`/api/documents/${documentId}`).set(bearer(user.token)).expect(200)).body.data.status,
      (state) => state === 'indexed' || state === 'failed',
      { timeoutMs: 90_000 },
    );
    if (status === 'failed') throw new Error(`document ${documentId} failed to index`);
  }

  afterAll(async () => {
    await app?.close();
  });

  it("answers from the documents it may see, quoted and cited, and never from others' private ones", async () => {
    const result = await run(owner, {
      projectId,
      input: 'What is the rollback procedure?',
      tools: ['list_documents', 'get_document', 'search_tasks'],
    });
    expect(result).toMatchObject({ status: 'succeeded', provider: 'offline-retrieval', error: null });
    expect(result.output).toMatch(/^Offline retrieval agent \(no language model is configured\)/);
    expect(result.output).toContain('drain traffic, then redeploy');
    expect(result.output).toContain(`document ${publicDoc}`);
    expect(result.output).toMatch(/chars \d+-\d+/);
    expect(result.output).not.toContain('zebra-42');
    expect(result.output).not.toContain(privateDoc);
    expect(result.steps.filter((s: any) => s.type === 'tool_call').map((s: any) => s.tool)).toEqual([
      'list_documents',
      'search_tasks',
      'get_document',
    ]);

    // The member, who wrote the private note, does see it.
    const mine = await run(member, {
      projectId,
      input: 'rollback procedure secret',
      tools: ['list_documents', 'get_document'],
    });
    expect(mine.output).toContain('zebra-42');
  });

  it('searches with search_documents once documents are indexed', async () => {
    await untilIndexed(owner, publicDoc);
    const result = await run(owner, { projectId, input: 'rollback procedure' });
    expect(result.status).toBe('succeeded');
    expect(result.steps[1]).toMatchObject({ type: 'tool_call', tool: 'search_documents', status: 'ok' });
    expect(result.output).toContain(`document ${publicDoc}`);
    expect(result.output).not.toContain('zebra-42');
  });

  it('a cancel answered 202 always ends cancelled; a run that finished first answers 409 (raced 40 times)', async () => {
    const tally = await raceExecuteAndCancel(
      app,
      owner,
      { projectId, input: 'rollback', tools: ['list_documents', 'get_document'] },
      40,
    );
    expect(tally.broken).toEqual([]);
    expect(tally.wrongConflicts).toEqual([]);
    expect(tally.accepted + tally.conflicts).toBe(40);
    expect(tally.accepted).toBeGreaterThan(0);
  }, 180_000);

  it('says honestly when nothing matched or nothing could be searched', async () => {
    const none = await run(owner, {
      projectId,
      input: 'quantum chromodynamics',
      tools: ['list_documents', 'get_document'],
    });
    expect(none.output).toMatch(/Nothing in the documents you may see/);
    const noTools = await run(owner, { projectId, input: 'rollback', tools: [] });
    expect(noTools.output).toMatch(/No search tool is available/);
  });
});
