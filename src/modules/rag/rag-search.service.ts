import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ProjectsService } from '../projects/projects.service.js';
import { EMBEDDING_PROVIDER, toVectorLiteral, type EmbeddingProvider } from './embeddings/embedding-provider.js';
import { fuseScores, type ScoredId } from './fusion.js';
import {
  BM25_B,
  BM25_K1,
  DEFAULT_HYBRID_VECTOR_WEIGHT,
  FUSION_CANDIDATES,
  KEYWORD_POSTINGS_PER_TERM,
  POSTING_IMPACT_SQL,
  TEXT_SEARCH_CONFIG,
  TSV_TF_SQL,
} from './rag.constants.js';

export type SearchMode = 'hybrid' | 'vector' | 'keyword';

export interface SearchInput {
  query: string;
  /** null = every project the actor may see (the search_documents tool with no project_id). */
  projectId: string | null;
  topK: number;
  mode: SearchMode;
  documentIds?: string[];
}

export interface SearchHit {
  documentId: string;
  documentTitle: string;
  chunkId: string;
  chunkIndex: number;
  text: string;
  score: number;
  vectorScore: number | null;
  keywordScore: number | null;
  startOffset: number;
  endOffset: number;
}

/** Runs one SQL statement and returns its rows. */
type Query = (sql: string, params: unknown[]) => Promise<unknown[]>;

export interface SearchResult {
  results: SearchHit[];
  tookMs: number;
}

/**
 * Search over document chunks, with the document visibility rule applied in SQL so a chunk of a
 * document the caller may not see never leaves the database: visible = authored by the caller, or public
 * and (the caller is a member of its project, or it has no project); pinned actors see only their projects.
 *
 * - keyword: BM25 (k1 1.2, b 0.75) over the `rag_postings` inverted index with English stemming, reading at
 *   most KEYWORD_POSTINGS_PER_TERM postings per term in impact order (see keywordCandidates). Measured
 *   on SciFact (5,183 abstracts, 300 queries): nDCG@10 0.683 vs 0.665 published BM25.
 * - vector: cosine over the HNSW index of the configured vector space only.
 * - hybrid: convex fusion of min-max-normalised scores (see fusion.ts); measured 0.685 on SciFact with the
 *   offline embedder at weight 0.15, where reciprocal-rank fusion fell to 0.59–0.63.
 */
@Injectable()
export class RagSearchService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(RagSearchService.name);
  private iterativeScan = false;
  /**
   * Connections for search statements only, whose sessions start with the settings search needs
   * (`enable_bitmapscan = off` for the keyword plan, `hnsw.ef_search` for FUSION_CANDIDATES candidates,
   * iterative HNSW scans): each ranked list is then one statement, one round trip, instead of BEGIN,
   * set_config, the query and COMMIT on the shared pool. Null on the embedded engine (PGlite), whose
   * connections share one session, so settings given to one connection would apply to all: there every
   * list runs in a short transaction with SET LOCALs instead.
   */
  private searchPool: Pool | null = null;
  readonly vectorWeight: number;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(EMBEDDING_PROVIDER) private readonly embedder: EmbeddingProvider,
    private readonly projects: ProjectsService,
  ) {
    const fromEnv = Number(process.env.RAG_HYBRID_VECTOR_WEIGHT);
    this.vectorWeight = Number.isFinite(fromEnv) && fromEnv >= 0 && fromEnv <= 1 && process.env.RAG_HYBRID_VECTOR_WEIGHT ? fromEnv : DEFAULT_HYBRID_VECTOR_WEIGHT;
  }

  async onModuleInit(): Promise<void> {
    // pgvector >= 0.8 can keep scanning the HNSW graph until enough rows pass the visibility filter.
    try {
      await this.dataSource.transaction(async (manager) => {
        await manager.query(`SET LOCAL hnsw.iterative_scan = relaxed_order`);
      });
      this.iterativeScan = true;
    } catch {
      this.logger.warn({ msg: 'pgvector without hnsw.iterative_scan; filtered vector search may return fewer hits' });
    }
    const [{ version }] = (await this.dataSource.query(`SELECT version() AS version`)) as { version: string }[];
    const options = this.dataSource.options as { url?: string; extra?: { max?: number; statement_timeout?: number } };
    // RAG_SEARCH_POOL=off: for a connection pooler that refuses startup options (PgBouncer without ignore_startup_parameters).
    if (options.url && !/pglite|emscripten/i.test(version) && process.env.RAG_SEARCH_POOL !== 'off') {
      const settings = [`enable_bitmapscan=off`, `hnsw.ef_search=${RagSearchService.efSearch(FUSION_CANDIDATES)}`];
      if (this.iterativeScan) settings.push(`hnsw.iterative_scan=relaxed_order`);
      this.searchPool = new Pool({
        connectionString: options.url,
        max: options.extra?.max ?? 10,
        connectionTimeoutMillis: 5000,
        idleTimeoutMillis: 30_000,
        statement_timeout: options.extra?.statement_timeout ?? 30_000,
        application_name: 'atrium-rag-search',
        options: settings.map((setting) => `-c ${setting}`).join(' '),
      });
      // An idle connection that breaks (server restart) is dropped by the pool; without a listener it would crash the process.
      this.searchPool.on('error', (error) => this.logger.warn({ msg: 'search pool connection error', error: error.message }));
    }
  }

  async onModuleDestroy(): Promise<void> {
    const pool = this.searchPool;
    this.searchPool = null;
    await pool?.end();
  }

  /** HNSW candidate-list size for `candidates` results. */
  private static efSearch(candidates: number): number {
    return Math.min(1000, Math.max(40, candidates));
  }

  /** Runs one statement on the search pool (its session settings apply), or null when there is none. */
  private onSearchPool(): Query | null {
    const pool = this.searchPool;
    return pool ? async (sql, params) => (await pool.query(sql, params)).rows : null;
  }

  /** Route/tool entry: checks project access, then searches. */
  async search(actor: Actor, input: SearchInput): Promise<SearchResult> {
    if (input.projectId !== null) {
      const role = await this.projects.roleOf(actor, input.projectId);
      if (role === null) throw AppException.notFound('Project');
    }
    return this.searchVisible(actor, input);
  }

  /** The search itself; `topK` may exceed the route's 50 for the evaluation harness (Recall@100). */
  async searchVisible(actor: Actor, input: SearchInput): Promise<SearchResult> {
    const started = performance.now();
    const candidates = Math.max(FUSION_CANDIDATES, input.topK);
    const dims = this.embedder.dimensions;
    const queryVector =
      input.mode === 'keyword' ? null : (await this.embedder.embed([input.query], 'query'))[0];
    const vectorLiteral = queryVector && queryVector.some((value) => value !== 0) ? toVectorLiteral(queryVector) : null;

    const visibility = this.visibilityParams(actor, input);
    // The two ranked lists run concurrently, each on its own pooled connection: hybrid costs about the slower
    // of the two instead of their sum. Both apply the visibility rule in SQL, and loading the winners checks it
    // again. On the search pool each list is one statement (the session has the settings); otherwise, or when
    // more candidates than FUSION_CANDIDATES need a larger ef_search, each runs in a short transaction for its
    // SET LOCALs.
    const pooled = this.onSearchPool();
    const [keyword, vector] = await Promise.all([
      input.mode === 'vector'
        ? Promise.resolve([])
        : pooled
          ? this.keywordCandidates(pooled, input.query, visibility, candidates)
          : this.dataSource.transaction(async (manager) => {
              // Ordered index scans of the impact index that stop after a term's best postings; with a generic
              // estimate of a lexeme's postings the planner would bitmap-scan them all and sort.
              await manager.query(`SELECT set_config('enable_bitmapscan', 'off', true)`);
              return this.keywordCandidates((sql, params) => manager.query(sql, params), input.query, visibility, candidates);
            }),
      !vectorLiteral
        ? Promise.resolve([])
        : pooled && candidates === FUSION_CANDIDATES
          ? this.vectorCandidates(pooled, vectorLiteral, dims, visibility, candidates)
          : this.dataSource.transaction(async (manager) => {
              // set_config(..., true) is SET LOCAL; both settings in one round trip.
              await manager.query(
                this.iterativeScan
                  ? `SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`
                  : `SELECT set_config('hnsw.ef_search', $1, true)`,
                [String(RagSearchService.efSearch(candidates))],
              );
              return this.vectorCandidates((sql, params) => manager.query(sql, params), vectorLiteral, dims, visibility, candidates);
            }),
    ]);
    const weight = input.mode === 'keyword' ? 0 : input.mode === 'vector' ? 1 : this.vectorWeight;
    const fused = fuseScores(keyword, vector, weight)
      .filter((hit) => (input.mode === 'keyword' ? hit.keywordScore !== null : input.mode === 'vector' ? hit.vectorScore !== null : true))
      .slice(0, input.topK);
    const results = await this.hydrate(pooled ?? ((sql, params) => this.dataSource.query(sql, params)), visibility, fused, input.query, vectorLiteral, dims, input.mode);
    return { results, tookMs: Math.round((performance.now() - started) * 100) / 100 };
  }

  private visibilityParams(actor: Actor, input: SearchInput): unknown[] {
    return [actor.userId, input.projectId, actor.projectIds === null ? null : [...actor.projectIds], input.documentIds?.length ? input.documentIds : null];
  }

  /** The visibility rule on documents `d`; parameters $1..$4 are those of visibilityParams. */
  private static readonly VISIBLE = `
      (d.author_id = $1::uuid OR (d.is_public AND (d.project_id IS NULL OR EXISTS (
            SELECT 1 FROM project_members m WHERE m.project_id = d.project_id AND m.user_id = $1::uuid))))
      AND ($2::uuid IS NULL OR d.project_id = $2::uuid)
      AND ($3::uuid[] IS NULL OR d.project_id = ANY($3::uuid[]))
      AND ($4::uuid[] IS NULL OR d.id = ANY($4::uuid[]))`;

  private static readonly VISIBLE_DOCUMENTS = `SELECT d.id FROM documents d WHERE ${RagSearchService.VISIBLE}`;

  /**
   * BM25 top-`limit` over the visible chunks, in two steps in one statement:
   * 1. For each query term, its best `KEYWORD_POSTINGS_PER_TERM` visible postings in impact order (an
   *    index-only scan of `rag_postings_impact_idx` that stops there; visibility is a hashed lookup in the
   *    visible documents). A term in fewer visible chunks than that is read entirely, and exactly.
   * 2. The best `limit` chunks by that sum get the exact contribution of the cut-off terms too, read from the
   *    chunk's own tsvector (the postings are derived from it: same tf and length), so the scores and their
   *    order are exact BM25. One chunk row per winner instead of a posting lookup per (cut term, winner):
   *    at 100k chunks the postings' primary key is far larger than memory, and those scattered lookups were
   *    most of the pages a cold query read.
   * When no term is cut off this is BM25 over all postings; otherwise a chunk can only be missed if what
   * lifts it is very common terms (low IDF) in which it is not among the best postings.
   */
  private async keywordCandidates(run: Query, query: string, visibility: unknown[], limit: number): Promise<ScoredId[]> {
    // BM25 of one posting; the term's IDF comes precomputed with the term.
    const bm25 = (idf: string, tf: string, dl: string) =>
      `${idf} * ${tf} * ($7::float8 + 1) / (${tf} + $7::float8 * (1 - $8::float8 + $8::float8 * ${dl} / st.avgdl))`;
    const rows = (await run(
      `WITH st AS MATERIALIZED (
              SELECT greatest(chunk_count, 1)::float8 AS n, greatest(total_tokens::float8 / greatest(chunk_count, 1), 1) AS avgdl
              FROM rag_corpus_stats WHERE id = 1),
            -- cut: the term has more postings (visible or not) than are read, so its list may be incomplete.
            q AS MATERIALIZED (
              SELECT l.lexeme, ln(1 + (st.n - l.df + 0.5) / (l.df + 0.5)) AS idf, l.df > $9 AS cut
              FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('${TEXT_SEARCH_CONFIG}', $5::text))) u
              JOIN rag_lexicon l ON l.lexeme = u.lexeme AND l.df > 0 CROSS JOIN st),
            vis AS MATERIALIZED (${RagSearchService.VISIBLE_DOCUMENTS}),
            -- "IN (...) IS TRUE" keeps the check a hashed filter on the ordered index scan (a semi-join would
            -- lose the order and read every posting of the term).
            -- Each read posting's BM25 contribution, computed once.
            post AS (
              SELECT t.chunk_id, q.cut, ${bm25('q.idf', 't.tf', 't.dl')} AS s
              FROM q CROSS JOIN st CROSS JOIN LATERAL (
                SELECT p.chunk_id, p.tf::float8 AS tf, p.dl::float8 AS dl
                FROM rag_postings p
                WHERE p.lexeme = q.lexeme AND (p.document_id IN (SELECT vis.id FROM vis)) IS TRUE
                ORDER BY ${POSTING_IMPACT_SQL} DESC
                LIMIT $9) t),
            best AS MATERIALIZED (
              SELECT chunk_id, sum(s) AS approx, coalesce(sum(s) FILTER (WHERE NOT cut), 0) AS uncut
              FROM post
              GROUP BY chunk_id
              ORDER BY approx DESC, chunk_id
              LIMIT $6),
            cut AS MATERIALIZED (SELECT array_agg(lexeme) AS lexemes FROM q WHERE cut)
       -- The cut terms' exact tf in a winner, from its tsvector reduced to those terms: they are marked with
       -- weight A (all of a to_tsvector are D) and kept by ts_filter, far cheaper than unnesting every lexeme.
       SELECT best.chunk_id AS id,
              (best.uncut + coalesce((
                 SELECT sum(${bm25('q.idf', 't.tf', 'c.token_count')})
                 FROM document_chunks c CROSS JOIN st CROSS JOIN cut
                 CROSS JOIN LATERAL (
                   SELECT u.lexeme, ${TSV_TF_SQL} AS tf
                   FROM unnest(ts_filter(setweight(setweight(c.tsv, 'D'), 'A', cut.lexemes), '{a}')) u) t
                 JOIN q ON q.lexeme = t.lexeme AND q.cut
                 WHERE c.id = best.chunk_id AND cut.lexemes IS NOT NULL), 0))::float8 AS score
       FROM best
       ORDER BY score DESC, id`,
      [...visibility, query, limit, BM25_K1, BM25_B, KEYWORD_POSTINGS_PER_TERM],
    )) as { id: string; score: number }[];
    return rows.map((row) => ({ id: row.id, score: Number(row.score) }));
  }

  private async vectorCandidates(run: Query, vector: string, dims: number, visibility: unknown[], limit: number): Promise<ScoredId[]> {
    // The ORDER BY expression matches the partial HNSW index `(embedding::vector(dims)) WHERE embedding_dims = dims`;
    // visibility is a per-row join filter so the planner walks the graph (iterative scan) instead of
    // driving an exact scan from every visible document.
    const rows = (await run(
      `SELECT c.id, (c.embedding::vector(${dims}) <=> $5::vector(${dims}))::float8 AS distance
       FROM document_chunks c JOIN documents d ON d.id = c.document_id
       WHERE c.embedding_dims = ${dims} AND c.embedding_model = $6 AND c.embedding IS NOT NULL
         AND ${RagSearchService.VISIBLE}
       ORDER BY c.embedding::vector(${dims}) <=> $5::vector(${dims})
       LIMIT $7`,
      [...visibility, vector, this.embedder.key, limit],
    )) as { id: string; distance: number }[];
    return rows.map((row) => ({ id: row.id, score: 1 - Number(row.distance) }));
  }

  /** Loads the winning chunks and fills in the score a hit did not get from the other list. */
  private async hydrate(
    run: Query,
    visibility: unknown[],
    fused: ReturnType<typeof fuseScores>,
    query: string,
    vector: string | null,
    dims: number,
    mode: SearchMode,
  ): Promise<SearchHit[]> {
    if (fused.length === 0) return [];
    const rows = (await run(
      // A score a hit already has from its list is not computed again (the vector would be read from TOAST).
      // The keyword score comes from the chunk's tsvector, which the postings are derived from.
      `WITH q AS MATERIALIZED (
              SELECT l.lexeme, ln(1 + (st.n - l.df + 0.5) / (l.df + 0.5)) AS idf, st.avgdl
              FROM unnest(to_tsvector('${TEXT_SEARCH_CONFIG}', $6::text)) u
              JOIN rag_lexicon l ON l.lexeme = u.lexeme AND l.df > 0
              CROSS JOIN (SELECT greatest(chunk_count, 1)::float8 AS n, greatest(total_tokens::float8 / greatest(chunk_count, 1), 1) AS avgdl
                          FROM rag_corpus_stats WHERE id = 1) st)
       SELECT c.id, c.document_id, d.title, c.chunk_index, c.text, c.start_offset, c.end_offset,
              CASE WHEN $7::text IS NOT NULL AND c.id = ANY($11::uuid[]) AND c.embedding IS NOT NULL AND c.embedding_dims = ${dims}
                        AND c.embedding_model = $8
                   THEN (1 - (c.embedding::vector(${dims}) <=> $7::vector(${dims})))::float8 END AS vector_score,
              CASE WHEN c.id = ANY($12::uuid[]) THEN
                (SELECT coalesce(sum(q.idf * t.tf * ($9::float8 + 1) / (t.tf + $9::float8 * (1 - $10::float8 + $10::float8 * c.token_count / q.avgdl))), 0)::float8
                 FROM (SELECT u.lexeme, ${TSV_TF_SQL} AS tf FROM unnest(c.tsv) u) t JOIN q ON q.lexeme = t.lexeme) END AS keyword_score
       FROM document_chunks c JOIN documents d ON d.id = c.document_id
       WHERE c.id = ANY($5::uuid[])
         -- Checked again here: ranking and loading are separate statements (separate snapshots under READ
         -- COMMITTED), and a document made private in between must not come back.
         AND ${RagSearchService.VISIBLE}`,
      [
        ...visibility,
        fused.map((hit) => hit.id),
        query,
        vector,
        this.embedder.key,
        BM25_K1,
        BM25_B,
        fused.filter((hit) => hit.vectorScore === null).map((hit) => hit.id),
        fused.filter((hit) => hit.keywordScore === null).map((hit) => hit.id),
      ],
    )) as {
      id: string;
      document_id: string;
      title: string;
      chunk_index: number;
      text: string;
      start_offset: number;
      end_offset: number;
      vector_score: number | null;
      keyword_score: number | null;
    }[];
    const byId = new Map(rows.map((row) => [row.id, row]));
    const hits: SearchHit[] = [];
    for (const hit of fused) {
      const row = byId.get(hit.id);
      if (!row) continue; // deleted or hidden between ranking and loading
      const vectorScore = hit.vectorScore ?? row.vector_score;
      const keywordScore = hit.keywordScore ?? row.keyword_score;
      hits.push({
        documentId: row.document_id,
        documentTitle: row.title,
        chunkId: row.id,
        chunkIndex: row.chunk_index,
        text: row.text,
        score: round(mode === 'keyword' ? (hit.keywordScore ?? 0) : mode === 'vector' ? (hit.vectorScore ?? 0) : hit.score),
        vectorScore: vectorScore === null ? null : round(Number(vectorScore)),
        keywordScore: round(Number(keywordScore ?? 0)),
        startOffset: row.start_offset,
        endOffset: row.end_offset,
      });
    }
    return hits;
  }
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
