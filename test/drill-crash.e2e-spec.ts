import type { Client } from 'pg';
import type { AppProcess } from './support/app-process';
import { call } from './support/drill-helpers';
import { FakeEmbeddings } from './support/fake-embeddings-server';
import { FakeLlmServer } from './support/fake-llm-server';
import { signUp, useProcessDeployment, type ProcessDeployment } from './support/process-deployment';
import { describeOnSharedServices } from './support/test-app';
import { sleep, waitFor as waitUntil } from './support/wait';

/**
 * Crash drill (issue 10): `kill -9` of a worker process in the middle of ingest jobs and of an agent run,
 * (a) while a second worker runs, (b) with only a restart of the killed worker; and of an api process in
 * the middle of Area A calls. Every job must reach a final state, no document may be stored twice, no
 * tool call may run twice, and no acknowledged Area A call may be missing from the key's call count.
 * Real processes (`node dist/src/main.js`) on a real PostgreSQL (+ Redis when configured): two
 * processes cannot share the embedded engine, so this drill needs TEST_DATABASE_URL.
 */

const FINAL = ['succeeded', 'failed', 'cancelled'];
const DOCS_PER_SCENARIO = 10;

if (!process.env.TEST_DATABASE_URL) {
  // eslint-disable-next-line no-console
  console.log('drill-crash skipped: it needs TEST_DATABASE_URL (several processes cannot share the embedded engine)');
}

describeOnSharedServices('crash drill: kill -9 mid-job and mid-call', () => {
  let db: Client;
  let llm: FakeLlmServer;
  let embeddings: FakeEmbeddings;
  let api: AppProcess;
  let figures: ProcessDeployment['figures'];
  let token = '';
  const deployment = useProcessDeployment('crash', {
    env: () => ({
      RATE_LIMIT_KEY_PER_MIN: '1000000',
      RATE_LIMIT_USER_PER_MIN: '1000000',
      ...embeddings.env(),
      EMBEDDINGS_BATCH_SIZE: '2',
      RAG_CHUNK_TARGET_CHARS: '200',
      RAG_CHUNK_OVERLAP_CHARS: '0',
      RAG_STALE_AFTER_MS: '1500',
      RAG_RECOVERY_INTERVAL_MS: '300',
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: llm.baseUrl,
      LLM_MODEL: 'fake-model-1',
      AGENT_STALE_AFTER_MS: '1500',
      AGENT_RECOVERY_INTERVAL_MS: '300',
    }),
  });
  const start = (role: 'api' | 'worker' | 'all'): Promise<AppProcess> => deployment().start(role);

  async function kill9(p: AppProcess): Promise<void> {
    p.child.kill('SIGKILL');
    await p.exited;
  }

  const b = (method: string, path: string, body?: unknown) => call(api.baseUrl, { method, path, token, body });

  const waitFor = <T>(label: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> =>
    waitUntil(label, probe, { timeoutMs, intervalMs: 150 });

  /**
   * Waits for `done` as long as the work moves: fails only when `progress` (a fingerprint of the work's
   * state) has not changed for `stallMs`, so the bound does not depend on how fast the machine is. A
   * stuck job still fails the drill; the stall window is longer than the slowest legitimate pause in a
   * takeover (BullMQ's lock of a killed worker, 30 s, then its stalled-job check, up to 30 s more).
   * `capMs` only stops a run that never ends.
   */
  async function waitWhileProgressing<T>(
    label: string,
    probe: () => Promise<{ done: T | undefined; progress: string }>,
    { stallMs = 90_000, capMs = 480_000 } = {},
  ): Promise<T> {
    const started = Date.now();
    let lastProgress = '';
    let lastChange = Date.now();
    for (;;) {
      const { done, progress } = await probe();
      if (done) return done;
      if (progress !== lastProgress) {
        lastProgress = progress;
        lastChange = Date.now();
      }
      if (Date.now() - lastChange > stallMs)
        throw new Error(`${label}: no progress for ${stallMs} ms (stuck at ${progress})`);
      if (Date.now() - started > capMs)
        throw new Error(`${label}: still moving but not reached within ${capMs} ms (at ${progress})`);
      await sleep(250);
    }
  }

  beforeAll(async () => {
    ({ db, figures } = deployment());
    llm = await new FakeLlmServer().start();
    embeddings = await new FakeEmbeddings(8).start();
    // Slow enough that ingest is still under way when a second worker has started (start-up is seconds on a busy machine).
    embeddings.delayMs = 400;
    api = await start('api');
    token = await signUp(api.baseUrl, 'crash');
  }, 240_000);

  afterAll(async () => {
    await llm?.stop();
    await embeddings?.stop();
  });

  /** Documents long enough for several chunks each; each upload queues one ingest job (no worker yet). */
  async function seedProject(name: string): Promise<{ projectId: string; documentIds: string[] }> {
    const projectId = (await b('POST', '/api/projects', { name })).json.data.id;
    const documentIds: string[] = [];
    for (let i = 0; i < DOCS_PER_SCENARIO; i += 1) {
      const paragraphs = Array.from(
        { length: 6 },
        (_, p) =>
          `Paragraph ${p} of document ${i} in ${name}: ${'the crash drill checks recovery of indexing jobs '.repeat(3)}`,
      );
      const form = new FormData();
      form.append('file', new Blob([paragraphs.join('\n\n')], { type: 'text/markdown' }), `doc-${i}.md`);
      form.append('projectId', projectId);
      form.append('title', `${name} doc ${i}`);
      const res = await call(api.baseUrl, { method: 'POST', path: '/api/documents/upload', token, rawBody: form });
      if (res.status !== 201) throw new Error(`upload → ${res.status} ${res.text}`);
      documentIds.push(res.json.data.id);
    }
    return { projectId, documentIds };
  }

  /** Starts an agent run whose model asks for create_task, then hangs on its second turn. */
  async function startAgentRun(projectId: string, title: string): Promise<string> {
    llm.play({ toolCalls: [{ name: 'create_task', arguments: { title, project_id: projectId } }] }, { hang: true });
    const res = await b('POST', '/api/agent/execute', { projectId, input: `make the task ${title}` });
    expect(res.status).toBe(202);
    return res.json.data.jobId;
  }

  async function jobsOf(projectId: string): Promise<{ id: string; status: string; attempts: number; done: number }[]> {
    return (await db.query(`SELECT id, status, attempts, done FROM indexing_jobs WHERE project_id = $1`, [projectId]))
      .rows;
  }

  /** After recovery: every job final, each document stored once (no duplicate chunks), the run and its tool call once. */
  async function verify(
    label: string,
    projectId: string,
    documentIds: string[],
    runId: string,
    title: string,
    embeddedBefore: number,
  ): Promise<void> {
    // Issue 16: the jobs were not stuck, only slow. Each one embeds in batches behind a 400 ms fake
    // provider and a worker runs one job at a time, so the time after the kill is the remaining jobs'
    // work, which grows with the machine's load (the timeline figure below shows it); a fixed 45 s failed
    // on a busy box. Progress = each job's status, attempts and documents done.
    const jobs = await waitWhileProgressing(`${label}: every ingest job final`, async () => {
      const rows = await jobsOf(projectId);
      const done = rows.length === documentIds.length && rows.every((r) => FINAL.includes(r.status)) ? rows : undefined;
      return {
        done,
        progress: rows
          .map((r) => `${r.status}/${r.attempts}/${r.done}`)
          .sort()
          .join(','),
      };
    });
    const run = await waitFor(
      `${label}: agent run final`,
      async () => {
        const r = (await b('GET', `/api/agent/status/${runId}`)).json.data;
        return FINAL.includes(r.status) ? r : undefined;
      },
      30_000,
    );
    const notSucceeded = jobs.filter((j) => j.status !== 'succeeded').length;
    const duplicates = (
      await db.query(
        `SELECT count(*)::int AS n FROM (SELECT document_id, chunk_index FROM document_chunks WHERE document_id = ANY($1::uuid[]) GROUP BY 1, 2 HAVING count(*) > 1) d`,
        [documentIds],
      )
    ).rows[0].n as number;
    const docs = (await db.query(`SELECT id, status FROM documents WHERE id = ANY($1::uuid[])`, [documentIds]))
      .rows as { id: string; status: string }[];
    const chunkTexts = (
      await db.query(`SELECT text FROM document_chunks WHERE document_id = ANY($1::uuid[])`, [documentIds])
    ).rows.map((r: { text: string }) => r.text);
    // Texts embedded more than once: the work a killed worker had in flight, done again (stored once).
    const embedded = embeddings.texts.slice(embeddedBefore);
    const reEmbedded = chunkTexts.filter((text: string) => embedded.filter((e) => e === text).length > 1).length;
    const tasks = (await db.query(`SELECT count(*)::int AS n FROM tasks WHERE title = $1`, [title])).rows[0]
      .n as number;
    figures[`${label}: ingest jobs lost / not succeeded`] =
      `${notSucceeded} of ${jobs.length} (attempts: ${jobs.map((j) => j.attempts).join(',')})`;
    figures[`${label}: duplicate stored chunks`] = duplicates;
    // Where the time went: a stuck job shows as one long run or a long gap before its last attempt.
    const timeline = (
      await db.query(
        `SELECT attempts, round(extract(epoch FROM (started_at - created_at)))::int AS waited_s, round(extract(epoch FROM (finished_at - started_at)) * 10)::float / 10 AS ran_s
         FROM indexing_jobs WHERE project_id = $1 ORDER BY finished_at`,
        [projectId],
      )
    ).rows as { attempts: number; waited_s: number; ran_s: number }[];
    figures[`${label}: jobs (attempts:waited s→ran s, by finish)`] = timeline
      .map((t) => `${t.attempts}:${t.waited_s}→${t.ran_s}`)
      .join(' ');
    figures[`${label}: chunks re-embedded after the kill`] = `${reEmbedded} of ${chunkTexts.length}`;
    figures[`${label}: agent run`] =
      `${run.status}, tool calls ${JSON.stringify(run.steps.filter((s: any) => s.type === 'tool_call').map((s: any) => s.status))}, tasks created ${tasks}`;
    expect(notSucceeded).toBe(0);
    expect(duplicates).toBe(0);
    expect(docs.every((d) => d.status === 'indexed')).toBe(true);
    expect(run.status).toBe('succeeded');
    expect(tasks).toBe(1);
  }

  async function scenario(label: string, takeOver: 'second-worker' | 'restart'): Promise<void> {
    const { projectId, documentIds } = await seedProject(label);
    const title = `task-${label}`;
    const embeddedBefore = embeddings.texts.length;
    const w1 = await start('worker');
    const runId = await startAgentRun(projectId, title);
    // Mid-job and mid-run: some documents done, a job running; the tool call made and the next model turn pending.
    await waitFor(`${label}: mid-work`, async () => {
      const done = (await jobsOf(projectId)).filter((j) => j.status === 'succeeded').length;
      const run = (await b('GET', `/api/agent/status/${runId}`)).json.data;
      const toolDone =
        run.steps.some((s: any) => s.type === 'tool_call' && s.status === 'ok') && llm.requests.length >= 2;
      return done >= 2 && toolDone;
    });
    const w2 = takeOver === 'second-worker' ? await start('worker') : undefined;
    llm.play({ content: `Finished ${label}.` });
    await kill9(w1);
    const killedAt = Date.now();
    if (takeOver === 'restart') await start('worker');
    await verify(label, projectId, documentIds, runId, title, embeddedBefore);
    figures[`${label}: recovered within`] = `${Date.now() - killedAt} ms`;
    for (const p of deployment().processes)
      if (p !== api && p.child.exitCode === null && p.child.signalCode === null) await kill9(p);
    void w2;
  }

  it('(a) a worker killed mid-ingest and mid-run: the second worker finishes everything once', async () => {
    await scenario('second-worker', 'second-worker');
  }, 600_000); // progress-bounded inside (waitWhileProgressing); this only stops a run that never ends

  it('(b) a worker killed mid-ingest and mid-run: its restart finishes everything once', async () => {
    await scenario('restart', 'restart');
  }, 90_000);

  /**
   * Issue 14: measured before the fix, 17 of 120 uploads stayed `uploaded` for good after a kill -9 during a
   * stream of uploads (the document row committed before its job's, and recovery only looked at jobs), and
   * a retry of the same file answered 409 pointing at the stuck document. Now recovery gives every
   * unfinished document without a live job an ingest job, and every answered upload ends final.
   */
  it('an all-in-one process killed during a stream of concurrent uploads: every answered upload ends final, none indexed twice', async () => {
    embeddings.delayMs = 0;
    const all = await start('all');
    const projectId = (
      await call(all.baseUrl, { method: 'POST', path: '/api/projects', token, body: { name: 'upload-stream' } })
    ).json.data.id as string;
    const bodyOf = (i: number) =>
      `# Upload ${i}\n\n${`Stream upload number ${i} checks that a kill -9 never strands a document. `.repeat(4 + (i % 5))}`;
    const answered = new Map<number, string>();
    let next = 0;
    let killed = false;
    const uploader = async () => {
      while (!killed && next < 120) {
        const i = next++;
        const form = new FormData();
        form.append('file', new Blob([bodyOf(i)], { type: 'text/markdown' }), `stream-${i}.md`);
        form.append('projectId', projectId);
        try {
          const res = await call(all.baseUrl, { method: 'POST', path: '/api/documents/upload', token, rawBody: form });
          if (res.status === 201) answered.set(i, res.json.data.id);
        } catch {
          return; // the process is gone
        }
      }
    };
    const uploaders = Array.from({ length: 40 }, uploader);
    await waitFor('uploads under way', async () => answered.size >= 30, 60_000);
    await kill9(all);
    killed = true;
    await Promise.all(uploaders);
    const killedAt = Date.now();
    const stranded = (
      await db.query(
        `SELECT count(*)::int AS n FROM documents d WHERE d.project_id = $1 AND d.status IN ('uploaded', 'processing')
         AND NOT EXISTS (SELECT 1 FROM indexing_jobs j WHERE j.status IN ('queued', 'running') AND d.id = ANY(j.document_ids))`,
        [projectId],
      )
    ).rows[0].n as number;
    const restarted = await start('all');
    // Recovery bound: stale after 1.5 s + a sweep every 0.3 s, plus the indexing itself on a busy machine.
    const docs = await waitFor(
      'every stored upload final',
      async () => {
        const rows = (
          await db.query(`SELECT id, status, chunk_count FROM documents WHERE project_id = $1`, [projectId])
        ).rows as { id: string; status: string; chunk_count: number }[];
        return rows.every((r) => r.status === 'indexed' || r.status === 'failed') ? rows : undefined;
      },
      60_000,
    );
    const recoveredIn = Date.now() - killedAt;
    const byId = new Map(docs.map((d) => [d.id, d]));
    const duplicates = (
      await db.query(
        `SELECT count(*)::int AS n FROM (SELECT document_id, chunk_index FROM document_chunks c JOIN documents d ON d.id = c.document_id
         WHERE d.project_id = $1 GROUP BY 1, 2 HAVING count(*) > 1) x`,
        [projectId],
      )
    ).rows[0].n as number;
    const miscounted = (
      await db.query(
        `SELECT count(*)::int AS n FROM documents d WHERE d.project_id = $1 AND d.status = 'indexed'
         AND d.chunk_count <> (SELECT count(*) FROM document_chunks c WHERE c.document_id = d.id)`,
        [projectId],
      )
    ).rows[0].n as number;
    // A client retrying an answered upload after the crash finds it final, not stuck.
    const [retryIndex, retryId] = [...answered.entries()][0];
    const form = new FormData();
    form.append('file', new Blob([bodyOf(retryIndex)], { type: 'text/markdown' }), `stream-${retryIndex}.md`);
    form.append('projectId', projectId);
    const retry = await call(restarted.baseUrl, {
      method: 'POST',
      path: '/api/documents/upload',
      token,
      rawBody: form,
    });

    figures['upload stream kill -9: answered uploads'] = answered.size;
    figures['upload stream kill -9: stored documents'] = docs.length;
    figures['upload stream kill -9: documents without a live job right after the kill'] = stranded;
    figures['upload stream kill -9: all final within'] = `${recoveredIn} ms (incl. restart)`;
    figures['upload stream kill -9: final states'] =
      `${docs.filter((d) => d.status === 'indexed').length} indexed, ${docs.filter((d) => d.status === 'failed').length} failed`;
    figures['upload stream kill -9: duplicate chunks / miscounted documents'] = `${duplicates} / ${miscounted}`;
    for (const id of answered.values()) expect(byId.get(id)?.status).toBe('indexed');
    expect(duplicates).toBe(0);
    expect(miscounted).toBe(0);
    expect(retry.status).toBe(409);
    expect(retry.json.error.details).toEqual({ existingId: retryId, existingStatus: 'indexed' });
    await kill9(restarted);
  }, 150_000);

  /**
   * Measured before the fix: 9 of 70 acknowledged calls missing, because counts were written behind after
   * the answer. Now each call waits until its count is committed (ApiKeyCallCounterService) before it is answered.
   */
  it('an api process killed mid-stream of Area A calls: every acknowledged call is counted', async () => {
    const created = await b('POST', '/api/api-keys', { name: 'crash', scopes: ['tasks:read'], expiresIn: 'never' });
    const { id: keyId, key } = created.json.data;
    let acknowledged = 0;
    let stop = false;
    const worker = async () => {
      while (!stop) {
        try {
          const res = await call(api.baseUrl, {
            method: 'POST',
            path: '/api/v1/public/mcp/call',
            token: key,
            body: { name: 'list_tasks', arguments: {} },
          });
          if (res.status === 200) acknowledged += 1;
        } catch {
          return; // the process is gone
        }
      }
    };
    const callers = Array.from({ length: 4 }, worker);
    await sleep(1500);
    await kill9(api);
    stop = true;
    await Promise.all(callers);
    api = await start('api');
    await sleep(500);
    const counted = Number(
      (await db.query(`SELECT call_count FROM api_keys WHERE id = $1`, [keyId])).rows[0].call_count,
    );
    figures['api kill -9: acknowledged Area A calls'] = acknowledged;
    figures['api kill -9: counted'] = counted;
    figures['api kill -9: lost call counts'] = Math.max(0, acknowledged - counted);
    expect(counted).toBeGreaterThanOrEqual(acknowledged);
  }, 60_000);
});
