import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { visibleDocumentSql } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ProjectsService } from '../projects/projects.service.js';
import { EMBEDDING_PROVIDER, toVectorLiteral, type EmbeddingProvider } from './embeddings/embedding-provider.js';
import { fuseScores, type ScoredId } from './fusion.js';
import {
  BM25_B,
  BM25_K1,
  DETAIL_MARGIN,
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

/** A chunk as a result shows it, loaded by the statement that ranked (and checked the visibility of) it. */
interface ChunkDetail {
  documentId: string;
  documentTitle: string;
  chunkIndex: number;
  text: string;
  startOffset: number;
  endOffset: number;
  /** The other list's score of this chunk (keyword list: cosine or null outside the vector space; vector list: BM25). */
  other: number | null;
}

/** A chunk loaded after fusion, with the scores that were asked for (null otherwise or when it has none). */
interface LoadedChunk extends Omit<ChunkDetail, 'other'> {
  vectorScore: number | null;
  keywordScore: number | null;
}

/** A ranked-list entry; its best entries come with their detail, so most searches need no loading statement. */
interface Candidate extends ScoredId {
  detail?: ChunkDetail;
}

/** A chunk's columns as the statements select them (chunk `c`, document `d`). */
interface ChunkRow {
  document_id: string;
  title: string;
  chunk_index: number;
  text: string;
  start_offset: number;
  end_offset: number;
}

/** The columns a ranked list adds for a detailed row (`x` joined laterally on the chunk `c` and document `d`). */
interface DetailRow extends ChunkRow {
  detailed: boolean | null;
  other: number | null;
}

/** The chunk columns every statement selects for a result, in the order of {@link ChunkRow}. */
const CHUNK_COLUMNS = 'c.document_id, d.title, c.chunk_index, c.text, c.start_offset, c.end_offset';

function chunkOf(row: ChunkRow): Omit<ChunkDetail, 'other'> {
  return {
    documentId: row.document_id,
    documentTitle: row.title,
    chunkIndex: row.chunk_index,
    text: row.text,
    startOffset: row.start_offset,
    endOffset: row.end_offset,
  };
}

function detailOf(row: DetailRow): ChunkDetail | undefined {
  return row.detailed ? { ...chunkOf(row), other: row.other === null ? null : Number(row.other) } : undefined;
}

// ---- SQL pieces the ranking and loading statements share ------------------------------------------------

/**
 * The statistic scopes the caller may see (see migration 1764015000000): its own private documents (of every
 * project, or of its pinned ones), public documents of projects it is a member of (inside its pins), public
 * documents without a project (unpinned callers only). The same rule as visibleDocumentSql, cut along scopes;
 * $1 = user id, $3 = pinned project ids or NULL (the visibility parameters). A public document of a project its
 * author has left stays visible to the author but outside these scopes: its words only ever count for members.
 */
const VIEWER_SCOPES_WHERE = `(
        s.scope = ANY(ARRAY(SELECT 'p:' || m.project_id::text FROM project_members m
                            WHERE m.user_id = $1::uuid AND ($3::uuid[] IS NULL OR m.project_id = ANY($3::uuid[])))
                      || ARRAY(SELECT 'u:' || $1::text || ':' || p::text FROM unnest($3::uuid[]) p)
                      || CASE WHEN $3::uuid[] IS NULL THEN ARRAY['p:'] ELSE ARRAY[]::text[] END)
        OR ($3::uuid[] IS NULL AND s.scope >= 'u:' || $1::text || ':' AND s.scope < 'u:' || $1::text || ';'))`;

/**
 * CTEs `st` (the caller's chunk count `n` and mean chunk length `avgdl`) and `q` (the query's terms found in the
 * caller's documents, each with its document frequency `df` there and its IDF). Every BM25 figure comes from the
 * documents the caller may see, so nobody else's private document moves a score (API.md: statistics per viewer).
 */
function viewerTermsCtes(textParam: string): string {
  return `st AS MATERIALIZED (
              SELECT greatest(coalesce(sum(s.chunk_count), 0), 1)::float8 AS n,
                     greatest(coalesce(sum(s.total_tokens), 0)::float8 / greatest(coalesce(sum(s.chunk_count), 0), 1), 1) AS avgdl,
                     coalesce(array_agg(s.scope) FILTER (WHERE s.chunk_count > 0), '{}') AS scopes
              FROM rag_scope_stats s WHERE ${VIEWER_SCOPES_WHERE}),
            q AS MATERIALIZED (
              SELECT t.lexeme, t.df, ln(1 + (st.n - t.df + 0.5) / (t.df + 0.5)) AS idf, st.avgdl
              FROM st CROSS JOIN LATERAL (
                SELECT l.lexeme, sum(l.df)::float8 AS df
                FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('${TEXT_SEARCH_CONFIG}', ${textParam}::text))) u
                JOIN rag_scope_lexicon l ON l.lexeme = u.lexeme AND l.scope = ANY(st.scopes)
                GROUP BY l.lexeme HAVING sum(l.df) > 0) t)`;
}

/**
 * A tsvector reduced to the lexemes of a text[]: they are marked with weight A (all of a to_tsvector are D)
 * and kept by ts_filter, far cheaper than unnesting every lexeme.
 */
function onlyLexemesSql(tsv: string, lexemes: string): string {
  return `ts_filter(setweight(setweight(${tsv}, 'D'), 'A', ${lexemes}), '{a}')`;
}

/** Exact BM25 of chunk `c` for the terms of CTE `q` (viewerTermsCtes), read from the tsvector expression `tsv`. */
function chunkBm25Sql(tsv: string, k1Param: string, bParam: string): string {
  return `(SELECT coalesce(sum(q.idf * t.tf * (${k1Param}::float8 + 1) / (t.tf + ${k1Param}::float8 * (1 - ${bParam}::float8 + ${bParam}::float8 * c.token_count / q.avgdl))), 0)::float8
                 FROM (SELECT u.lexeme, ${TSV_TF_SQL} AS tf FROM unnest(${tsv}) u) t JOIN q ON q.lexeme = t.lexeme)`;
}

/** Cosine similarity of chunk `c` to the query vector; null without one or outside the configured vector space. */
function cosineSql(dims: number, vectorParam: string, modelParam: string): string {
  return `CASE WHEN ${vectorParam}::text IS NOT NULL AND c.embedding IS NOT NULL AND c.embedding_dims = ${dims} AND c.embedding_model = ${modelParam}
                     THEN (1 - (c.embedding::vector(${dims}) <=> ${vectorParam}::vector(${dims})))::float8 END`;
}

export interface SearchResult {
  results: SearchHit[];
  tookMs: number;
}

/**
 * Search over document chunks, with the access rule (visibleDocumentSql) applied in SQL so a chunk of a
 * document the caller may not see never leaves the database, and BM25 statistics counted over the caller's
 * visible documents only (viewerTermsCtes), so no score depends on a document the caller cannot see.
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
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.vectorWeight = config.ragSearch.hybridVectorWeight;
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
    if (options.url && !/pglite|emscripten/i.test(version) && this.config.ragSearch.dedicatedPool) {
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
    // of the two instead of their sum. Both apply the visibility rule in SQL (and a later load checks it again).
    // On the search pool each list is one statement (the session has the settings); otherwise, or when
    // more candidates than FUSION_CANDIDATES need a larger ef_search, each runs in a short transaction for its
    // SET LOCALs.
    const pooled = this.onSearchPool();
    // Each list also loads its best `detailRows` chunks with the other list's score, in the same statement
    // (same snapshot as its visibility check): the fused top-K usually comes from those (all 170 searches of a
    // 50-query bench run at 100k chunks), and only hits that did not, or lack a score, are loaded by one more statement.
    const detailRows = Math.min(candidates, input.topK + DETAIL_MARGIN);
    const [keyword, vector] = await Promise.all([
      input.mode === 'vector'
        ? Promise.resolve([])
        : pooled
          ? this.keywordCandidates(pooled, input.query, visibility, candidates, vectorLiteral, dims, detailRows)
          : this.dataSource.transaction(async (manager) => {
              // Ordered index scans of the impact index that stop after a term's best postings; with a generic
              // estimate of a lexeme's postings the planner would bitmap-scan them all and sort.
              await manager.query(`SELECT set_config('enable_bitmapscan', 'off', true)`);
              return this.keywordCandidates((sql, params) => manager.query(sql, params), input.query, visibility, candidates, vectorLiteral, dims, detailRows);
            }),
      !vectorLiteral
        ? Promise.resolve([])
        : pooled && candidates === FUSION_CANDIDATES
          ? this.vectorCandidates(pooled, input.query, vectorLiteral, dims, visibility, candidates, detailRows)
          : this.dataSource.transaction(async (manager) => {
              // set_config(..., true) is SET LOCAL; both settings in one round trip.
              await manager.query(
                this.iterativeScan
                  ? `SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`
                  : `SELECT set_config('hnsw.ef_search', $1, true)`,
                [String(RagSearchService.efSearch(candidates))],
              );
              return this.vectorCandidates((sql, params) => manager.query(sql, params), input.query, vectorLiteral, dims, visibility, candidates, detailRows);
            }),
    ]);
    const weight = input.mode === 'keyword' ? 0 : input.mode === 'vector' ? 1 : this.vectorWeight;
    const fused = fuseScores(keyword, vector, weight)
      .filter((hit) => (input.mode === 'keyword' ? hit.keywordScore !== null : input.mode === 'vector' ? hit.vectorScore !== null : true))
      .slice(0, input.topK);
    const results = await this.assemble(
      fused,
      keyword,
      vector,
      input.mode,
      (ids, needVector, needKeyword) =>
        this.hydrate(pooled ?? ((sql, params) => this.dataSource.query(sql, params)), visibility, ids, needVector, needKeyword, input.query, vectorLiteral, dims),
    );
    return { results, tookMs: Math.round((performance.now() - started) * 100) / 100 };
  }

  private visibilityParams(actor: Actor, input: SearchInput): unknown[] {
    return [actor.userId, input.projectId, actor.projectIds === null ? null : [...actor.projectIds], input.documentIds?.length ? input.documentIds : null];
  }

  /** The access rule on documents `d` plus the search's own filters; parameters $1..$4 are those of visibilityParams. */
  private static readonly VISIBLE = `
      ${visibleDocumentSql('d', { user: '$1', pins: '$3' })}
      AND ($2::uuid IS NULL OR d.project_id = $2::uuid)
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
  private async keywordCandidates(
    run: Query,
    query: string,
    visibility: unknown[],
    limit: number,
    vector: string | null,
    dims: number,
    detailRows: number,
  ): Promise<Candidate[]> {
    // BM25 of one posting; the term's IDF comes precomputed with the term.
    const bm25 = (idf: string, tf: string, dl: string) =>
      `${idf} * ${tf} * ($7::float8 + 1) / (${tf} + $7::float8 * (1 - $8::float8 + $8::float8 * ${dl} / st.avgdl))`;
    const rows = (await run(
      `WITH ${viewerTermsCtes('$5')},
            -- cut: the term is in more of the caller's chunks than are read, so its list may be incomplete.
            vis AS MATERIALIZED (${RagSearchService.VISIBLE_DOCUMENTS}),
            -- "IN (...) IS TRUE" keeps the check a hashed filter on the ordered index scan (a semi-join would
            -- lose the order and read every posting of the term).
            -- Each read posting's BM25 contribution, computed once.
            post AS (
              SELECT t.chunk_id, q.df > $9 AS cut, ${bm25('q.idf', 't.tf', 't.dl')} AS s
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
            cut AS MATERIALIZED (SELECT array_agg(lexeme) AS lexemes FROM q WHERE q.df > $9),
       -- The cut terms' exact tf in a winner, from its tsvector reduced to those terms.
       scored AS MATERIALIZED (
         SELECT best.chunk_id AS id,
                (best.uncut + coalesce((
                   SELECT sum(${bm25('q.idf', 't.tf', 'c.token_count')})
                   FROM document_chunks c CROSS JOIN st CROSS JOIN cut
                   CROSS JOIN LATERAL (
                     SELECT u.lexeme, ${TSV_TF_SQL} AS tf
                     FROM unnest(${onlyLexemesSql('c.tsv', 'cut.lexemes')}) u) t
                   JOIN q ON q.lexeme = t.lexeme AND q.df > $9
                   WHERE c.id = best.chunk_id AND cut.lexemes IS NOT NULL), 0))::float8 AS score
         FROM best)
       -- The best $12 also come loaded, with their cosine when there is a query vector ($10).
       SELECT r.id, r.score, x.*
       FROM (SELECT scored.*, row_number() OVER (ORDER BY score DESC, id) AS rank FROM scored) r
       LEFT JOIN LATERAL (
         SELECT true AS detailed, ${CHUNK_COLUMNS}, ${cosineSql(dims, '$10', '$11')} AS other
         FROM document_chunks c JOIN documents d ON d.id = c.document_id
         WHERE c.id = r.id AND r.rank <= $12) x ON true
       ORDER BY r.score DESC, r.id`,
      [...visibility, query, limit, BM25_K1, BM25_B, KEYWORD_POSTINGS_PER_TERM, vector, this.embedder.key, detailRows],
    )) as ({ id: string; score: number } & DetailRow)[];
    return rows.map((row) => ({ id: row.id, score: Number(row.score), detail: detailOf(row) }));
  }

  private async vectorCandidates(
    run: Query,
    query: string,
    vector: string,
    dims: number,
    visibility: unknown[],
    limit: number,
    detailRows: number,
  ): Promise<Candidate[]> {
    // The ORDER BY expression matches the partial HNSW index `(embedding::vector(dims)) WHERE embedding_dims = dims`;
    // visibility is a per-row join filter so the planner walks the graph (iterative scan) instead of
    // driving an exact scan from every visible document. The best $9 also come loaded, with their BM25 score
    // from their tsvector reduced to the query's terms (see keywordCandidates).
    const rows = (await run(
      `WITH v AS MATERIALIZED (
              SELECT c.id, (c.embedding::vector(${dims}) <=> $5::vector(${dims}))::float8 AS distance
              FROM document_chunks c JOIN documents d ON d.id = c.document_id
              WHERE c.embedding_dims = ${dims} AND c.embedding_model = $6 AND c.embedding IS NOT NULL
                AND ${RagSearchService.VISIBLE}
              ORDER BY c.embedding::vector(${dims}) <=> $5::vector(${dims})
              LIMIT $7),
            ${viewerTermsCtes('$8')},
            terms AS MATERIALIZED (SELECT array_agg(lexeme) AS lexemes FROM q)
       SELECT r.id, r.distance, x.*
       FROM (SELECT v.*, row_number() OVER (ORDER BY distance, id) AS rank FROM v) r
       LEFT JOIN LATERAL (
         SELECT true AS detailed, ${CHUNK_COLUMNS}, ${chunkBm25Sql(onlyLexemesSql('c.tsv', 'terms.lexemes'), '$10', '$11')} AS other
         FROM document_chunks c JOIN documents d ON d.id = c.document_id CROSS JOIN terms
         WHERE c.id = r.id AND r.rank <= $9) x ON true
       ORDER BY r.distance, r.id`,
      [...visibility, vector, this.embedder.key, limit, query, detailRows, BM25_K1, BM25_B],
    )) as ({ id: string; distance: number } & DetailRow)[];
    return rows.map((row) => ({ id: row.id, score: 1 - Number(row.distance), detail: detailOf(row) }));
  }

  /**
   * The results in fused order: each from the detail its lists loaded, the rest (a hit neither list loaded, or
   * one without the other list's score) loaded by `load`.
   */
  private async assemble(
    fused: ReturnType<typeof fuseScores>,
    keyword: readonly Candidate[],
    vector: readonly Candidate[],
    mode: SearchMode,
    load: (ids: string[], needVector: string[], needKeyword: string[]) => Promise<Map<string, LoadedChunk>>,
  ): Promise<SearchHit[]> {
    const keywordDetail = new Map(keyword.flatMap((hit) => (hit.detail ? [[hit.id, hit.detail] as const] : [])));
    const vectorDetail = new Map(vector.flatMap((hit) => (hit.detail ? [[hit.id, hit.detail] as const] : [])));
    const known = fused.map((hit) => {
      const k = keywordDetail.get(hit.id);
      const v = vectorDetail.get(hit.id);
      const detail = k ?? v;
      // undefined: not known yet; null: known to have none (no query vector, or a chunk outside the vector space).
      const vectorScore = hit.vectorScore ?? (k ? k.other : undefined);
      const keywordScore = hit.keywordScore ?? (v ? v.other : undefined);
      return { hit, detail, vectorScore, keywordScore };
    });
    const missing = known.filter((entry) => !entry.detail || entry.vectorScore === undefined || entry.keywordScore === undefined);
    const loaded =
      missing.length > 0
        ? await load(
            missing.map((entry) => entry.hit.id),
            missing.filter((entry) => entry.vectorScore === undefined).map((entry) => entry.hit.id),
            missing.filter((entry) => entry.keywordScore === undefined).map((entry) => entry.hit.id),
          )
        : new Map<string, LoadedChunk>();
    const loadedIds = new Set(missing.map((entry) => entry.hit.id));
    const hits: SearchHit[] = [];
    for (const { hit, detail: listed, vectorScore: listedVector, keywordScore: listedKeyword } of known) {
      const fresh = loaded.get(hit.id);
      if (loadedIds.has(hit.id) && !fresh) continue; // deleted or hidden between ranking and loading
      const detail = fresh ?? listed!;
      const vectorScore = listedVector !== undefined ? listedVector : (fresh?.vectorScore ?? null);
      const keywordScore = listedKeyword !== undefined ? listedKeyword : (fresh?.keywordScore ?? 0);
      hits.push({
        documentId: detail.documentId,
        documentTitle: detail.documentTitle,
        chunkId: hit.id,
        chunkIndex: detail.chunkIndex,
        text: detail.text,
        score: round(mode === 'keyword' ? (hit.keywordScore ?? 0) : mode === 'vector' ? (hit.vectorScore ?? 0) : hit.score),
        vectorScore: vectorScore === null ? null : round(Number(vectorScore)),
        keywordScore: round(Number(keywordScore ?? 0)),
        startOffset: detail.startOffset,
        endOffset: detail.endOffset,
      });
    }
    return hits;
  }

  /**
   * Loads chunks their lists did not, with the scores asked for, and the visibility rule checked again:
   * ranking and loading are separate statements (separate snapshots under READ COMMITTED), and a document
   * made private in between must not come back. A hidden or deleted chunk is absent from the map.
   */
  private async hydrate(
    run: Query,
    visibility: unknown[],
    ids: string[],
    needVector: string[],
    needKeyword: string[],
    query: string,
    vector: string | null,
    dims: number,
  ): Promise<Map<string, LoadedChunk>> {
    const rows = (await run(
      `WITH ${viewerTermsCtes('$6')}
       SELECT c.id, ${CHUNK_COLUMNS},
              CASE WHEN c.id = ANY($11::uuid[]) THEN ${cosineSql(dims, '$7', '$8')} END AS vector_score,
              CASE WHEN c.id = ANY($12::uuid[]) THEN ${chunkBm25Sql('c.tsv', '$9', '$10')} END AS keyword_score
       FROM document_chunks c JOIN documents d ON d.id = c.document_id
       WHERE c.id = ANY($5::uuid[]) AND ${RagSearchService.VISIBLE}`,
      [...visibility, ids, query, vector, this.embedder.key, BM25_K1, BM25_B, needVector, needKeyword],
    )) as ({ id: string; vector_score: number | null; keyword_score: number | null } & ChunkRow)[];
    return new Map(
      rows.map((row) => [
        row.id,
        {
          ...chunkOf(row),
          vectorScore: row.vector_score === null ? null : Number(row.vector_score),
          keywordScore: row.keyword_score === null ? null : Number(row.keyword_score),
        },
      ]),
    );
  }
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
