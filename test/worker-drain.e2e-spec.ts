import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chunkText } from '../src/modules/rag/chunking/chunker';
import { buildOnce, startAppProcess, type AppProcess } from './support/app-process';
import { call, uploadMarkdown } from './support/drill-helpers';
import { holdApiBusy } from './support/busy-api';
import { FakeEmbeddings } from './support/fake-embeddings-server';
import { FakeLlmServer } from './support/fake-llm-server';
import { signUpWithProject, useProcessDeployment } from './support/process-deployment';
import { describeOnSharedServices } from './support/test-app';
import { jsonLines } from './support/json-lines';
import { waitFor } from './support/wait';

/** The job transition lines (context Jobs) of one job in a process's output. */
function transitions(output: string, jobId: string): Record<string, any>[] {
  return jsonLines(output).filter((line) => line.context === 'Jobs' && line.jobId === jobId);
}

const CHUNK_CHARS = 200;

/**
 * Uploads a Markdown text of `paragraphs` unique paragraphs (a chunk embedded twice shows in the embeddings server's
 * record) with its own X-Request-Id, and answers what the chunker will make of it.
 */
async function uploadLargeText(
  baseUrl: string,
  token: string,
  projectId: string,
  { paragraphs, label }: { paragraphs: number; label: string },
): Promise<{ documentId: string; expectedChunks: number; requestId: string }> {
  const text = Array.from(
    { length: paragraphs },
    (_, i) => `Paragraph ${i}: the ${label} test stores every chunk exactly once, after a takeover too (${i}).`,
  ).join('\n\n');
  const requestId = `drain-${label.replace(/ /g, '-')}-${Date.now()}`;
  return {
    documentId: await uploadMarkdown(baseUrl, token, {
      projectId,
      text,
      fileName: 'large.md',
      requestId,
      title: 'Large',
    }),
    expectedChunks: chunkText(text, { targetChars: CHUNK_CHARS, overlapChars: 0 }).length,
    requestId,
  };
}
/**
 * Thousands of chunks in hundreds of paced batches: SIGTERM lands mid-ingest with most of the text still to index,
 * even when the second worker's start lets the first store several times the threshold below meanwhile.
 */
const PARAGRAPHS = 6_000;

/**
 * A worker stopped mid-ingest (SIGTERM, as Kubernetes or compose stop it) hands its job back instead of holding it
 * until a lease runs out: it exits 0 within its grace period, and a second worker resumes the job within seconds,
 * ending with every chunk stored exactly once. Real processes on one PostgreSQL database: with TEST_REDIS_URL the
 * queue is BullMQ on Redis, without it BullMQ's PostgreSQL backend (two processes cannot share the embedded engine).
 */
describeOnSharedServices(
  `worker drain on SIGTERM (${process.env.TEST_REDIS_URL ? 'BullMQ on Redis' : "BullMQ's PostgreSQL backend"})`,
  () => {
    let embeddings: FakeEmbeddings;
    let llm: FakeLlmServer;
    const deployment = useProcessDeployment('drain', {
      env: () => ({
        ...embeddings.env(),
        RAG_CHUNK_TARGET_CHARS: String(CHUNK_CHARS),
        RAG_CHUNK_OVERLAP_CHARS: '0',
        // The stale-claim bound of a crashed worker, far above the resume time asserted: only a release can explain it.
        RAG_STALE_AFTER_MS: '60000',
        RAG_RECOVERY_INTERVAL_MS: '30000',
        LLM_PROVIDER: 'openai',
        LLM_BASE_URL: llm.baseUrl,
        LLM_MODEL: 'fake-model-1',
        AGENT_STALE_AFTER_MS: '60000',
        AGENT_RECOVERY_INTERVAL_MS: '30000',
      }),
    });
    const start = (role: 'api' | 'worker', extra: Record<string, string> = {}) => deployment().start(role, extra);
    // One api process serves the three tests (only workers are stopped under test); its own clean stop is the last test.
    let sharedApi: AppProcess | undefined;
    const apiProcess = async () => (sharedApi ??= await start('api', { WEBHOOK_ALLOW_PRIVATE: 'true' }));

    beforeAll(async () => {
      embeddings = await new FakeEmbeddings(8).start();
      llm = await new FakeLlmServer().start();
    });

    afterAll(async () => {
      await embeddings?.stop();
      await llm?.stop();
    });

    // A held request must not outlive its test: the api process's own stop waits for the requests in flight.
    let releaseApi: (() => void) | undefined;
    afterEach(() => releaseApi?.());

    it('SIGTERM mid-ingest: exit 0 within the grace period, another worker resumes within 5 s, every chunk stored once, every line JSON', async () => {
      const { db, figures } = deployment();
      const api = await apiProcess();
      // The API serves a request throughout, so the workers pace the document (a worker-only process follows the
      // API's published load): hundreds of short batches, nothing embedded ahead for the drain to throw away.
      releaseApi = holdApiBusy(api.baseUrl);
      // Both workers are up before the upload: the one that takes the job is stopped mid-ingest, the other resumes.
      const workers = [await start('worker'), await start('worker')];
      const { token, projectId } = await signUpWithProject(api.baseUrl, 'drain', 'Drain');

      // Unique paragraphs: a chunk embedded twice (work redone after the takeover) shows in the embeddings server's record.
      const { documentId, expectedChunks, requestId } = await uploadLargeText(api.baseUrl, token, projectId, {
        paragraphs: PARAGRAPHS,
        label: 'worker drain',
      });
      const jobId = (await db.query(`SELECT id FROM indexing_jobs WHERE $1 = ANY(document_ids)`, [documentId])).rows[0]
        .id as string;

      const chunksStored = async () =>
        Number(
          (await db.query(`SELECT count(*) AS n FROM document_chunks WHERE document_id = $1`, [documentId])).rows[0].n,
        );
      // Mid-ingest: some chunks stored, most not.
      await waitFor('a worker is indexing', async () => (await chunksStored()) >= 100, {
        timeoutMs: 120_000,
        intervalMs: 200,
      });
      const first = await waitFor('the worker that started the job', async () =>
        workers.find((worker) => transitions(worker.output(), jobId).some((line) => line.event === 'started')),
      );
      const second = workers.find((worker) => worker !== first)!;
      const before = await chunksStored();
      expect(before).toBeLessThan(expectedChunks / 2);

      const signalled = Date.now();
      first.child.kill('SIGTERM');
      const code = await first.exited;
      const stoppedMs = Date.now() - signalled;
      figures['chunks stored at SIGTERM'] = `${before} of ${expectedChunks}`;
      figures['SIGTERM → exit'] = `${stoppedMs} ms (code ${code})`;
      expect(code).toBe(0);
      expect(stoppedMs).toBeLessThan(10_000); // SHUTDOWN_TIMEOUT_MS, the grace period
      expect(first.output()).toContain('"msg":"stopped cleanly"');
      expect(first.output()).not.toContain('shutdown timed out');

      const finalDocument = await waitFor(
        'the document indexed by the second worker',
        async () => {
          const doc = (await call(api.baseUrl, { method: 'GET', path: `/api/documents/${documentId}`, token })).json
            .data;
          return doc.status === 'indexed' || doc.status === 'failed' ? doc : undefined;
        },
        { timeoutMs: 300_000, intervalMs: 500 },
      );
      expect(finalDocument.status).toBe('indexed');
      const job = (await call(api.baseUrl, { method: 'GET', path: `/api/rag/ingest/${jobId}`, token })).json.data;
      expect(job).toMatchObject({ status: 'succeeded', progress: { total: 1, done: 1, failed: 0 } });

      // Exactly the right chunks: the count the chunker gives, each index once, none missing.
      const stored = (
        await db.query(
          `SELECT count(*)::int AS n, count(DISTINCT chunk_index)::int AS distinct_n, min(chunk_index) AS lo, max(chunk_index) AS hi FROM document_chunks WHERE document_id = $1`,
          [documentId],
        )
      ).rows[0];
      expect(stored).toEqual({ n: expectedChunks, distinct_n: expectedChunks, lo: 0, hi: expectedChunks - 1 });
      expect(finalDocument.chunkCount).toBe(expectedChunks);
      // No work done twice: the first worker stopped between two batches, after storing the one it had embedded.
      const embeddedTwice = embeddings.texts.length - new Set(embeddings.texts).size;
      figures['chunks embedded twice'] = embeddedTwice;
      expect(embeddedTwice).toBe(0);

      // One line per transition, each naming the upload's request id: queued (api), started and released (first
      // worker), resumed and finished (second worker); the resume within 5 s of the release.
      const queued = transitions(api.output(), jobId);
      const firstLines = transitions(first.output(), jobId);
      const secondLines = transitions(second.output(), jobId);
      expect(queued.map((line) => line.event)).toEqual(['queued']);
      expect(firstLines.map((line) => line.event)).toEqual(['started', 'released']);
      expect(secondLines.map((line) => line.event)).toEqual(['resumed', 'finished']);
      for (const line of [...queued, ...firstLines, ...secondLines])
        expect(line).toMatchObject({ kind: 'indexing', jobId, requestId, level: expect.stringMatching(/^(info)$/) });
      expect(firstLines[1]).toMatchObject({ reason: 'shutdown', durationMs: expect.any(Number) });
      expect(secondLines[1]).toMatchObject({ status: 'succeeded', durationMs: expect.any(Number) });
      const resumeMs = Date.parse(secondLines[0].time) - Date.parse(firstLines[1].time);
      figures['release → resume'] = `${resumeMs} ms`;
      expect(resumeMs).toBeLessThan(5_000);
      // The second worker's other lines about this job carry the request id too (the request context is carried in).
      expect(
        jsonLines(second.output())
          .filter((line) => line.jobId === jobId)
          .every((line) => line.requestId === requestId),
      ).toBe(true);

      // Every line of every worker, first to last, is a JSON object (the api's: the last test).
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
      for (const p of [first, second]) expect(() => jsonLines(p.output())).not.toThrow();
    }, 600_000);

    it('SIGTERM mid agent run: exit 0, another worker resumes the run from its recorded steps within 5 s, no tool call twice', async () => {
      const { db, figures } = deployment();
      const api = await apiProcess();
      const first = await start('worker');
      const { token, projectId } = await signUpWithProject(api.baseUrl, 'drain-agent', 'Drain agent');

      // The model asks for one write, then its second turn hangs: the run is mid-way when the worker is stopped.
      llm.play(
        { toolCalls: [{ name: 'create_task', arguments: { title: 'Drained task', project_id: projectId } }] },
        { hang: true },
      );
      const requestId = `drain-run-${Date.now()}`;
      const started = await call(api.baseUrl, {
        method: 'POST',
        path: '/api/agent/execute',
        token,
        body: { projectId, input: 'make the task', approval: 'none' },
        headers: { 'X-Request-Id': requestId },
      });
      expect(started.status).toBe(202);
      const runId = started.json.data.jobId as string;
      const status = async () =>
        (await call(api.baseUrl, { method: 'GET', path: `/api/agent/status/${runId}`, token })).json.data;
      await waitFor(
        'the tool call done and the second model turn under way',
        async () =>
          ((await status()).steps.some((step: any) => step.type === 'tool_call' && step.status === 'ok') &&
            llm.requests.length === 2) ||
          undefined,
        { timeoutMs: 60_000 },
      );
      const second = await start('worker');

      llm.play({ content: 'Finished by the second worker.' });
      const signalled = Date.now();
      first.child.kill('SIGTERM');
      const code = await first.exited;
      figures['agent run: SIGTERM → exit'] = `${Date.now() - signalled} ms (code ${code})`;
      expect(code).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(10_000);

      const run = await waitFor(
        'the run finished by the second worker',
        async () => {
          const current = await status();
          return ['succeeded', 'failed', 'cancelled'].includes(current.status) ? current : undefined;
        },
        { timeoutMs: 60_000 },
      );
      expect(run).toMatchObject({ status: 'succeeded', output: 'Finished by the second worker.' });
      expect(run.steps.filter((step: any) => step.type === 'tool_call').map((step: any) => step.status)).toEqual([
        'ok',
      ]);
      expect(Number((await db.query(`SELECT count(*) AS n FROM tasks WHERE title = 'Drained task'`)).rows[0].n)).toBe(
        1,
      );

      const firstLines = transitions(first.output(), runId);
      const secondLines = transitions(second.output(), runId);
      expect(transitions(api.output(), runId).map((line) => line.event)).toEqual(['queued']);
      expect(firstLines.map((line) => line.event)).toEqual(['started', 'released']);
      expect(secondLines.map((line) => line.event)).toEqual(['resumed', 'finished']);
      for (const line of [...firstLines, ...secondLines]) expect(line).toMatchObject({ kind: 'agent_run', requestId });
      const resumeMs = Date.parse(secondLines[0].time) - Date.parse(firstLines[1].time);
      figures['agent run: release → resume'] = `${resumeMs} ms`;
      expect(resumeMs).toBeLessThan(5_000);

      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
      for (const p of [first, second]) expect(() => jsonLines(p.output())).not.toThrow();
    }, 300_000);

    it('SIGTERM during a webhook delivery to a receiver that never answers: exit 0, the next worker delivers it', async () => {
      const { figures } = deployment();
      // The first delivery gets no answer at all: a status line alone completes a delivery (its body is never read), and
      // WEBHOOK_TIMEOUT_MS (10 s) is well past the drain's grace.
      const received: IncomingHttpHeaders[] = [];
      const trickling: ServerResponse[] = [];
      const receiver = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          received.push(req.headers);
          if (received.length > 1) return void res.writeHead(200).end('ok');
          trickling.push(res);
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      try {
        const api = await apiProcess();
        const first = await start('worker', { WEBHOOK_ALLOW_PRIVATE: 'true' });
        const { token, projectId } = await signUpWithProject(api.baseUrl, 'drain-hook', 'Drain hook');
        llm.play({ content: 'Done, tell the hook.' });
        const runId = (
          await call(api.baseUrl, {
            method: 'POST',
            path: '/api/agent/execute',
            token,
            body: { projectId, input: 'say done', webhookUrl },
          })
        ).json.data.jobId as string;
        await waitFor('the first delivery under way', async () => received.length >= 1 || undefined, {
          timeoutMs: 60_000,
        });

        const signalled = Date.now();
        first.child.kill('SIGTERM');
        const code = await first.exited;
        figures['webhook: SIGTERM → exit'] = `${Date.now() - signalled} ms (code ${code})`;
        expect(code).toBe(0);
        expect(Date.now() - signalled).toBeLessThan(10_000);

        const second = await start('worker', { WEBHOOK_ALLOW_PRIVATE: 'true' });
        const deliveries = await waitFor(
          'the delivery recorded by the second worker',
          async () => {
            const run = (await call(api.baseUrl, { method: 'GET', path: `/api/agent/status/${runId}`, token })).json
              .data;
            const list = run.webhook?.deliveries ?? [];
            return list.length > 0 && list.every((delivery: any) => delivery.status === 'delivered') ? list : undefined;
          },
          { timeoutMs: 60_000 },
        );
        expect(deliveries).toHaveLength(1);
        // The same delivery, sent again: a receiver recognises it by its id.
        expect(received).toHaveLength(2);
        expect(received[1]['atrium-delivery-id']).toBe(received[0]['atrium-delivery-id']);
        second.child.kill('SIGTERM');
        expect(await second.exited).toBe(0);
      } finally {
        for (const res of trickling) res.destroy();
        await new Promise<void>((resolve) => receiver.close(() => resolve()));
      }
    }, 300_000);

    it('the api process that served them stops cleanly on SIGTERM, every line of its output JSON', async () => {
      const api = await apiProcess();
      api.child.kill('SIGTERM');
      expect(await api.exited).toBe(0);
      expect(api.output()).toContain('"msg":"stopped cleanly"');
      expect(() => jsonLines(api.output())).not.toThrow();
    }, 60_000);
  },
);

/**
 * The zero-config default: one process (APP_ROLE=all) on the embedded engine, whose queue is BullMQ's PostgreSQL
 * backend in that engine. Stopped mid-ingest it hands the job back and exits 0; started again on the same DATA_DIR
 * it resumes the job within seconds of being up, not after a stale-claim bound.
 */
describe('worker drain on the embedded default: SIGTERM mid-ingest, then a restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-drain-embedded-'));
  let embeddings: FakeEmbeddings;
  const processes: AppProcess[] = [];

  beforeAll(async () => {
    buildOnce();
    embeddings = await new FakeEmbeddings(8).start();
  }, 240_000);

  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await embeddings?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('exits 0 within the grace period and the restarted process resumes the job within 5 s, every chunk stored once', async () => {
    const env = {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      SHUTDOWN_DRAIN_DELAY_MS: '1000',
      ...embeddings.env(),
      RAG_CHUNK_TARGET_CHARS: String(CHUNK_CHARS),
      RAG_CHUNK_OVERLAP_CHARS: '0',
      RAG_STALE_AFTER_MS: '60000',
      RAG_RECOVERY_INTERVAL_MS: '30000',
    };
    const first = await startAppProcess(env);
    processes.push(first);
    const credentials = { email: 'drain-embedded@example.com', password: 'drain-test-password', name: 'Drain' };
    expect((await call(first.baseUrl, { method: 'POST', path: '/api/auth/register', body: credentials })).status).toBe(
      201,
    );
    const login = async (baseUrl: string) =>
      (
        await call(baseUrl, {
          method: 'POST',
          path: '/api/auth/login',
          body: { email: credentials.email, password: credentials.password },
        })
      ).json.data.accessToken as string;
    let token = await login(first.baseUrl);
    const projectId = (
      await call(first.baseUrl, { method: 'POST', path: '/api/projects', token, body: { name: 'Drain' } })
    ).json.data.id as string;
    // The embedder's answers are slowed so the ingest's pace, not the machine's, decides where SIGTERM lands: the
    // first hundred chunks take several batches, and after them no batch can finish within the drain delay.
    embeddings.delayMs = 300;
    const { documentId, expectedChunks, requestId } = await uploadLargeText(first.baseUrl, token, projectId, {
      paragraphs: 2_000, // SIGTERM follows the first hundred chunks at once: most of the rest is left to resume
      label: 'embedded drain',
    });
    const documentOn = async (baseUrl: string) =>
      (await call(baseUrl, { method: 'GET', path: `/api/documents/${documentId}`, token })).json.data;
    await waitFor(
      'indexing under way',
      async () => ((await documentOn(first.baseUrl)).progress?.chunksIndexed ?? 0) >= 100 || undefined,
      { timeoutMs: 120_000, intervalMs: 100 },
    );

    embeddings.delayMs = 1_500;
    const signalled = Date.now();
    first.child.kill('SIGTERM');
    const code = await first.exited;
    embeddings.delayMs = 0;
    expect(code).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);
    const released = jsonLines(first.output()).filter((line) => line.context === 'Jobs' && line.event === 'released');
    expect(released).toEqual([expect.objectContaining({ kind: 'indexing', requestId, reason: 'shutdown' })]);
    const jobId = released[0].jobId as string;

    const second = await startAppProcess(env);
    processes.push(second);
    const up = jsonLines(second.output()).find((line) => line.msg === 'listening')!;
    const resumed = await waitFor(
      'the resumed line',
      async () =>
        jsonLines(second.output().slice(0, second.output().lastIndexOf('\n') + 1)).find(
          (line) => line.context === 'Jobs' && line.jobId === jobId && line.event === 'resumed',
        ),
      { timeoutMs: 30_000 },
    );
    expect(resumed).toMatchObject({ requestId, kind: 'indexing' });
    expect(Date.parse(resumed.time) - Date.parse(up.time)).toBeLessThan(5_000);

    token = await login(second.baseUrl);
    const done = await waitFor(
      'the document indexed after the restart',
      async () => {
        const doc = await documentOn(second.baseUrl);
        return doc.status === 'indexed' || doc.status === 'failed' ? doc : undefined;
      },
      { timeoutMs: 300_000, intervalMs: 500 },
    );
    expect(done).toMatchObject({ status: 'indexed', chunkCount: expectedChunks });
    expect(embeddings.texts.length - new Set(embeddings.texts).size).toBe(0);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    for (const p of [first, second]) expect(() => jsonLines(p.output())).not.toThrow();
  }, 600_000);
});
