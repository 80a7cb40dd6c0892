import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabasePool } from '../src/database/database-pool.js';
import { ChunkWriterService } from '../src/modules/rag/chunk-writer.service.js';
import { RagSegmentsService } from '../src/modules/rag/rag-segments.service.js';
import { holdApiBusy } from './support/busy-api.js';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import {
  createTestDatabase,
  describeOnSharedServices,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from './support/test-app.js';

/**
 * Large documents written as pending segments (RagSegmentsService) on PostgreSQL: searchable by keyword and by vector
 * once indexed, with the same results before and after their merge into the main indexes; private to their author
 * while pending; a visibility change or a delete while pending leaves no trace in search, statistics or side tables.
 * The merge is run by the test (its automatic start is an hour away here).
 */
describeOnSharedServices('pending segments (e2e)', () => {
  let app: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let projectId: string;
  let db: DatabasePool;

  const query = async <T>(text: string, params: unknown[] = []): Promise<T[]> => (await db.query(text, params)) as T[];

  /** ~80 chunks of ~200 characters, one of them naming `word`. */
  const largeText = (word: string) =>
    Array.from({ length: 80 }, (_, i) =>
      i === 41
        ? `Paragraph ${i}: the ${word} reactor cools the brine before the filtration stage of the plant.`
        : `Paragraph ${i}: routine notes on item ${i}, nothing remarkable about shelf ${i % 7} or crate ${i % 11} today.`,
    ).join('\n\n');

  async function uploadIndexed(
    user: TestUser,
    name: string,
    text: string,
  ): Promise<{ id: string; chunkCount: number }> {
    const res = await app.http
      .post('/api/documents/upload')
      .set(bearer(user.token))
      .field('projectId', projectId)
      .field('isPublic', 'false')
      .attach('file', Buffer.from(text), name)
      .expect(201);
    const id = res.body.data.id as string;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const view = await app.http.get(`/api/documents/${id}`).set(bearer(user.token)).expect(200);
      if (view.body.data.status === 'indexed') return { id, chunkCount: view.body.data.chunkCount as number };
      if (Date.now() > deadline) throw new Error(`${name} was not indexed`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  const search = async (user: TestUser, text: string, mode: 'keyword' | 'vector' | 'hybrid') => {
    const res = await app.http
      .post('/api/rag/search')
      .set(bearer(user.token))
      .send({ query: text, projectId, mode, topK: 5 })
      .expect(200);
    return res.body.data.results as {
      documentId: string;
      chunkIndex: number;
      text: string;
      score: number;
      keywordScore: number;
    }[];
  };

  const segmentsOf = (documentId: string) =>
    query<{ id: number; state: string }>(`SELECT id, state FROM rag_segments WHERE document_id = $1`, [documentId]);
  const segmentIndexes = (segmentId: number) =>
    query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE indexname LIKE $1`, [
      `rag_segment_${segmentId}_%`,
    ]);
  const statistics = () =>
    query<{ scope: string; chunk_count: number; total_tokens: number }>(
      `SELECT scope, chunk_count::int, total_tokens::int FROM rag_scope_stats WHERE chunk_count <> 0 ORDER BY scope`,
    );

  let database: TestDatabase;
  /** One data folder (secrets, files) for every process of the deployment under test. */
  let dataDir: string;

  /** Stops the running process and starts the deployment again with `env` over the base settings. */
  async function restart(env: Record<string, string> = {}): Promise<void> {
    await app?.close();
    app = await startTestApp({
      database,
      env: {
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        RAG_INDEX_SEGMENT_MIN_CHUNKS: '40',
        RAG_INDEX_SEGMENT_MERGE_DELAY_MS: '3600000',
        RAG_RECOVERY_INTERVAL_MS: '3600000',
        RAG_CHUNK_TARGET_CHARS: '200',
        RAG_CHUNK_OVERLAP_CHARS: '0',
        ...env,
      },
    });
    db = app.app.get(DatabasePool);
  }

  beforeAll(async () => {
    // The segment path is PostgreSQL's: the app is told its database URL, as a deployment's is.
    database = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'atrium-segments-'));
    await restart();
    owner = await makeUser(app);
    member = await makeUser(app);
    projectId = (await app.http.post('/api/projects').set(bearer(owner.token)).send({ name: 'segments' }).expect(201))
      .body.data.id as string;
    await app.http
      .post(`/api/projects/${projectId}/members`)
      .set(bearer(owner.token))
      .send({ userId: member.id, role: 'viewer' })
      .expect(201);
  });

  afterAll(async () => {
    await app?.close();
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('a large document is searchable by keyword and by vector while pending, and finds the same after its merge', async () => {
    const doc = await uploadIndexed(owner, 'reactor.md', largeText('zephyrine'));
    expect(doc.chunkCount).toBeGreaterThanOrEqual(40);
    const [segment] = await segmentsOf(doc.id);
    expect(segment.state).toBe('searchable');
    expect((await segmentIndexes(segment.id)).map((row) => row.indexname).sort()).toEqual([
      `rag_segment_${segment.id}_chunks`,
      `rag_segment_${segment.id}_impact`,
      `rag_segment_${segment.id}_vectors`,
    ]);
    const [pending] = await query<{ chunks: number; postings: number }>(
      `SELECT (SELECT count(*)::int FROM document_chunks WHERE segment_id = $1) AS chunks,
              (SELECT count(*)::int FROM rag_pending_postings WHERE segment_id = $1) AS postings`,
      [segment.id],
    );
    expect(pending.chunks).toBe(doc.chunkCount);
    expect(pending.postings).toBeGreaterThan(doc.chunkCount);

    const before = {
      keyword: await search(owner, 'zephyrine reactor brine', 'keyword'),
      vector: await search(owner, 'the zephyrine reactor cools the brine', 'vector'),
      hybrid: await search(owner, 'zephyrine reactor brine filtration', 'hybrid'),
    };
    for (const results of Object.values(before)) {
      expect(results[0]).toMatchObject({ documentId: doc.id });
      expect(results[0].text).toContain('zephyrine');
    }
    const statsBefore = await statistics();

    await app.app.get(RagSegmentsService).mergeAll();

    expect(await segmentsOf(doc.id)).toEqual([]);
    expect(await segmentIndexes(segment.id)).toEqual([]);
    const [merged] = await query<{ pending: number; postings: number }>(
      `SELECT (SELECT count(*)::int FROM document_chunks WHERE document_id = $1 AND segment_id IS NOT NULL) AS pending,
              (SELECT count(*)::int FROM rag_postings WHERE document_id = $1) AS postings`,
      [doc.id],
    );
    expect(merged).toEqual({ pending: 0, postings: pending.postings });
    expect(await statistics()).toEqual(statsBefore);
    const after = {
      keyword: await search(owner, 'zephyrine reactor brine', 'keyword'),
      vector: await search(owner, 'the zephyrine reactor cools the brine', 'vector'),
      hybrid: await search(owner, 'zephyrine reactor brine filtration', 'hybrid'),
    };
    for (const mode of ['keyword', 'vector', 'hybrid'] as const) {
      expect(after[mode].map((hit) => [hit.documentId, hit.chunkIndex])).toEqual(
        before[mode].map((hit) => [hit.documentId, hit.chunkIndex]),
      );
      after[mode].forEach((hit, at) => expect(hit.score).toBeCloseTo(before[mode][at].score, 5));
    }
  });

  it('while pending: private to its author, found by others once public, and gone without trace once deleted', async () => {
    const statsBefore = await statistics();
    const doc = await uploadIndexed(owner, 'kiln.md', largeText('quillothrax'));
    const [segment] = await segmentsOf(doc.id);
    expect(segment.state).toBe('searchable');

    expect(await search(member, 'quillothrax reactor', 'keyword')).toEqual([]);
    expect(
      (await search(member, 'the quillothrax reactor cools the brine', 'vector')).map((hit) => hit.documentId),
    ).not.toContain(doc.id);
    expect((await search(owner, 'quillothrax reactor', 'keyword'))[0]).toMatchObject({ documentId: doc.id });

    // Made public (the scope trigger moves its pending postings with its chunks): the project's members find it.
    await db.query(`UPDATE documents SET is_public = true WHERE id = $1`, [doc.id]);
    const [moved] = await query<{ stale: number }>(
      `SELECT count(*)::int AS stale FROM rag_pending_postings p
       WHERE p.document_id = $1 AND p.scope_id <> (SELECT r.id FROM rag_scopes r JOIN document_chunks c ON c.stat_scope = r.scope WHERE c.document_id = $1 LIMIT 1)`,
      [doc.id],
    );
    expect(moved.stale).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the searchable list's reuse
    const found = await search(member, 'quillothrax reactor', 'keyword');
    expect(found[0]).toMatchObject({ documentId: doc.id });
    expect(found[0].text).toContain('quillothrax');
    // Made private again: the member loses it, its author still finds it.
    await db.query(`UPDATE documents SET is_public = false WHERE id = $1`, [doc.id]);
    expect((await search(member, 'quillothrax reactor', 'keyword')).map((hit) => hit.documentId)).not.toContain(doc.id);
    expect((await search(owner, 'quillothrax reactor', 'keyword'))[0]).toMatchObject({ documentId: doc.id });

    await app.http.delete(`/api/documents/${doc.id}`).set(bearer(owner.token)).expect(200);
    for (const user of [owner, member])
      for (const mode of ['keyword', 'vector', 'hybrid'] as const)
        expect(
          (await search(user, 'the quillothrax reactor cools the brine', mode)).map((hit) => hit.documentId),
        ).not.toContain(doc.id);
    const [left] = await query<{ chunks: number; postings: number; segments: number }>(
      `SELECT (SELECT count(*)::int FROM document_chunks WHERE segment_id = $1) AS chunks,
              (SELECT count(*)::int FROM rag_pending_postings WHERE segment_id = $1) AS postings,
              (SELECT count(*)::int FROM rag_segments WHERE id = $1) AS segments`,
      [segment.id],
    );
    expect(left).toEqual({ chunks: 0, postings: 0, segments: 0 });
    expect(await statistics()).toEqual(statsBefore);
    // The deleted segment's indexes go with the next merge's clean-up.
    expect((await segmentIndexes(segment.id)).length).toBe(3);
    await app.app.get(RagSegmentsService).mergeAll();
    expect(await segmentIndexes(segment.id)).toEqual([]);
  });

  it("a write stopped between its last batch and the segment's publication publishes it when the document is written again", async () => {
    const doc = await uploadIndexed(owner, 'vault.md', largeText('brontolith'));
    const [segment] = await segmentsOf(doc.id);
    // As if the process died after the last batch committed: the segment unpublished, its indexes never built.
    await db.query(`UPDATE rag_segments SET state = 'writing' WHERE id = $1`, [segment.id]);
    for (const { indexname } of await segmentIndexes(segment.id)) await db.query(`DROP INDEX ${indexname}`);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the searchable list's reuse
    expect((await search(owner, 'brontolith reactor', 'keyword')).map((hit) => hit.documentId)).not.toContain(doc.id);

    const [row] = await query<{ title: string; sha256: string; text: string }>(
      `SELECT title, sha256, text_content AS text FROM documents WHERE id = $1`,
      [doc.id],
    );
    const outcome = await app.app.get(ChunkWriterService).write({ id: doc.id, ...row });
    expect(outcome).toEqual({ status: 'indexed', chunkCount: doc.chunkCount });
    expect(await segmentsOf(doc.id)).toEqual([{ id: segment.id, state: 'searchable' }]);
    expect((await segmentIndexes(segment.id)).length).toBe(3);
    expect((await search(owner, 'brontolith reactor', 'keyword'))[0]).toMatchObject({ documentId: doc.id });
  });

  it('a write stopped inside its segment is finished into that segment by a process with segments turned off', async () => {
    const doc = await uploadIndexed(owner, 'sluice.md', largeText('quillotrine'));
    const [segment] = await segmentsOf(doc.id);
    // As if the process died halfway through the write: half the chunks stored in an unpublished segment.
    await db.query(`UPDATE rag_segments SET state = 'writing' WHERE id = $1`, [segment.id]);
    for (const { indexname } of await segmentIndexes(segment.id)) await db.query(`DROP INDEX ${indexname}`);
    await db.query(`DELETE FROM document_chunks WHERE document_id = $1 AND chunk_index >= $2`, [
      doc.id,
      Math.floor(doc.chunkCount / 2),
    ]);
    await db.query(`UPDATE documents SET status = 'processing' WHERE id = $1`, [doc.id]);

    // The operator turns segments off and restarts: the indexing job resumes the write in the segment it began in,
    // since the chunks written so far are in no main index.
    await restart({ RAG_INDEX_SEGMENT_MIN_CHUNKS: '0' });
    const job = await app.http
      .post('/api/rag/ingest')
      .set(bearer(owner.token))
      .send({ projectId, documentIds: [doc.id] })
      .expect(202);
    const jobId = job.body.data.jobId as string;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const view = await app.http.get(`/api/rag/ingest/${jobId}`).set(bearer(owner.token)).expect(200);
      if (view.body.data.status === 'succeeded') break;
      expect(['queued', 'running']).toContain(view.body.data.status);
      if (Date.now() > deadline) throw new Error('the ingest job did not finish');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(await segmentsOf(doc.id)).toEqual([{ id: segment.id, state: 'searchable' }]);
    expect((await segmentIndexes(segment.id)).length).toBe(3);
    const placed = await query<{ in_segment: number; in_main: number }>(
      `SELECT count(*) FILTER (WHERE segment_id = $2)::int AS in_segment,
                count(*) FILTER (WHERE segment_id IS NULL)::int AS in_main
           FROM document_chunks WHERE document_id = $1`,
      [doc.id, segment.id],
    );
    expect(placed).toEqual([{ in_segment: doc.chunkCount, in_main: 0 }]);
    const view = await app.http.get(`/api/documents/${doc.id}`).set(bearer(owner.token)).expect(200);
    expect(view.body.data).toMatchObject({ status: 'indexed', chunkCount: doc.chunkCount });
    const hits = await app.http
      .post('/api/rag/search')
      .set(bearer(owner.token))
      .send({ query: 'quillotrine reactor', projectId, mode: 'keyword', topK: 5 })
      .expect(200);
    expect(hits.body.data.results[0]).toMatchObject({ documentId: doc.id });
  });

  it('a document larger than a segment fills several, each searchable; their merge waits while requests are served', async () => {
    // Segments of at most 16 chunks; the document paced, so it is written in batches of 8 to 32 chunks: the first
    // segment ends by chunk 24, and the last chunk is in another.
    await restart({
      RAG_INDEX_SEGMENT_MAX_CHUNKS: '16',
      RAG_INDEX_PACED_MIN_CHUNKS: '40',
      RAG_INDEX_PACED_BATCH_CHUNKS: '8',
    });
    const text = largeText('weirstone')
      .replace('Paragraph 0: routine', 'Paragraph 0: the marrowgate sluice, routine')
      .replace('Paragraph 79: routine', 'Paragraph 79: the marrowgate sluice, routine');
    // Written while a request is in flight: each segment's indexes are built one after another on one connection
    // (the first test's, at full speed, at the same time on three).
    const releaseDuringWrite = holdApiBusy(app.baseUrl);
    let doc: Awaited<ReturnType<typeof uploadIndexed>>;
    try {
      doc = await uploadIndexed(owner, 'weir.md', text);
    } finally {
      releaseDuringWrite();
    }
    const segments = await segmentsOf(doc.id);
    expect(segments.length).toBeGreaterThan(1);
    expect(segments.every((segment) => segment.state === 'searchable')).toBe(true);
    for (const segment of segments) expect((await segmentIndexes(segment.id)).length).toBe(3);
    const sizes = await query<{ n: number }>(
      `SELECT count(*)::int AS n FROM document_chunks WHERE document_id = $1 GROUP BY segment_id ORDER BY min(chunk_index)`,
      [doc.id],
    );
    expect(sizes.reduce((sum, { n }) => sum + n, 0)).toBe(doc.chunkCount);
    expect(sizes).toHaveLength(segments.length); // no chunk outside a segment
    // The first segment is full after the batch that reaches its cap; the others hold the rest.
    expect(sizes[0].n).toBeGreaterThanOrEqual(16);
    expect(sizes[0].n).toBeLessThanOrEqual(24);

    // Hits from two segments by keyword, and by keyword and vector together.
    const keyword = await search(owner, 'marrowgate', 'keyword');
    const hitChunks = keyword.filter((hit) => hit.documentId === doc.id).map((hit) => hit.chunkIndex);
    expect(hitChunks).toHaveLength(2);
    const hitSegments = await query<{ segment_id: number }>(
      `SELECT DISTINCT segment_id FROM document_chunks WHERE document_id = $1 AND chunk_index = ANY($2::int[])`,
      [doc.id, hitChunks],
    );
    expect(hitSegments).toHaveLength(2);
    // This document's hits by both lists.
    const ownHybridHits = async () =>
      (await search(owner, 'marrowgate', 'hybrid'))
        .filter((hit) => hit.documentId === doc.id)
        .map(({ chunkIndex, keywordScore }) => ({ chunkIndex, keywordScore }));
    const hybrid = await ownHybridHits();
    expect(hybrid.map((hit) => hit.chunkIndex)).toEqual(expect.arrayContaining(hitChunks));

    // While a request is in flight the merge leaves the segments be (few wait); it runs once the service is quiet.
    const releaseApi = holdApiBusy(app.baseUrl);
    let merged = false;
    let merge: Promise<void>;
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      merge = app.app
        .get(RagSegmentsService)
        .mergeAll()
        .then(() => {
          merged = true;
        });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(merged).toBe(false);
      expect(await segmentsOf(doc.id)).toEqual(segments);
      expect(
        (
          await query<{ n: number }>(
            `SELECT count(*)::int AS n FROM document_chunks WHERE document_id = $1 AND segment_id IS NULL`,
            [doc.id],
          )
        )[0].n,
      ).toBe(0);
    } finally {
      releaseApi();
    }
    await merge;
    expect(await segmentsOf(doc.id)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the searchable list's reuse
    expect(await search(owner, 'marrowgate', 'keyword')).toEqual(keyword);
    // The hybrid list's best hit stands (its vector neighbours come from one approximate graph now, not several).
    expect((await ownHybridHits())[0]).toEqual(hybrid[0]);
  });
});
