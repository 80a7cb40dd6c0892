import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, type Pool } from 'pg';
import { DatabasePool } from '../src/database/database-pool.js';
import { createWorkerContext } from '../src/app.factory.js';
import type { Actor } from '../src/common/auth/actor.js';
import { JsonLogger } from '../src/common/logging/json-logger.js';
import { currentPhaseFrame, tracePhases, type PhaseRecord } from '../src/common/timing/phase-timer.js';
import { loadConfig } from '../src/config/app-config.js';
import { EmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { asKyselyConnection } from '../src/database/named-statements.js';
import { UsersService } from '../src/modules/auth/users.service.js';
import { RagSegmentsService } from '../src/modules/rag/rag-segments.service.js';
import { DocumentsService } from '../src/modules/documents/documents.service.js';
import { ProjectsService } from '../src/modules/projects/projects.service.js';
import {
  EMBEDDING_PROVIDER,
  toVectorLiteral,
  type EmbeddingProvider,
} from '../src/modules/rag/embeddings/embedding-provider.js';
import { ChunkWriterService, type IndexableDocument } from '../src/modules/rag/chunk-writer.service.js';
import { IndexingProcessor } from '../src/modules/rag/indexing.processor.js';
import { RagSearchService } from '../src/modules/rag/rag-search.service.js';
import { applySearchSessionSettings } from '../src/modules/rag/search-session-settings.repository.js';
import { httpActivity } from '../src/common/http/http-activity.js';

/** Paragraphs of a bench document: ~40 of ~1,000 characters, ~45 chunks once the chunker's overlap is counted. */
const CHUNKS_PER_DOCUMENT = 40;

/**
 * `npm run bench:rag -- [--chunks 100000] [--ingest-documents 50] [--bulk-writers 2] [--bulk-write-documents 10] [--large-documents 3] [--large-chunks 2500] [--queries 200] [--text ../shared/data/ir/scifact/corpus.jsonl]`
 *
 * 1. Ingest: synthetic documents (sentences of a real corpus, shuffled deterministically) are created
 *    through DocumentsService and indexed by the real queue worker; chunks/s end to end.
 *    Then a bulk load to the target size through the same ChunkWriterService, HNSW built once.
 *    Then large uploads on the loaded table (both indexes present, queue worker running): --large-documents
 *    files of ~--large-chunks chunks uploaded through DocumentsService.upload, extracted and indexed by the
 *    worker; chunks/s end to end and CPU per chunk. `--large-only` runs this phase alone (then search) on a
 *    database an earlier run loaded.
 * 2. Search at that size: hybrid search through RagSearchService (visibility, BM25, HNSW, fusion,
 *    hydration) against the bare `ORDER BY embedding <=> $1 LIMIT k` query alone, p50/p95 and the ratio;
 *    keyword-only and vector-only searches are timed too, to show which half costs what.
 * Uses DATABASE_URL / REDIS_URL when set, else an embedded PostgreSQL.
 *
 * `BENCH_TRACE=1` adds `trace` to the output: per variant, where a search's milliseconds go (the service's and
 * NamedStatements' phases, see phase-timer.ts; `pg.*`: from the driver's call to the server's first answer, the
 * parsing of the rows, to ReadyForQuery), and the CPU time and run-queue wait (Linux schedstat) per search of this
 * process's main thread and of the PostgreSQL backends of the pool and of the bare query's connection.
 * `BENCH_DUMP=<file>` (with BENCH_TRACE=1) writes each query's vector and the statements its hybrid search sent.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string, fallback: string): string => {
    const index = args.indexOf(`--${name}`);
    return index >= 0 ? args[index + 1] : fallback;
  };
  const targetChunks = Number(option('chunks', '100000'));
  const queryCount = Number(option('queries', '200'));
  const textFile = resolve(
    option('text', join(__dirname, '..', '..', '..', 'shared', 'data', 'ir', 'scifact', 'corpus.jsonl')),
  );
  const topK = 10;
  const log = (line: string): void => void process.stderr.write(`${line}\n`);

  const sentences = readFileSync(textFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((line) => (JSON.parse(line) as { text: string }).text.split(/(?<=\.)\s+/))
    .filter((sentence) => sentence.length > 40);
  let seed = 12345;
  const random = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const pick = (): string => sentences[Math.floor(random() * sentences.length)];

  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-bench-'));
  const config = loadConfig({
    // A bulk load by one user: the per-user queue cap that keeps shares fair would only slow it down.
    INDEX_MAX_QUEUED_PER_USER: '1000000',
    // Large uploads as pending segments, the default (RAG_INDEX_SEGMENT_MIN_CHUNKS=0 measures the direct path).
    RAG_INDEX_SEGMENT_MIN_CHUNKS: '500',
    ...process.env,
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    APP_ROLE: 'all',
  });
  const embedded = config.database.url ? undefined : await EmbeddedPostgres.start(undefined);
  const app = await createWorkerContext({
    config,
    databaseUrl: config.database.url ?? embedded!.url,
    logger: new JsonLogger(config.logLevel),
  });
  try {
    const dataSource = app.get(DatabasePool);
    if (args.includes('--large-only')) {
      const [existing] = await dataSource.query(
        `SELECT d.project_id, p.owner_id, count(c.id)::int AS chunks, count(DISTINCT d.id)::int AS documents
         FROM document_chunks c JOIN documents d ON d.id = c.document_id JOIN projects p ON p.id = d.project_id
         GROUP BY d.project_id, p.owner_id ORDER BY chunks DESC LIMIT 1`,
      );
      if (!existing) throw new Error('--large-only needs a database loaded by an earlier bench:rag run (DATABASE_URL)');
      const actor: Actor = { userId: existing.owner_id, projectIds: null, repos: null };
      const large = await measureLargeUploads(existing.project_id, actor);
      await measureSearch(
        existing.project_id,
        actor,
        existing.documents + large.documents,
        existing.chunks + large.chunks,
        null,
        { large },
      );
      return;
    }
    if (args.includes('--search-only')) {
      const [existing] = await dataSource.query(
        `SELECT d.project_id, p.owner_id, count(c.id)::int AS chunks, count(DISTINCT d.id)::int AS documents
         FROM document_chunks c JOIN documents d ON d.id = c.document_id JOIN projects p ON p.id = d.project_id
         GROUP BY d.project_id, p.owner_id ORDER BY chunks DESC LIMIT 1`,
      );
      if (!existing)
        throw new Error('--search-only needs a database loaded by an earlier bench:rag run (DATABASE_URL)');
      const actor: Actor = { userId: existing.owner_id, projectIds: null, repos: null };
      await measureSearch(existing.project_id, actor, existing.documents, existing.chunks, null, null);
      return;
    }
    const user = await app.get(UsersService).create({
      email: `bench-${randomBytes(6).toString('hex')}@example.com`,
      password: randomBytes(12).toString('hex'),
      name: 'bench',
    });
    const actor: Actor = { userId: user.id, projectIds: null, repos: null };
    const project = await app.get(ProjectsService).create(actor, { name: 'rag bench' });
    const documents = app.get(DocumentsService);

    const makeDocument = (d: number) => ({ ...makeContent(d, CHUNKS_PER_DOCUMENT), projectId: project.id });
    const countChunks = async (): Promise<{ finished: number; total: number; chunks: number }> => {
      const [row] = await dataSource.query<{ finished: number; total: number; chunks: number }>(
        `SELECT count(*) FILTER (WHERE status IN ('indexed', 'failed'))::int AS finished, count(*)::int AS total, coalesce(sum(chunk_count), 0)::int AS chunks
         FROM documents WHERE project_id = $1`,
        [project.id],
      );
      return row;
    };

    // Phase 1, ingest throughput through the real path: documents created by the service, indexed by the
    // queue worker (IndexingProcessor → IndexingJobRunner → chunker, embedder, SQL writes incl. HNSW).
    const ingestDocuments = Number(option('ingest-documents', '50'));
    const bulkWriters = Number(option('bulk-writers', '2'));
    const bulkWriteDocuments = Number(option('bulk-write-documents', '10'));
    const started = performance.now();
    for (let d = 0; d < ingestDocuments; d += 1) await documents.createFromText(actor, makeDocument(d));
    let progress = await countChunks();
    while (progress.finished < progress.total) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      progress = await countChunks();
    }
    const ingestSeconds = (performance.now() - started) / 1000;
    const ingest = {
      documents: ingestDocuments,
      chunks: progress.chunks,
      seconds: round(ingestSeconds),
      chunksPerSecond: round(progress.chunks / ingestSeconds),
    };
    log(`ingest: ${JSON.stringify(ingest)}`);

    // Phase 2, bulk load to the target size: the same ChunkWriterService in-process (no queue round trip per
    // document), with the HNSW index built once at the end as one would for a bulk import.
    const writer = app.get(ChunkWriterService);
    const embedderForIndex = app.get<EmbeddingProvider>(EMBEDDING_PROVIDER);
    const indexName = `document_chunks_embedding_hnsw_${embedderForIndex.dimensions}`;
    await dataSource.query(`DROP INDEX IF EXISTS ${indexName}`);
    // The keyword index too (most of a posting's cost: docs/perf/ingest.md), rebuilt from its own definition after the
    // load in one sorted pass, unless BENCH_BULK_KEYWORD_INDEX=keep (the per-posting inserts a live upload pays).
    const keepKeywordIndex = process.env.BENCH_BULK_KEYWORD_INDEX === 'keep';
    const [{ definition: keywordIndex }] = (await dataSource.query(
      `SELECT pg_get_indexdef('rag_postings_impact_idx'::regclass) AS definition`,
    )) as { definition: string }[];
    if (!keepKeywordIndex) await dataSource.query(`DROP INDEX rag_postings_impact_idx`);
    // The queue worker waits until the load is written: each bulk document's job, claimed the moment the document
    // is created, would otherwise embed and compute the same chunks beside this writer (whose ON CONFLICT then
    // drops them), doubling the measured work. Run afterwards, each finds its document current and only marks it.
    const indexingWorker = app.get(IndexingProcessor).worker;
    await indexingWorker.pause();
    const cpuBefore = await cpuSeconds(dataSource);
    const loadStarted = performance.now();
    let chunks = progress.chunks;
    let nextDocument = ingestDocuments;
    // Each writer takes the next documents until the target is reached: with two, one group is embedded (Node,
    // the sandbox thread) while another is written (PostgreSQL), as an import with two workers would run. A writer
    // hands --bulk-write-documents documents at a time to writeMany, which writes those that fit one batch together.
    const bulkWriter = async (): Promise<void> => {
      while (chunks < targetChunks) {
        const firstDocument = nextDocument;
        nextDocument += bulkWriteDocuments;
        const created: IndexableDocument[] = [];
        for (let d = firstDocument; d < firstDocument + bulkWriteDocuments; d += 1) {
          const input = makeDocument(d);
          const document = await documents.createFromText(actor, input);
          created.push({ id: document.id, title: document.title, sha256: document.sha256, text: input.content });
        }
        const outcomes = bulkWriteDocuments === 1 ? [await writer.write(created[0])] : await writer.writeMany(created);
        for (const outcome of outcomes)
          if (outcome.status === 'indexed' || outcome.status === 'unchanged') chunks += outcome.chunkCount;
        if (Math.floor(firstDocument / 200) !== Math.floor(nextDocument / 200))
          log(
            `bulk load: ${chunks} chunks, ${(chunks / ((performance.now() - loadStarted) / 1000)).toFixed(0)} chunks/s`,
          );
      }
    };
    await Promise.all(Array.from({ length: bulkWriters }, bulkWriter));
    const loadCpu = cpuSeconds.since(cpuBefore, await cpuSeconds(dataSource));
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    let hnswBuildSeconds = 0;
    let keywordIndexBuildSeconds: number | null = null;
    const indexStarted = performance.now();
    // One connection without the pool's 30 s statement timeout: building HNSW over 100k vectors takes minutes.
    const runner = await dataSource.pool.connect();
    try {
      await runner.query(`SET statement_timeout = 0`);
      await runner.query(`SET maintenance_work_mem = '512MB'`);
      // The index DocumentChunksRepository.ensureVectorIndex creates (pending segments' chunks left out).
      await runner.query(
        `CREATE INDEX IF NOT EXISTS ${indexName} ON document_chunks USING hnsw ((embedding::vector(${embedderForIndex.dimensions})) vector_cosine_ops) WHERE embedding_dims = ${embedderForIndex.dimensions} AND segment_id IS NULL`,
      );
      const hnswBuilt = performance.now();
      if (!keepKeywordIndex) await runner.query(keywordIndex);
      keywordIndexBuildSeconds = keepKeywordIndex ? null : round((performance.now() - hnswBuilt) / 1000);
      hnswBuildSeconds = round((hnswBuilt - indexStarted) / 1000);
      await runner.query(`RESET statement_timeout`);
    } finally {
      await runner.release();
    }
    // After the builds: a plain CREATE INDEX blocks writes to the table, so a job's statements would wait on it
    // until their statement timeout (an import on a live server would build CONCURRENTLY instead).
    await indexingWorker.resume();
    const loaded = chunks - progress.chunks;
    const bulk = {
      chunks,
      loadSeconds: round(loadSeconds),
      chunksPerSecond: round(loaded / loadSeconds),
      writers: bulkWriters,
      documentsPerWrite: bulkWriteDocuments,
      keywordIndex: keepKeywordIndex ? 'kept' : 'built after the load',
      // CPU per loaded chunk of this process (all its threads) and of the database's PostgreSQL backends: on a
      // shared machine the figure to compare, wall time being mostly the other processes' turn.
      cpuMsPerChunk: {
        node: round((loadCpu.node * 1000) / loaded),
        postgres: round((loadCpu.postgres * 1000) / loaded),
      },
      hnswBuildSeconds,
      keywordIndexBuildSeconds,
      load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    };
    log(`bulk: ${JSON.stringify(bulk)}`);
    // Let the worker drain the queued jobs of the bulk documents (each finds its document current) before measuring search.
    progress = await countChunks();
    while (progress.finished < progress.total) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      progress = await countChunks();
    }
    // VACUUM, not only ANALYZE, as after any bulk import (autovacuum does it on a server that runs it; the shared
    // bench machine's server does not): keyword search reads `rag_postings_impact_idx` by index-only scans, which
    // fetch every posting's heap row while the visibility map is empty. Measured at 100k chunks: without it hybrid
    // p50 was 3–5× the bare HNSW query (each query's first search paid ~3,500 random reads of a 700 MB heap),
    // with it 1.6–1.9×, for the code before and after the per-viewer statistics alike.
    const vacuum = await dataSource.pool.connect();
    try {
      await vacuum.query(`SET statement_timeout = 0`);
      await vacuum.query(
        `VACUUM (ANALYZE) document_chunks, rag_postings, rag_scope_lexicon, rag_scope_stats, documents, project_members`,
      );
      await vacuum.query(`RESET statement_timeout`);
    } finally {
      await vacuum.release();
    }
    const documentCount = progress.total;

    const large = await measureLargeUploads(project.id, actor);

    await measureSearch(project.id, actor, documentCount + large.documents, progress.chunks + large.chunks, ingest, {
      ...bulk,
      large,
    });
  } finally {
    await app.close();
    await embedded?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }

  /** A document of `paragraphCount` paragraphs of corpus sentences (~1,000 characters each); a third are public. */
  function makeContent(d: number, paragraphCount: number): { title: string; content: string; isPublic: boolean } {
    const paragraphs: string[] = [];
    for (let p = 0; p < paragraphCount; p += 1) {
      let paragraph = '';
      while (paragraph.length < 850) paragraph += `${pick()} `;
      paragraphs.push(paragraph.trim());
    }
    return {
      title: `Bench document ${d}: ${pick().slice(0, 60)}`,
      content: paragraphs.join('\n\n'),
      isPublic: d % 3 === 0,
    };
  }

  /**
   * Large uploads on the loaded table, as a user's files arrive: each uploaded as a Markdown file through
   * DocumentsService.upload (createFromText takes at most 1 MiB), extracted and indexed by the queue worker of this
   * process, both indexes present. Timed from the first upload until every one is indexed.
   */
  async function measureLargeUploads(
    projectId: string,
    actor: Actor,
  ): Promise<{ documents: number; chunks: number; seconds: number; chunksPerSecond: number }> {
    const dataSource = app.get(DatabasePool);
    const documents = app.get(DocumentsService);
    const largeDocuments = Number(option('large-documents', '3'));
    const largeChunks = Number(option('large-chunks', '2500'));
    if (largeDocuments <= 0) return { documents: 0, chunks: 0, seconds: 0, chunksPerSecond: 0 };
    // This process stands for an APP_ROLE=all server that nobody is calling: the pacer (IndexingPacer) reads its
    // own HTTP side, which a context without a listener would report as unseen (a worker-only process, always
    // paced). BENCH_LARGE_PACED=1 measures that worker-only shape instead.
    const paced = process.env.BENCH_LARGE_PACED === '1';
    httpActivity.serving = !paced;
    // Content unique per run (an upload of the same bytes to the project is refused as a duplicate).
    const run = randomBytes(4).toString('hex');
    const files = Array.from({ length: largeDocuments }, (_, i) => {
      // A bench document's 40 paragraphs make ~45 chunks (the chunker's overlap).
      const { title, content, isPublic } = makeContent(i, Math.round((largeChunks * CHUNKS_PER_DOCUMENT) / 45));
      return {
        title: `Large ${run} ${i}: ${title}`,
        isPublic,
        bytes: Buffer.from(`# ${title} (${run})\n\n${content}\n`),
      };
    });
    const cpuBefore = await cpuSeconds(dataSource);
    const started = performance.now();
    const ids: string[] = [];
    for (const [i, file] of files.entries()) {
      const view = await documents.upload(actor, {
        projectId,
        title: file.title,
        isPublic: file.isPublic,
        file: { originalName: `large-${run}-${i}.md`, mimeType: 'text/markdown', bytes: file.bytes },
      });
      ids.push(view.id);
    }
    let state: { finished: number; failed: number; chunks: number };
    for (;;) {
      [state] = (await dataSource.query(
        `SELECT count(*) FILTER (WHERE status IN ('indexed', 'failed'))::int AS finished,
                count(*) FILTER (WHERE status = 'failed')::int AS failed, coalesce(sum(chunk_count), 0)::int AS chunks
         FROM documents WHERE id = ANY($1::uuid[])`,
        [ids],
      )) as { finished: number; failed: number; chunks: number }[];
      if (state.finished === ids.length) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSeconds.since(cpuBefore, await cpuSeconds(dataSource));
    const large = {
      documents: ids.length,
      failed: state.failed,
      chunks: state.chunks,
      seconds: round(seconds),
      chunksPerSecond: round(state.chunks / seconds),
      paced: paced ? 'always (worker-only shape)' : "by this process's HTTP side (idle)",
      cpuMsPerChunk: {
        node: round((cpu.node * 1000) / Math.max(1, state.chunks)),
        postgres: round((cpu.postgres * 1000) / Math.max(1, state.chunks)),
      },
      load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    };
    // The segments those uploads left are merged into the main indexes in the background; done here before the
    // search phase, so search is measured as it runs once they are merged (the merge is timed apart, as the builds).
    const pending = Number(
      (
        (await dataSource.query(`SELECT count(*)::int AS n FROM document_chunks WHERE segment_id IS NOT NULL`)) as {
          n: number;
        }[]
      )[0].n,
    );
    const mergeStarted = performance.now();
    const mergeCpuBefore = await cpuSeconds(dataSource);
    await app.get(RagSegmentsService).mergeAll();
    const mergeCpu = cpuSeconds.since(mergeCpuBefore, await cpuSeconds(dataSource));
    const merged = {
      ...large,
      segmentMerge: {
        chunks: pending,
        seconds: round((performance.now() - mergeStarted) / 1000),
        postgresCpuMsPerChunk: round((mergeCpu.postgres * 1000) / Math.max(1, pending)),
      },
    };
    log(`large uploads: ${JSON.stringify(merged)}`);
    return merged;
  }

  async function measureSearch(
    projectId: string,
    actor: Actor,
    documentCount: number,
    chunks: number,
    ingest: unknown,
    bulk: unknown,
  ): Promise<void> {
    const dataSource = app.get(DatabasePool);
    const embedder = app.get<EmbeddingProvider>(EMBEDDING_PROVIDER);
    const search = app.get(RagSearchService);
    const dims = embedder.dimensions;
    const queries = Array.from({ length: queryCount }, () => pick().split(/\s+/).slice(0, 12).join(' '));
    const bare: number[] = [];
    const hybrid: number[] = [];
    const keywordOnly: number[] = [];
    const vectorOnly: number[] = [];
    const bareQuery = `SELECT id FROM document_chunks WHERE embedding_dims = ${dims} AND segment_id IS NULL ORDER BY embedding::vector(${dims}) <=> $1::vector(${dims}) LIMIT ${topK}`;
    // Every query once before measuring, each variant: on a machine whose caches other databases keep evicting,
    // a query's first search reads cold pages whichever search it is (the bare HNSW query took 83 ms the first
    // time and ~10 ms after), and the ratio would measure the order of cache misses instead of the searches.
    // The bare query on a connection of its own, with the server's default HNSW settings (ef_search 40): the
    // pool's connections start with the search settings (applySearchSessionSettings), and the bare query must
    // not run with them on some connections and without on others.
    const bareClient = new Client({ connectionString: config.database.url ?? embedded!.url });
    await bareClient.connect();
    const variants: { times: number[]; run: (query: string, vector: string) => Promise<unknown> }[] = [
      { times: bare, run: (_query, vector) => bareClient.query(bareQuery, [vector]) },
      { times: hybrid, run: (query) => search.searchVisible(actor, { query, projectId, topK, mode: 'hybrid' }) },
      // The two halves of hybrid on their own, to see where the time goes.
      { times: keywordOnly, run: (query) => search.searchVisible(actor, { query, projectId, topK, mode: 'keyword' }) },
      { times: vectorOnly, run: (query) => search.searchVisible(actor, { query, projectId, topK, mode: 'vector' }) },
    ];
    // Traced: a fifth variant, the named statements the hybrid search of the same query sent (captured in the warm-up
    // pass), run concurrently as they are, on two connections of their own with the pool's session settings, and
    // timed like the others: the statements alone against the whole search, in the same process and the same mix.
    const tracing = process.env.BENCH_TRACE === '1';
    const listClients = tracing
      ? [
          new Client({ connectionString: config.database.url ?? embedded!.url }),
          new Client({ connectionString: config.database.url ?? embedded!.url }),
        ]
      : [];
    const sent = new Map<string, CapturedStatement[]>();
    for (const client of listClients) {
      await client.connect();
      await applySearchSessionSettings(asKyselyConnection(client));
    }
    if (tracing) {
      traceDriver();
      variants.push({
        times: [],
        run: (query) =>
          Promise.all(
            (sent.get(query) ?? []).map((statement, index) => listClients[index % listClients.length].query(statement)),
          ),
      });
    }
    for (const query of queries) {
      const vector = toVectorLiteral((await embedder.embed([query], 'query'))[0]);
      for (const [index, variant] of variants.entries()) {
        if (index === 1 && tracing) {
          const captured = captureStatements(() => variant.run(query, vector));
          await captured.done;
          sent.set(query, captured.statements);
        } else await variant.run(query, vector);
      }
    }
    // Then each query's variants in a rotating order (query i starts with variant i mod their number): whichever runs first
    // after another query may still find a page evicted, and no variant is always that one.
    const pool = dataSource.pool as Pool & { _clients?: { processID?: number }[] };
    const backendPids = (): number[] => [
      ...(pool._clients ?? []).map((client) => client.processID ?? 0),
      ...[bareClient, ...listClients].map((client) => (client as unknown as { processID?: number }).processID ?? 0),
    ];
    const traces = variants.map(() => ({ phases: [] as PhaseRecord[], node: [0, 0], backends: [0, 0] }));
    for (const [i, query] of queries.entries()) {
      const vector = toVectorLiteral((await embedder.embed([query], 'query'))[0]);
      for (let v = 0; v < variants.length; v += 1) {
        const index = (i + v) % variants.length;
        const variant = variants[index];
        if (!tracing) {
          const t0 = performance.now();
          await variant.run(query, vector);
          variant.times.push(performance.now() - t0);
          continue;
        }
        const pids = backendPids();
        const node0 = schedstat('self');
        const backends0 = pids.map(schedstat);
        const t0 = performance.now();
        const { phases } = await tracePhases(() => variant.run(query, vector));
        variant.times.push(performance.now() - t0);
        const node1 = schedstat('self');
        const backends1 = pids.map(schedstat);
        const trace = traces[index];
        trace.phases.push(phases);
        for (const k of [0, 1]) {
          trace.node[k] += node1[k] - node0[k];
          trace.backends[k] += backends1.reduce((sum, after, b) => sum + after[k] - backends0[b][k], 0);
        }
      }
    }
    await bareClient.end();
    for (const client of listClients) await client.end();
    // BENCH_DUMP=<file> (traced runs): each query's vector and the named statements its hybrid search sent, for
    // replaying variants of them at the statement level (binary parameters as base64).
    if (tracing && process.env.BENCH_DUMP) {
      const dump = await Promise.all(
        queries.map(async (query) => ({
          query,
          vector: toVectorLiteral((await embedder.embed([query], 'query'))[0]),
          statements: (sent.get(query) ?? []).map(({ name, text, values }) => ({
            name,
            text,
            values: values.map((value) => (Buffer.isBuffer(value) ? { base64: value.toString('base64') } : value)),
          })),
        })),
      );
      writeFileSync(process.env.BENCH_DUMP, JSON.stringify({ bareQuery, queries: dump }));
    }
    const stats = (values: number[]) => {
      const sorted = [...values].sort((a, b) => a - b);
      return {
        p50: round(sorted[Math.floor(sorted.length * 0.5)]),
        p95: round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]),
      };
    };
    const bareStats = stats(bare);
    const [{ all_visible: postingsAllVisible }] = await dataSource.query(
      `SELECT round(relallvisible::numeric / greatest(relpages, 1), 2)::float8 AS all_visible FROM pg_class WHERE relname = 'rag_postings'`,
    );
    const hybridStats = stats(hybrid);
    process.stdout.write(
      `${JSON.stringify(
        {
          database: embedded ? 'embedded (PGlite)' : 'postgres',
          queue: config.redis.url ? 'redis' : 'postgres',
          embeddings: embedder.key,
          documents: documentCount,
          chunks,
          // Share of rag_postings pages the visibility map marks all-visible (see the VACUUM above): near 1 for a
          // figure comparable with docs/perf/rag.md; a --search-only run on a database never vacuumed shows less.
          postingsAllVisible,
          ingest,
          bulk,
          search: {
            queries: queries.length,
            topK,
            bareVectorMs: bareStats,
            hybridMs: hybridStats,
            keywordModeMs: stats(keywordOnly),
            vectorModeMs: stats(vectorOnly),
            ratio: { p50: round(hybridStats.p50 / bareStats.p50), p95: round(hybridStats.p95 / bareStats.p95) },
          },
          ...(tracing
            ? {
                trace: Object.fromEntries(
                  ['bare', 'hybrid', 'keywordMode', 'vectorMode', 'hybridStatementsAlone'].map((name, index) => [
                    name,
                    summariseTrace(traces[index], variants[index].times),
                  ]),
                ),
              }
            : {}),
        },
        null,
        2,
      )}\n`,
    );
  }
}

/** CPU seconds so far of this process (every thread) and of the PostgreSQL backends connected to its database, by pid. */
async function cpuSeconds(dataSource: DatabasePool): Promise<{ node: number; backends: Map<number, number> }> {
  const usage = process.cpuUsage();
  const rows = (await dataSource.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)) as {
    pid: number;
  }[];
  const backends = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      // An embedded engine's pids are not processes of this machine: count only PostgreSQL's own.
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      backends.set(pid, (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // Not on this machine (a remote server) or already gone.
    }
  }
  return { node: (usage.user + usage.system) / 1e6, backends };
}

/** CPU seconds between two readings; a backend that started in between counts from zero, one that ended is lost. */
cpuSeconds.since = (
  before: Awaited<ReturnType<typeof cpuSeconds>>,
  after: Awaited<ReturnType<typeof cpuSeconds>>,
): { node: number; postgres: number } => {
  let postgres = 0;
  for (const [pid, seconds] of after.backends) postgres += seconds - (before.backends.get(pid) ?? 0);
  return { node: after.node - before.node, postgres };
};

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** CPU time and run-queue wait (ms) of a process's main thread so far; zeros where Linux schedstat is not readable. */
function schedstat(pid: number | 'self'): [number, number] {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return [run / 1e6, wait / 1e6];
  } catch {
    return [0, 0];
  }
}

/** Per phase: p50 over the searches that had it, mean over all searches, and in how many it ran; then CPU per search. */
function summariseTrace(
  trace: { phases: PhaseRecord[]; node: number[]; backends: number[] },
  times: number[],
): unknown {
  const count = trace.phases.length;
  const names = [...new Set(trace.phases.flatMap((record) => [...record.keys()]))].sort();
  const p50 = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const precise = (value: number): number => Math.round(value * 1000) / 1000;
  return {
    totalMs: { p50: precise(p50(times)), mean: precise(times.reduce((a, b) => a + b, 0) / times.length) },
    phasesMs: Object.fromEntries(
      names.map((name) => {
        const values = trace.phases.flatMap((record) => (record.has(name) ? [record.get(name)!] : []));
        return [
          name,
          { p50: precise(p50(values)), mean: precise(values.reduce((a, b) => a + b, 0) / count), runs: values.length },
        ];
      }),
    ),
    perSearchMs: {
      nodeCpu: precise(trace.node[0] / count),
      nodeRunQueueWait: precise(trace.node[1] / count),
      backendsCpu: precise(trace.backends[0] / count),
      backendsRunQueueWait: precise(trace.backends[1] / count),
    },
  };
}

/** A named statement as the service sent it (NamedStatements). */
interface CapturedStatement {
  name: string;
  text: string;
  values: unknown[];
}

let capturing: CapturedStatement[] | null = null;

/** The named statements `operation` sends (traced runs only: traceDriver records them). */
function captureStatements(operation: () => Promise<unknown>): {
  statements: CapturedStatement[];
  done: Promise<unknown>;
} {
  const statements: CapturedStatement[] = [];
  capturing = statements;
  const done = operation().finally(() => {
    capturing = null;
  });
  return { statements, done };
}

/**
 * Times node-postgres' side of each statement sent inside a phase trace: `pg.first` from the call to the first
 * answer with rows' metadata (the server's work and the wire), `pg.parse` the rows' parsing, `pg.ready` from the
 * call to ReadyForQuery. The driver handles those messages outside the caller's async context, so the trace's
 * record is taken at the call and kept on the query object.
 */
function traceDriver(): void {
  const load = createRequire(__filename);
  type TracedQuery = { __trace?: { frame: NonNullable<ReturnType<typeof currentPhaseFrame>>; sent: number } };
  const query = (load('pg/lib/query.js') as { prototype: Record<string, (...args: unknown[]) => unknown> }).prototype;
  const client = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const add = (traced: TracedQuery, phase: string, ms: number): void => {
    const { frame } = traced.__trace!;
    const key = `${frame.prefix}${phase}`;
    frame.record.set(key, (frame.record.get(key) ?? 0) + ms);
  };
  const originalQuery = client.query;
  client.query = function (this: { _activeQuery?: unknown; _queryQueue: unknown[] }, ...args: unknown[]) {
    const config = args[0] as Partial<CapturedStatement> | undefined;
    if (capturing && config && typeof config === 'object' && config.name?.startsWith('atrium_')) {
      capturing.push({ name: config.name, text: config.text!, values: config.values! });
    }
    const frame = currentPhaseFrame();
    const sent = performance.now();
    const result = originalQuery.apply(this, args);
    const submitted = (this._queryQueue.at(-1) ?? this._activeQuery) as TracedQuery | undefined;
    if (frame && submitted && !submitted.__trace) submitted.__trace = { frame, sent };
    return result;
  };
  const wrap = (method: string, before: (traced: TracedQuery) => void, timeIt?: string): void => {
    const original = query[method];
    query[method] = function (this: TracedQuery, ...args: unknown[]) {
      if (!this.__trace) return original.apply(this, args);
      before(this);
      if (!timeIt) return original.apply(this, args);
      const t0 = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        add(this, timeIt, performance.now() - t0);
      }
    };
  };
  wrap('handleRowDescription', (traced) => add(traced, 'pg.first', performance.now() - traced.__trace!.sent));
  wrap('handleDataRow', () => undefined, 'pg.parse');
  wrap('handleReadyForQuery', (traced) => add(traced, 'pg.ready', performance.now() - traced.__trace!.sent));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
