import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { DatabasePool } from '../src/database/database-pool.js';
import { KYSELY, type Db } from '../src/database/kysely.provider.js';
import { DocumentIndexStateService } from '../src/modules/documents/document-index-state.service.js';
import { ChunkWriterService, INDEX_BATCH_CHUNKS } from '../src/modules/rag/chunk-writer.service.js';
import { IndexingJobRunner } from '../src/modules/rag/indexing-job.runner.js';
import { IndexingJobsService } from '../src/modules/rag/indexing-jobs.service.js';
import { bearer, insertTextDocument, makeApiKey, makeUser, toolResult, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** Upload → indexed → found; visibility in SQL; delete; ingest/reindex state machine with cancel. */
describe('RAG (e2e)', () => {
  let app: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let projectId: string;

  const upload = (user: TestUser, name: string, text: string, isPublic = false) =>
    app.http
      .post('/api/documents/upload')
      .set(bearer(user.token))
      .field('projectId', projectId)
      .field('isPublic', String(isPublic))
      .attach('file', Buffer.from(text), name)
      .expect(201)
      .then((res) => res.body.data as { id: string });

  const search = (user: TestUser, query: string, extra: Record<string, unknown> = {}) =>
    app.http
      .post('/api/rag/search')
      .set(bearer(user.token))
      .send({ query, projectId, ...extra });

  async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error('timed out waiting');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  const waitIndexed = (user: TestUser, id: string) =>
    waitFor(async () => {
      const res = await app.http.get(`/api/documents/${id}`).set(bearer(user.token)).expect(200);
      return res.body.data.status === 'indexed' ? res.body.data : undefined;
    });

  const waitJob = (user: TestUser, jobId: string, states = ['succeeded', 'failed', 'cancelled']) =>
    waitFor(async () => {
      const res = await app.http.get(`/api/rag/ingest/${jobId}`).set(bearer(user.token)).expect(200);
      return states.includes(res.body.data.status) ? res.body.data : undefined;
    });

  beforeAll(async () => {
    app = await startTestApp();
    owner = await makeUser(app);
    member = await makeUser(app);
    stranger = await makeUser(app);
    projectId = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'RAG' }).expect(201)).body
      .data.id;
    await app.http
      .post(`/api/projects/${projectId}/members`)
      .set(bearer(owner.token))
      .send({ userId: member.id, role: 'editor' })
      .expect(201);
  }, 120_000);

  afterAll(async () => {
    await app?.close();
  });

  it('indexes an upload by itself and finds it first for a distinctive query, with exact offsets', async () => {
    const filler = Array.from(
      { length: 5 },
      (_, i) => `General note ${i} about meetings, budgets and the weekly schedule.`,
    ).join(' ');
    await upload(owner, 'other.md', `# Budget\n\n${filler}`, true);
    const text = `# Runbook\n\n${filler}\n\n## Incident\n\nThe flux capacitor overheats when the quokka telemetry exceeds 88 gigawatts.`;
    const doc = await upload(owner, 'runbook.md', text, true);
    const indexed = await waitIndexed(owner, doc.id);
    expect(indexed.chunkCount).toBeGreaterThan(0);

    for (const mode of ['hybrid', 'keyword', 'vector']) {
      const res = await search(owner, 'quokka telemetry flux capacitor', { mode }).expect(200);
      const [first] = res.body.data.results;
      expect(first.documentId).toBe(doc.id);
      expect(first.documentTitle).toBeTruthy();
      expect(text.slice(first.startOffset, first.endOffset)).toBe(first.text);
      expect(first.text).toContain('quokka');
      expect(typeof res.body.data.tookMs).toBe('number');
      expect(first).toEqual(
        expect.objectContaining({
          chunkId: expect.any(String),
          chunkIndex: expect.any(Number),
          score: expect.any(Number),
        }),
      );
    }
    const hybrid = (await search(owner, 'quokka telemetry', { topK: 1 }).expect(200)).body.data.results;
    expect(hybrid).toHaveLength(1);
    expect(hybrid[0].keywordScore).toBeGreaterThan(0);
    expect(hybrid[0].vectorScore).toBeGreaterThan(0);
  });

  it('serves a hybrid hit that only the vector side found (a misspelt query), with its text and both scores', async () => {
    // No word of the query is in any document, so the keyword list is empty and the hit comes from the vector
    // list, which in hybrid mode ranks without loading: the service loads the hit after fusion.
    const text = '# Orchestra\n\nThe marmalade xylophonist rehearses fortissimo passages every Thursday.';
    const doc = await upload(owner, 'orchestra.md', text, true);
    await waitIndexed(owner, doc.id);
    const misspelt = 'marmalaid xylofonist fortisimo';
    expect((await search(owner, misspelt, { mode: 'keyword' }).expect(200)).body.data.results).toEqual([]);
    const [first] = (await search(owner, misspelt, { mode: 'hybrid', topK: 3 }).expect(200)).body.data.results;
    expect(first).toEqual(
      expect.objectContaining({ documentId: doc.id, documentTitle: expect.any(String), keywordScore: 0 }),
    );
    expect(first.vectorScore).toBeGreaterThan(0);
    expect(text.slice(first.startOffset, first.endOffset)).toBe(first.text);
    expect(first.text).toContain('xylophonist');
  });

  it('gives every pooled connection the HNSW search settings once (and JIT off), so a vector list needs no transaction of its own', async () => {
    const db = app.app.get<Db>(KYSELY);
    // Several connections at once: each one the pool opens or hands out has them.
    const sessions = await Promise.all(
      Array.from({ length: 4 }, () =>
        db.connection().execute(async (connection) => {
          const { rows } = await sql<{ ef: string | null; iterative: string | null; jit: string }>`
            SELECT current_setting('hnsw.ef_search', true) AS ef, current_setting('hnsw.iterative_scan', true) AS iterative, current_setting('jit') AS jit, pg_sleep(0.05)`.execute(
            connection,
          );
          return rows[0];
        }),
      ),
    );
    // JIT off: a search statement whose cost estimate crosses jit_above_cost paid a long compilation (docs/perf/rag.md).
    // ef_search 40 is also pgvector's default; the iterative scan and JIT, off by default, show the settings were applied.
    for (const session of sessions) expect(session).toMatchObject({ ef: '40', iterative: 'relaxed_order', jit: 'off' });
    // And a search still finds what it should with them (the vector list runs as one statement).
    const doc = await upload(
      owner,
      'settings.md',
      '# Zanzibar clove harvest\n\nThe zanzibar clove harvest yields aromatic buds.',
    );
    await waitIndexed(owner, doc.id);
    const res = await search(owner, 'zanzibar clove harvest', { mode: 'vector', topK: 3 }).expect(200);
    expect(res.body.data.results[0].documentId).toBe(doc.id);
  });

  it('runs the search lists as named statements of their connection on PostgreSQL (parsed and planned once), not on the embedded engine', async () => {
    const doc = await upload(owner, 'named.md', '# Quokka orchard\n\nThe quokka orchard grows plums.', true);
    await waitIndexed(owner, doc.id);
    // Named statements and the search session settings on the same connections: a vector list run as a named
    // statement on a connection Kysely never took still gets them (the member searches a project document).
    for (let i = 0; i < 7; i += 1) {
      for (const [user, mode] of [
        [owner, 'hybrid'],
        [member, 'vector'],
        [member, 'keyword'],
      ] as const) {
        const res = await search(user, 'quokka orchard plums', { mode }).expect(200);
        expect(res.body.data.results[0].documentId).toBe(doc.id);
      }
    }
    const db = app.app.get<Db>(KYSELY);
    const prepared = await Promise.all(
      Array.from({ length: 4 }, () =>
        db.connection().execute(async (connection) => {
          const { rows } = await sql<{ statement: string }>`
            SELECT statement, pg_sleep(0.05) FROM pg_prepared_statements WHERE statement LIKE '%document_chunks%'`.execute(
            connection,
          );
          return rows.map((row) => row.statement);
        }),
      ),
    );
    const statements = new Set(prepared.flat());
    if (app.database.kind === 'embedded') {
      expect(statements.size).toBe(0);
    } else {
      expect([...statements].some((text) => text.includes('rag_postings'))).toBe(true);
      expect([...statements].some((text) => text.includes('<=>') && !text.includes('rag_postings'))).toBe(true);
    }
  });

  it('never returns a private document to another member or a stranger', async () => {
    const secret = await upload(owner, 'secret.txt', 'The zanzibar pineapple protocol is confidential.', false);
    await waitIndexed(owner, secret.id);
    const mine = (await search(owner, 'zanzibar pineapple protocol').expect(200)).body.data.results;
    expect(mine[0].documentId).toBe(secret.id);
    for (const mode of ['hybrid', 'keyword', 'vector']) {
      const seen = (await search(member, 'zanzibar pineapple protocol', { mode, topK: 50 }).expect(200)).body.data
        .results;
      expect(seen.map((hit: { documentId: string }) => hit.documentId)).not.toContain(secret.id);
    }
    await search(stranger, 'zanzibar pineapple protocol').expect(404);
    await search(member, 'zanzibar', { documentIds: [secret.id] })
      .expect(200)
      .expect((res) => expect(res.body.data.results).toEqual([]));
  });

  it("never serves a document's old text once its content changed: not while it is re-indexed, not after", async () => {
    const { key } = await makeApiKey(app, owner, { scopes: ['docs:read', 'docs:write'] });
    const doc = await toolResult(app, key, 'create_document', {
      title: 'Launch notes',
      content: 'The launch passphrase is zebracorn quasar.',
      project_id: projectId,
    });
    await waitIndexed(owner, doc.id);
    expect(
      (await search(owner, 'zebracorn quasar').expect(200)).body.data.results.map(
        (hit: { documentId: string }) => hit.documentId,
      ),
    ).toContain(doc.id);

    await toolResult(app, key, 'update_document', {
      document_id: doc.id,
      content: 'Nothing sensitive here any more, only llamas.',
    });
    // The moment the update is answered, the old chunks are gone (the re-index may not have run yet).
    const [{ stale }] = await app.app
      .get(DatabasePool)
      .query(
        `SELECT count(*)::int AS stale FROM document_chunks c JOIN documents d ON d.id = c.document_id WHERE d.id = $1 AND c.content_sha256 <> d.sha256`,
        [doc.id],
      );
    expect(stale).toBe(0);
    // Keyword mode: the offline embedder's vectors put every indexed document some distance from any query,
    // so hybrid may list the re-indexed document for any words.
    const rightAfter = (await search(owner, 'zebracorn quasar', { mode: 'keyword' }).expect(200)).body.data.results;
    expect(rightAfter.map((hit: { documentId: string }) => hit.documentId)).not.toContain(doc.id);
    await waitIndexed(owner, doc.id);
    expect((await search(owner, 'llamas sensitive').expect(200)).body.data.results[0].documentId).toBe(doc.id);
    const oldWords = (await search(owner, 'zebracorn quasar', { mode: 'keyword' }).expect(200)).body.data.results;
    expect(oldWords.map((hit: { documentId: string }) => hit.documentId)).not.toContain(doc.id);
  });

  it('re-indexes a renamed document: the new title is found, the old one no longer', async () => {
    const { key } = await makeApiKey(app, owner, { scopes: ['docs:read', 'docs:write'] });
    const doc = await toolResult(app, key, 'create_document', {
      title: 'Xylophonequartz handbook',
      content: 'Chapter one is about tuning.',
      project_id: projectId,
    });
    await waitIndexed(owner, doc.id);
    const keywordHits = async (query: string) =>
      (await search(owner, query, { mode: 'keyword' }).expect(200)).body.data.results.map(
        (hit: { documentId: string }) => hit.documentId,
      ) as string[];
    expect(await keywordHits('xylophonequartz')).toContain(doc.id);
    await toolResult(app, key, 'update_document', { document_id: doc.id, title: 'Marzipanvolcano guide' });
    expect(await keywordHits('xylophonequartz')).not.toContain(doc.id);
    await waitFor(async () => ((await keywordHits('marzipanvolcano')).includes(doc.id) ? true : undefined));
    expect(await keywordHits('xylophonequartz')).not.toContain(doc.id);
    await waitIndexed(owner, doc.id); // and it ends indexed
  });

  it('validates the search request', async () => {
    await search(owner, '').expect(400);
    await search(owner, 'x', { topK: 51 }).expect(400);
    await search(owner, 'x', { mode: 'fuzzy' }).expect(400);
    await app.http.post('/api/rag/search').set(bearer(owner.token)).send({ query: 'x' }).expect(400);
  });

  it('removes a deleted document from search at once', async () => {
    const doc = await upload(owner, 'gone.txt', 'Ephemeral xylophone walrus notes for deletion.', true);
    await waitIndexed(owner, doc.id);
    expect((await search(member, 'xylophone walrus').expect(200)).body.data.results[0].documentId).toBe(doc.id);
    await app.http.delete(`/api/documents/${doc.id}`).set(bearer(owner.token)).expect(200);
    const after = (await search(member, 'xylophone walrus', { topK: 50 }).expect(200)).body.data.results;
    expect(after.map((hit: { documentId: string }) => hit.documentId)).not.toContain(doc.id);
  });

  it('runs ingest and reindex jobs through their states; reindex is one at a time; cancel works', async () => {
    // Everything is indexed already: an ingest has nothing to do; it is queued like any job and succeeds.
    const empty = (await app.http.post('/api/rag/ingest').set(bearer(owner.token)).send({ projectId }).expect(202)).body
      .data;
    expect(empty).toMatchObject({ status: 'queued', documentCount: 0 });
    expect(await waitJob(owner, empty.jobId)).toMatchObject({
      status: 'succeeded',
      progress: { total: 0, done: 0, failed: 0 },
    });

    const reindex = (await app.http.post('/api/rag/reindex').set(bearer(owner.token)).send({ projectId }).expect(202))
      .body.data;
    expect(reindex.status).toBe('queued');
    expect(reindex.documentCount).toBeGreaterThan(0);
    const conflict = await app.http.post('/api/rag/reindex').set(bearer(member.token)).send({ projectId });
    if (conflict.status === 409) expect(conflict.body.error.code).toBe('STATE_CONFLICT');
    const finished = await waitJob(owner, reindex.jobId);
    expect(finished).toMatchObject({
      kind: 'reindex',
      status: 'succeeded',
      progress: { total: reindex.documentCount, done: reindex.documentCount, failed: 0 },
      errors: [],
    });
    expect(finished.startedAt).toBeTruthy();
    expect(finished.finishedAt).toBeTruthy();
    await app.http.post(`/api/rag/ingest/${reindex.jobId}/cancel`).set(bearer(owner.token)).expect(409);

    // Cancel a queued reindex before the worker takes it (or while running): it ends cancelled, never succeeded later.
    const second = (await app.http.post('/api/rag/reindex').set(bearer(owner.token)).send({ projectId }).expect(202))
      .body.data;
    const cancel = await app.http.post(`/api/rag/ingest/${second.jobId}/cancel`).set(bearer(owner.token));
    if (cancel.status === 202) {
      expect(cancel.body.data.status).toBe('cancelled');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(
        (await app.http.get(`/api/rag/ingest/${second.jobId}`).set(bearer(owner.token)).expect(200)).body.data.status,
      ).toBe('cancelled');
      // A new reindex is allowed once the previous one is cancelled.
      const third = (await app.http.post('/api/rag/reindex').set(bearer(owner.token)).send({ projectId }).expect(202))
        .body.data;
      await waitJob(owner, third.jobId);
    } else {
      expect(cancel.status).toBe(409); // the worker was faster
    }

    await app.http.get(`/api/rag/ingest/${randomUUID()}`).set(bearer(owner.token)).expect(404);
    await app.http.get(`/api/rag/ingest/${reindex.jobId}`).set(bearer(stranger.token)).expect(404);
    await app.http.post('/api/rag/reindex').set(bearer(stranger.token)).send({ projectId }).expect(404);
  });

  it('honours Idempotency-Key on ingest and reindex: a repeat answers the first job, other arguments are a 409', async () => {
    const dataSource = app.app.get(DatabasePool);
    const jobsBefore = Number(
      (await dataSource.query(`SELECT count(*) AS n FROM indexing_jobs WHERE project_id = $1`, [projectId]))[0].n,
    );
    const otherProject = (
      await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'other' }).expect(201)
    ).body.data.id as string;
    for (const kind of ['ingest', 'reindex'] as const) {
      const key = `rag-${kind}-${randomUUID()}`;
      const first = await app.http
        .post(`/api/rag/${kind}`)
        .set(bearer(owner.token))
        .set('Idempotency-Key', key)
        .send({ projectId })
        .expect(202);
      const repeat = await app.http
        .post(`/api/rag/${kind}`)
        .set(bearer(owner.token))
        .set('Idempotency-Key', key)
        .send({ projectId })
        .expect(202);
      expect(repeat.body.data).toEqual(first.body.data);
      const other = await app.http
        .post(`/api/rag/${kind}`)
        .set(bearer(owner.token))
        .set('Idempotency-Key', key)
        .send({ projectId: otherProject })
        .expect(409);
      expect(other.body.error.code).toBe('CONFLICT');
      // Checks come before the key: a project the caller cannot see is 404 with or without it.
      await app.http
        .post(`/api/rag/${kind}`)
        .set(bearer(owner.token))
        .set('Idempotency-Key', key)
        .send({ projectId: randomUUID() })
        .expect(404);
      // Another user's identical key is their own: it does not replay the owner's job.
      await app.http
        .post(`/api/rag/${kind}`)
        .set(bearer(stranger.token))
        .set('Idempotency-Key', key)
        .send({ projectId })
        .expect(404);
      await waitJob(owner, first.body.data.jobId);
    }
    const jobsAfter = Number(
      (await dataSource.query(`SELECT count(*) AS n FROM indexing_jobs WHERE project_id = $1`, [projectId]))[0].n,
    );
    expect(jobsAfter - jobsBefore).toBe(2);
  });

  it('picks up a job whose worker died mid-run and finishes it from where it stopped', async () => {
    const doc = await upload(owner, 'resume.txt', 'Resumable narwhal inventory.', true);
    await waitIndexed(owner, doc.id);
    const dataSource = app.app.get(DatabasePool);
    const jobId = randomUUID();
    // What a killed worker leaves behind: running, half done, heartbeat long stale, no live queue entry.
    await dataSource.query(
      `INSERT INTO indexing_jobs (id, project_id, created_by, kind, status, document_ids, total, done, started_at, heartbeat_at)
       VALUES ($1, $2, $3, 'reindex', 'running', $4::uuid[], 2, 1, now() - interval '10 minutes', now() - interval '10 minutes')`,
      [jobId, projectId, owner.id, [randomUUID(), doc.id]],
    );
    expect(await app.app.get(IndexingJobsService).recover()).toBeGreaterThanOrEqual(1);
    const finished = await waitJob(owner, jobId);
    expect(finished).toMatchObject({ status: 'succeeded', progress: { total: 2, done: 2, failed: 0 } });
    expect((await search(owner, 'narwhal inventory').expect(200)).body.data.results[0].documentId).toBe(doc.id);
  });

  it('a worker that lost its job to another claim stops counting; the holder finishes it: every document counted once', async () => {
    const doc = await upload(owner, 'takeover.txt', 'Slow walrus takeover.', true);
    await waitIndexed(owner, doc.id);
    const dataSource = app.app.get(DatabasePool);
    const runner = app.app.get(IndexingJobRunner);
    const jobId = randomUUID();
    const total = 300;
    await dataSource.query(
      `INSERT INTO indexing_jobs (id, project_id, created_by, kind, status, document_ids, total) VALUES ($1, $2, $3, 'ingest', 'queued', $4::uuid[], $5)`,
      [jobId, projectId, owner.id, Array.from({ length: total }, () => doc.id), total],
    );
    const slow = runner.run(jobId);
    for (let i = 0; i < 200; i += 1) {
      const [row] = await dataSource.query(`SELECT status, done FROM indexing_jobs WHERE id = $1`, [jobId]);
      if (row.status === 'running' && row.done > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Another worker claims the job (as it does once the first one's heartbeat looks stale): the claim count moves on.
    await dataSource.query(`UPDATE indexing_jobs SET attempts = attempts + 1, heartbeat_at = now() WHERE id = $1`, [
      jobId,
    ]);
    expect(await slow).toBe('finished');
    const [left] = await dataSource.query(`SELECT status, done FROM indexing_jobs WHERE id = $1`, [jobId]);
    expect(left.status).toBe('running'); // the slow worker neither finished the job nor counted on after losing it
    expect(left.done).toBeLessThan(total);
    // The worker holding the job (here: a new run once the heartbeat is stale) resumes where the count stands.
    await dataSource.query(`UPDATE indexing_jobs SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [jobId]);
    expect(await runner.run(jobId)).toBe('finished');
    const [row] = await dataSource.query(`SELECT status, done, failed FROM indexing_jobs WHERE id = $1`, [jobId]);
    expect(row).toMatchObject({ status: 'succeeded', done: total, failed: 0 });
  });

  // A second session holds the lock the indexing waits on; the embedded engine has one session, so PostgreSQL only.
  (process.env.TEST_DATABASE_URL ? it : it.skip)(
    'a statement canceled while a document indexes (a timeout under load) retries the job: the document ends indexed, not failed',
    async () => {
      const dataSource = app.app.get(DatabasePool);
      const blocker = await dataSource.pool.connect();
      await blocker.query('BEGIN');
      let open = true;
      try {
        // INSERTs into document_chunks wait behind this lock; reads do not.
        await blocker.query(`LOCK TABLE document_chunks IN SHARE ROW EXCLUSIVE MODE`);
        const doc = await upload(owner, 'interrupted.txt', 'Patient narwhal interrupted mid-index.', true);
        const waiting = await waitFor(async () => {
          const rows: { pid: number }[] = await dataSource.query(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%document_chunks%'`,
          );
          return rows[0];
        });
        // What statement_timeout does to a statement that waited too long: SQLSTATE 57014, "canceling statement".
        await dataSource.query(`SELECT pg_cancel_backend($1)`, [waiting.pid]);
        await blocker.query('COMMIT');
        open = false;
        const indexed = await waitIndexed(owner, doc.id);
        expect(indexed).toMatchObject({ status: 'indexed', error: null });
        const hits = (await search(owner, 'patient narwhal').expect(200)).body.data.results;
        expect(hits.map((hit: { documentId: string }) => hit.documentId)).toContain(doc.id);
      } finally {
        if (open) await blocker.query('ROLLBACK');
        blocker.release();
      }
    },
  );

  describe('several documents written in shared statements (writeMany)', () => {
    /** A document row without a queued job, so only the call under test writes its chunks. */
    const addDocument = (authorId: string, isPublic: boolean, text: string) =>
      insertTextDocument(app.app.get<Db>(KYSELY), {
        authorId,
        projectId,
        isPublic,
        title: `Shared batch ${randomUUID().slice(0, 8)}`,
        text,
      });
    const paragraphs = (seed: string, count: number) =>
      Array.from(
        { length: count },
        (_, i) => `${seed} paragraph ${i}: the ${seed} ledger balances ${i * 7} crates of cardamom and ${seed} tea.`,
      ).join('\n\n');

    /** Rows of the statistics that differ from a recount of the stored chunks (none when they are exact). */
    const statisticsDrift = async () => {
      const { rows } = await sql<{ drift: number; postingDrift: number }>`
        SELECT (SELECT count(*)::int FROM (
                  (SELECT scope, lexeme, df::bigint FROM rag_scope_lexicon WHERE df <> 0
                   EXCEPT SELECT c.stat_scope, u.lexeme, count(*) FROM document_chunks c, unnest(c.tsv) u GROUP BY 1, 2)
                  UNION ALL
                  (SELECT c.stat_scope, u.lexeme, count(*) FROM document_chunks c, unnest(c.tsv) u GROUP BY 1, 2
                   EXCEPT SELECT scope, lexeme, df::bigint FROM rag_scope_lexicon WHERE df <> 0)
                  UNION ALL
                  (SELECT scope, chunk_count::text, total_tokens FROM rag_scope_stats WHERE chunk_count <> 0
                   EXCEPT SELECT stat_scope, count(*)::text, sum(token_count) FROM document_chunks GROUP BY 1)) d) AS drift,
               (SELECT count(*)::int FROM (
                  SELECT p.chunk_id, p.lexeme, p.document_id, p.dl, s.scope FROM rag_postings p JOIN rag_scopes s ON s.id = p.scope_id
                  EXCEPT SELECT c.id, u.lexeme, c.document_id, c.token_count, c.stat_scope FROM document_chunks c, unnest(c.tsv) u) d) AS posting_drift`.execute(
        app.app.get<Db>(KYSELY),
      );
      return rows[0];
    };
    const chunkRows = async (documentId: string) =>
      await app.app
        .get(DatabasePool)
        .query<{ chunk_index: number; text: string; token_count: number; tsv: string }>(
          `SELECT chunk_index, text, start_offset, end_offset, token_count, tsv::text, stat_scope FROM document_chunks WHERE document_id = $1 ORDER BY chunk_index`,
          [documentId],
        );

    it('stores what write() stores for each document, keeps the per-scope statistics exact and finds them', async () => {
      const writer = app.app.get(ChunkWriterService);
      const alone = await addDocument(owner.id, true, paragraphs('saffron', 12));
      const indexedBefore = await addDocument(member.id, false, paragraphs('nutmeg', 3));
      expect(await writer.write(alone)).toMatchObject({ status: 'indexed' });
      const written = await writer.write(indexedBefore);
      expect(written).toMatchObject({ status: 'indexed' });
      await app.app
        .get(DocumentIndexStateService)
        .markIndexed(indexedBefore.id, indexedBefore.sha256, (written as { chunkCount: number }).chunkCount);
      const twin = await addDocument(owner.id, true, alone.text);
      const batch = [
        twin,
        await addDocument(owner.id, false, paragraphs('saffron', 5)),
        indexedBefore,
        await addDocument(member.id, false, paragraphs('juniper', 4)),
        await addDocument(member.id, true, ''),
      ];
      const outcomes = await writer.writeMany(batch);
      expect(outcomes.map((outcome) => outcome.status)).toEqual([
        'indexed',
        'indexed',
        'unchanged',
        'indexed',
        'indexed',
      ]);
      for (const [i, document] of batch.entries()) {
        const stored = await chunkRows(document.id);
        expect(outcomes[i]).toMatchObject({ chunkCount: stored.length });
        expect(stored.length).toBeGreaterThan(0);
      }
      // Same content, the same rows as write() stored (the title differs, so not the tsvector).
      const strip = (rows: Awaited<ReturnType<typeof chunkRows>>) =>
        rows.map(({ tsv: _tsv, token_count: _count, ...rest }) => rest);
      expect(strip(await chunkRows(twin.id))).toEqual(strip(await chunkRows(alone.id)));
      expect(await statisticsDrift()).toEqual({ drift: 0, postingDrift: 0 });
      const hits = (await search(member, 'juniper cardamom ledger', { mode: 'keyword' }).expect(200)).body.data.results;
      expect(hits.map((hit: { documentId: string }) => hit.documentId)).toContain(batch[3].id);
      const ofOwner = (await search(owner, 'juniper cardamom ledger', { mode: 'keyword', topK: 50 }).expect(200)).body
        .data.results;
      expect(ofOwner.map((hit: { documentId: string }) => hit.documentId)).not.toContain(batch[3].id);
    });

    it('keeps the statistics exact when a document of several batches and a group of small ones are written at once', async () => {
      const writer = app.app.get(ChunkWriterService);
      // Paragraphs of ~1,800 characters with a vocabulary that shifts along the text: every batch adds lexemes.
      const longText = (seed: string, count: number) =>
        Array.from(
          { length: count },
          (_, i) =>
            `${seed} section ${i}: ${Array.from({ length: 120 }, (_, j) => `term${(i * 7 + j) % 500} ${seed}${j % 13}`).join(' ')}.`,
        ).join('\n\n');
      const large = await addDocument(owner.id, true, longText('clove', 150));
      const small = [
        await addDocument(owner.id, true, longText('clove', 2)),
        await addDocument(owner.id, true, paragraphs('clove', 4)),
        await addDocument(member.id, false, paragraphs('clove', 3)),
      ];
      const [outcome, outcomes] = await Promise.all([writer.write(large), writer.writeMany(small)]);
      expect(outcome).toMatchObject({ status: 'indexed' });
      const stored = await chunkRows(large.id);
      expect(stored.length).toBeGreaterThan(INDEX_BATCH_CHUNKS);
      expect(outcome).toMatchObject({ chunkCount: stored.length });
      expect(stored.map((row) => row.chunk_index)).toEqual(stored.map((_, i) => i));
      expect(outcomes.map((written) => written.status)).toEqual(['indexed', 'indexed', 'indexed']);
      expect(await statisticsDrift()).toEqual({ drift: 0, postingDrift: 0 });
    });

    // A second session holds a document's row lock; the embedded engine has one session, so PostgreSQL only.
    (process.env.TEST_DATABASE_URL ? it : it.skip)(
      'a group with a document another transaction holds does not wait for it in its lock: each is written alone',
      async () => {
        const writer = app.app.get(ChunkWriterService);
        const batch = [
          await addDocument(owner.id, true, paragraphs('vetiver', 3)),
          await addDocument(owner.id, false, paragraphs('galangal', 3)),
        ];
        const blocker = await app.app.get(DatabasePool).pool.connect();
        let open = true;
        try {
          await blocker.query('BEGIN');
          await blocker.query(`SELECT 1 FROM documents WHERE id = $1 FOR UPDATE`, [batch[1].id]);
          const writing = writer.writeMany(batch);
          // write() of the held document waits for the lock: the group's own lock did not.
          await waitFor(async () => {
            const rows: unknown[] = await app.app
              .get(DatabasePool)
              .query(
                `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%documents%'`,
              );
            return rows[0];
          });
          expect((await chunkRows(batch[0].id)).length).toBeGreaterThan(0);
          await blocker.query('COMMIT');
          open = false;
          expect((await writing).map((outcome) => outcome.status)).toEqual(['indexed', 'indexed']);
          expect(await statisticsDrift()).toEqual({ drift: 0, postingDrift: 0 });
        } finally {
          if (open) await blocker.query('ROLLBACK');
          blocker.release();
        }
      },
    );
  });

  it('ingest with documentIds re-uses the content hash: no duplicate work', async () => {
    const doc = await upload(member, 'stable.txt', 'Idempotent armadillo ledger.', true);
    await waitIndexed(member, doc.id);
    const before = (await search(member, 'armadillo ledger').expect(200)).body.data.results[0];
    const job = (
      await app.http
        .post('/api/rag/ingest')
        .set(bearer(member.token))
        .send({ projectId, documentIds: [doc.id] })
        .expect(202)
    ).body.data;
    expect((await waitJob(member, job.jobId)).status).toBe('succeeded');
    const after = (await search(member, 'armadillo ledger').expect(200)).body.data.results[0];
    expect(after.chunkId).toBe(before.chunkId); // chunks were not rebuilt
  });
});
