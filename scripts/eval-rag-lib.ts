import type { INestApplicationContext } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabasePool } from '../src/database/database-pool.js';
import type { Actor } from '../src/common/auth/actor.js';
import { UsersService } from '../src/modules/auth/users.service.js';
import { DocumentsService } from '../src/modules/documents/documents.service.js';
import { ProjectsService } from '../src/modules/projects/projects.service.js';
import { RagSearchService, type SearchMode } from '../src/modules/rag/rag-search.service.js';

/**
 * The RAG quality harness: a BEIR-format collection goes through the real service path (documents created
 * by DocumentsService, indexed by the real indexing jobs on the queue, queried through RagSearchService),
 * and nDCG@10, Recall@100 and search latency are measured per mode.
 */
export interface BeirCollection {
  corpus: { id: string; title: string; text: string }[];
  queries: { id: string; text: string }[];
  qrels: Map<string, Map<string, number>>;
}

export interface EvalOptions {
  /** Only the first N queries that have judgements. */
  limitQueries?: number;
  /** Only the documents judged relevant to the selected queries plus this many others (a subset for CI). */
  limitDocs?: number;
  modes?: SearchMode[];
  log?: (line: string) => void;
  /**
   * A JSON file remembering the ingested project (user, project, document id → corpus id): when it exists and
   * its project is still in the database, searching starts at once without ingesting again (iterating on
   * ranking or speed); otherwise the collection is ingested and the file written.
   */
  stateFile?: string;
}

export interface ModeReport {
  mode: SearchMode;
  /** From a topK 100 search (the one Recall@100 uses): KEYWORD_CANDIDATES and VECTOR_CANDIDATES do not matter below 100. */
  ndcg10: number;
  /** From a topK 10 search, as the API and the tools usually ask: KEYWORD_CANDIDATES and VECTOR_CANDIDATES candidates. */
  ndcg10AtTopK10: number;
  recall100: number;
  latencyP50Ms: number;
  latencyP95Ms: number;
}

export interface EvalReport {
  documents: number;
  chunks: number;
  queries: number;
  indexSeconds: number;
  chunksPerSecond: number;
  modes: ModeReport[];
}

export function loadBeirCollection(dir: string): BeirCollection {
  const lines = (file: string) =>
    readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
  const corpus = lines('corpus.jsonl').map((line) => {
    const row = JSON.parse(line) as { _id?: string; id?: string; title?: string; text?: string };
    return { id: String(row._id ?? row.id), title: row.title ?? '', text: row.text ?? '' };
  });
  const queries = lines('queries.jsonl').map((line) => {
    const row = JSON.parse(line) as { _id?: string; id?: string; text: string };
    return { id: String(row._id ?? row.id), text: row.text };
  });
  const qrelsFile = ['qrels/test.tsv', 'qrels.tsv'].map((file) => join(dir, file)).find((file) => existsSync(file));
  if (!qrelsFile) throw new Error(`${dir} has neither qrels/test.tsv nor qrels.tsv`);
  const qrels = new Map<string, Map<string, number>>();
  for (const line of readFileSync(qrelsFile, 'utf8').split('\n').slice(1)) {
    const [queryId, docId, score] = line.trim().split('\t');
    if (!queryId || !docId) continue;
    if (!qrels.has(queryId)) qrels.set(queryId, new Map());
    qrels.get(queryId)!.set(docId, Number(score ?? 1));
  }
  return { corpus, queries, qrels };
}

export function ndcgAt(ranked: readonly string[], judged: Map<string, number>, k: number): number {
  let dcg = 0;
  ranked.slice(0, k).forEach((id, i) => {
    const gain = judged.get(id) ?? 0;
    if (gain > 0) dcg += (2 ** gain - 1) / Math.log2(i + 2);
  });
  const ideal = [...judged.values()]
    .filter((gain) => gain > 0)
    .sort((a, b) => b - a)
    .slice(0, k);
  const idcg = ideal.reduce((sum, gain, i) => sum + (2 ** gain - 1) / Math.log2(i + 2), 0);
  return idcg > 0 ? dcg / idcg : 0;
}

export function recallAt(ranked: readonly string[], judged: Map<string, number>, k: number): number {
  const relevant = [...judged.entries()].filter(([, gain]) => gain > 0).map(([id]) => id);
  if (relevant.length === 0) return 0;
  const top = new Set(ranked.slice(0, k));
  return relevant.filter((id) => top.has(id)).length / relevant.length;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

export function selectSubset(collection: BeirCollection, options: EvalOptions): BeirCollection {
  let queries = collection.queries.filter((query) => collection.qrels.has(query.id));
  if (options.limitQueries !== undefined) queries = queries.slice(0, options.limitQueries);
  let corpus = collection.corpus;
  if (options.limitDocs !== undefined) {
    const needed = new Set(queries.flatMap((query) => [...collection.qrels.get(query.id)!.keys()]));
    const others = collection.corpus.filter((doc) => !needed.has(doc.id)).slice(0, options.limitDocs);
    corpus = [...collection.corpus.filter((doc) => needed.has(doc.id)), ...others];
  }
  return { corpus, queries, qrels: collection.qrels };
}

/** Runs the evaluation inside a booted application (API + worker roles). */
export async function runEval(
  app: INestApplicationContext,
  collection: BeirCollection,
  options: EvalOptions = {},
): Promise<EvalReport> {
  const log = options.log ?? (() => undefined);
  const modes = options.modes ?? ['keyword', 'vector', 'hybrid'];
  const subset = selectSubset(collection, options);
  const dataSource = app.get(DatabasePool);
  const users = app.get(UsersService);
  const projects = app.get(ProjectsService);
  const documents = app.get(DocumentsService);
  const search = app.get(RagSearchService);

  const saved =
    options.stateFile && existsSync(options.stateFile)
      ? (JSON.parse(readFileSync(options.stateFile, 'utf8')) as {
          userId: string;
          projectId: string;
          indexSeconds: number;
          documents: Record<string, string>;
        })
      : null;
  const [stillThere] = saved ? await dataSource.query(`SELECT 1 FROM projects WHERE id = $1`, [saved.projectId]) : [];
  const user = stillThere
    ? { id: saved!.userId }
    : await users.create({
        email: `eval-${randomBytes(6).toString('hex')}@example.com`,
        password: randomBytes(12).toString('hex'),
        name: 'RAG eval',
      });
  const actor: Actor = { userId: user.id, projectIds: null, repos: null };
  const project = stillThere
    ? { id: saved!.projectId }
    : await projects.create(actor, { name: `eval ${new Date().toISOString()}` });

  const started = performance.now();
  const corpusIdByDocument = new Map<string, string>(stillThere ? Object.entries(saved!.documents) : []);
  if (stillThere) log(`reusing project ${project.id} from ${options.stateFile}`);
  for (const [i, doc] of (stillThere ? [] : subset.corpus).entries()) {
    const created = await documents.createFromText(actor, {
      title: doc.title || doc.id,
      content: doc.text || doc.title,
      projectId: project.id,
      isPublic: false,
    });
    corpusIdByDocument.set(created.id, doc.id);
    if ((i + 1) % 500 === 0) log(`created ${i + 1}/${subset.corpus.length} documents`);
  }
  for (let lastLog = 0; ;) {
    const [row] = await dataSource.query(
      `SELECT count(*) FILTER (WHERE status IN ('indexed', 'failed'))::int AS finished, count(*)::int AS total FROM documents WHERE project_id = $1`,
      [project.id],
    );
    if (row.finished >= row.total) break;
    if (Date.now() - lastLog > 10_000) {
      log(`indexed ${row.finished}/${row.total}`);
      lastLog = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const indexSeconds = stillThere ? saved!.indexSeconds : (performance.now() - started) / 1000;
  if (options.stateFile && !stillThere) {
    writeFileSync(
      options.stateFile,
      JSON.stringify({
        userId: user.id,
        projectId: project.id,
        indexSeconds,
        documents: Object.fromEntries(corpusIdByDocument),
      }),
    );
  }
  const [{ chunks }] = await dataSource.query(
    `SELECT count(*)::int AS chunks FROM document_chunks c JOIN documents d ON d.id = c.document_id WHERE d.project_id = $1`,
    [project.id],
  );
  log(`indexed ${subset.corpus.length} documents into ${chunks} chunks in ${indexSeconds.toFixed(1)} s`);

  const reports: ModeReport[] = [];
  for (const mode of modes) {
    let ndcg = 0;
    let ndcgTop10 = 0;
    let recall = 0;
    const latencies: number[] = [];
    for (const query of subset.queries) {
      const judged = subset.qrels.get(query.id)!;
      const t0 = performance.now();
      const { results } = await search.searchVisible(actor, {
        query: query.text,
        projectId: project.id,
        topK: 100,
        mode,
      });
      latencies.push(performance.now() - t0);
      // Documents in the order of their best chunk.
      const ranked = [...new Set(results.map((hit) => corpusIdByDocument.get(hit.documentId)!))];
      ndcg += ndcgAt(ranked, judged, 10);
      recall += recallAt(ranked, judged, 100);
      const top10 = await search.searchVisible(actor, { query: query.text, projectId: project.id, topK: 10, mode });
      ndcgTop10 += ndcgAt(
        [...new Set(top10.results.map((hit) => corpusIdByDocument.get(hit.documentId)!))],
        judged,
        10,
      );
    }
    latencies.sort((a, b) => a - b);
    const report = {
      mode,
      ndcg10: round(ndcg / subset.queries.length),
      ndcg10AtTopK10: round(ndcgTop10 / subset.queries.length),
      recall100: round(recall / subset.queries.length),
      latencyP50Ms: round(percentile(latencies, 0.5)),
      latencyP95Ms: round(percentile(latencies, 0.95)),
    };
    log(
      `${mode}: nDCG@10 ${report.ndcg10} (topK 10: ${report.ndcg10AtTopK10})  Recall@100 ${report.recall100}  p50 ${report.latencyP50Ms} ms  p95 ${report.latencyP95Ms} ms`,
    );
    reports.push(report);
  }
  return {
    documents: subset.corpus.length,
    chunks,
    queries: subset.queries.length,
    indexSeconds: round(indexSeconds),
    chunksPerSecond: round(chunks / indexSeconds),
    modes: reports,
  };
}

function round(value: number): number {
  return Math.round(value * 10000) / 10000;
}
