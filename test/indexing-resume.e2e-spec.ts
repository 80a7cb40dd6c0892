import { call } from './support/drill-helpers';
import { holdApiBusy } from './support/busy-api';
import { FakeEmbeddings } from './support/fake-embeddings-server';
import { signUpWithProject, useProcessDeployment } from './support/process-deployment';
import { describeOnSharedServices } from './support/test-app';
import { waitFor } from './support/wait';

/**
 * A worker killed (SIGKILL: no drain, no progress written) during a forced reindex, after some batches committed and
 * before the job recorded any progress: the worker that takes the job over (stale heartbeat) resumes after the
 * committed chunks instead of clearing the document and embedding it from the start. Real processes on one
 * PostgreSQL database; the queue on Redis with TEST_REDIS_URL, else BullMQ's PostgreSQL backend.
 */
describeOnSharedServices(
  `indexing resume after a crash (${process.env.TEST_REDIS_URL ? 'BullMQ on Redis' : "BullMQ's PostgreSQL backend"})`,
  () => {
    let embeddings: FakeEmbeddings;
    const deployment = useProcessDeployment('resume', {
      env: () => ({
        ...embeddings.env(),
        RAG_CHUNK_TARGET_CHARS: '200',
        RAG_CHUNK_OVERLAP_CHARS: '0',
        RAG_STALE_AFTER_MS: '3000',
        RAG_RECOVERY_INTERVAL_MS: '500',
      }),
    });

    beforeAll(async () => {
      embeddings = await new FakeEmbeddings(8).start();
    });

    let releaseApi: (() => void) | undefined;
    afterAll(async () => {
      releaseApi?.();
      await embeddings?.stop();
    });

    it('a reindex killed between two progress records resumes after its committed chunks: none is embedded twice', async () => {
      const { start, db } = deployment();
      const api = await start('api');
      // The API serves a request throughout, so the worker paces the document (it follows the API's published load):
      // short batches, nothing embedded ahead of the one in flight at the kill.
      releaseApi = holdApiBusy(api.baseUrl);
      const first = await start('worker');
      const { token, projectId } = await signUpWithProject(api.baseUrl, 'resume', 'Resume');
      const text = Array.from(
        { length: 1_500 },
        (_, i) => `Paragraph ${i}: a reindex taken over after a crash embeds each chunk once (${i}).`,
      ).join('\n\n');
      const form = new FormData();
      form.append('file', new Blob([text], { type: 'text/markdown' }), 'resume.md');
      form.append('projectId', projectId);
      form.append('title', 'Resume');
      const upload = await call(api.baseUrl, { method: 'POST', path: '/api/documents/upload', token, rawBody: form });
      expect(upload.status).toBe(201);
      const documentId = (upload.json as any).data.id as string;
      const documentView = async () =>
        ((await call(api.baseUrl, { method: 'GET', path: `/api/documents/${documentId}`, token })).json as any).data;
      const indexed = await waitFor(
        'the upload indexed',
        async () => ((await documentView()).status === 'indexed' ? await documentView() : undefined),
        { timeoutMs: 180_000, intervalMs: 300 },
      );
      const total = indexed.chunkCount as number;

      // Slow batches: several commit before the first progress record (at most one a second).
      embeddings.delayMs = 300;
      const embeddedBefore = embeddings.texts.length;
      const reindex = await call(api.baseUrl, { method: 'POST', path: '/api/rag/reindex', token, body: { projectId } });
      expect(reindex.status).toBe(202);
      const jobId = (reindex.json as any).data.jobId as string;
      const state = async () =>
        (
          await db.query(
            `SELECT (SELECT count(*)::int FROM document_chunks WHERE document_id = $1) AS stored, j.current_document_id, j.current_chunks_done
             FROM indexing_jobs j WHERE j.id = $2`,
            [documentId, jobId],
          )
        ).rows[0] as { stored: number; current_document_id: string | null; current_chunks_done: number };
      // The window: the document cleared and recorded as current, batches committed, no progress recorded yet.
      await waitFor(
        'batches committed before any progress record',
        async () => {
          const now = await state();
          return now.current_document_id === documentId &&
            now.current_chunks_done === 0 &&
            now.stored > 0 &&
            now.stored < total
            ? now
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 20 },
      );
      first.child.kill('SIGKILL');
      await first.exited;
      const committed = (
        await db.query(`SELECT chunk_index, text FROM document_chunks WHERE document_id = $1 ORDER BY chunk_index`, [
          documentId,
        ])
      ).rows as { chunk_index: number; text: string }[];
      expect(committed.length).toBeGreaterThan(0);
      expect(committed.length).toBeLessThan(total);

      embeddings.delayMs = 0;
      await start('worker');
      const done = await waitFor(
        'the reindex finished by the second worker',
        async () => {
          const job = (
            (await call(api.baseUrl, { method: 'GET', path: `/api/rag/ingest/${jobId}`, token })).json as any
          ).data;
          return ['succeeded', 'failed', 'cancelled'].includes(job.status) ? job : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 300 },
      );
      expect(done.status).toBe('succeeded');
      expect(await documentView()).toMatchObject({ status: 'indexed', chunkCount: total });
      const stored = (
        await db.query(
          `SELECT count(*)::int AS n, count(DISTINCT chunk_index)::int AS distinct_n FROM document_chunks WHERE document_id = $1`,
          [documentId],
        )
      ).rows[0];
      expect(stored).toEqual({ n: total, distinct_n: total });

      // The chunks committed before the kill were embedded once by the reindex: the second worker went on after them.
      const reindexTexts = embeddings.texts.slice(embeddedBefore);
      const embeddedAgain = committed.filter(
        (chunk) => reindexTexts.filter((t) => t.endsWith(chunk.text)).length > 1,
      ).length;
      // eslint-disable-next-line no-console
      console.log(
        `reindex killed with ${committed.length} of ${total} chunks committed; embedded again after the takeover: ${embeddedAgain}; reindex embedded ${reindexTexts.length} texts`,
      );
      expect(embeddedAgain).toBe(0);
      expect(reindexTexts.length).toBeLessThan(total + 2 * 64); // at most the batch in flight at the kill, and one more
    }, 600_000);
  },
);
