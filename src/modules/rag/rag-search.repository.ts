import { Injectable } from '@nestjs/common';
import { sql, type RawBuilder } from 'kysely';
import { viewerStatScopes, visibleDocument, visibleOutsideStatScopes } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import { InjectNamedStatements, type NamedStatements } from '../../database/named-statements.js';
import { segmentLiteral, type SearchableSegment } from './rag-segments.repository.js';
import { searchSessionSettingsHold } from './search-session-settings.repository.js';
import {
  BM25_B,
  BM25_K1,
  KEYWORD_POSTINGS_PER_CANDIDATE,
  POSTING_IMPACT_SQL,
  TEXT_SEARCH_CONFIG,
  TSV_TF_SQL,
} from './rag.constants.js';

/** Which documents a search covers: those the actor may see, narrowed to a project and/or to some documents. */
export interface SearchScope {
  actor: Actor;
  projectId: string | null;
  documentIds: string[] | null;
}

/** The vector space of the query: the vector as a binary pgvector parameter (toVectorParam; null without a usable query vector), dimension and embedding key. */
export interface QueryVector {
  param: Buffer | null;
  dims: number;
  model: string;
}

/** A chunk as a result shows it. */
export interface ChunkDetail {
  documentId: string;
  documentTitle: string;
  /** Who wrote the text (an agent run tells its starter's own text from others'). */
  authorId: string;
  chunkIndex: number;
  text: string;
  startOffset: number;
  endOffset: number;
}

/** A ranked-list entry; its best entries come loaded, with the other list's score (null: it has none). */
export interface RankedChunk {
  id: string;
  score: number;
  detail?: ChunkDetail & { other: number | null };
}

/** A chunk loaded after fusion, with the scores asked for (null when not asked or when it has none). */
export interface LoadedChunk extends ChunkDetail {
  vectorScore: number | null;
  keywordScore: number | null;
}

/** Session settings the vector list is run with (see RagSearchRepository.withSettings). */
export interface SearchSettings {
  /** HNSW candidate-list size. */
  efSearch?: number;
  /** pgvector >= 0.8: keep walking the graph until enough rows pass the visibility filter. */
  iterativeScan?: boolean;
}

interface ChunkRow {
  documentId: string;
  title: string;
  authorId: string;
  chunkIndex: number;
  text: string;
  startOffset: number;
  endOffset: number;
}

interface DetailRow extends ChunkRow {
  detailed: boolean | null;
  other: number | null;
}

/** The chunk columns every statement selects for a result (chunk `c`, document `d`), in the order of ChunkRow. */
const CHUNK_COLUMNS = sql`c.document_id, d.title, d.author_id, c.chunk_index, c.text, c.start_offset, c.end_offset`;

/**
 * The id of ranked row `r` when its rank is among the `detailRows` a list loads, else NULL. As the lookup key of
 * the loading join (`c.id = …`) it skips the other rows at the index: written as `c.id = r.id AND r.rank <= n`,
 * the planner filtered the rank after the join, so every candidate was loaded (and scored) and most thrown away.
 */
function detailedId(detailRows: number): RawBuilder<string | null> {
  return sql<string | null>`CASE WHEN r.rank <= ${detailRows} THEN r.id END`;
}

function chunkOf(row: ChunkRow): ChunkDetail {
  return {
    documentId: row.documentId,
    documentTitle: row.title,
    authorId: row.authorId,
    chunkIndex: row.chunkIndex,
    text: row.text,
    startOffset: row.startOffset,
    endOffset: row.endOffset,
  };
}

function detailOf(row: DetailRow): RankedChunk['detail'] {
  return row.detailed ? { ...chunkOf(row), other: row.other === null ? null : Number(row.other) } : undefined;
}

// ---- SQL pieces the ranking and loading statements share ------------------------------------------------

/**
 * Documents `d` in the search's scope: the access rule (visibleDocument) plus the search's own filters. A filter
 * the search does not have is left out of the text rather than written `$n IS NULL OR …`, so that each scope shape
 * is its own statement text and a generic plan of it (NamedStatements) still uses the index the filter wants.
 */
function inScope(scope: SearchScope): RawBuilder<boolean> {
  return sql<boolean>`${visibleDocument(scope.actor, 'd')}${searchFilters(scope)}`;
}

/** The search's own filters on documents `d` (its project, its documents), each left out when the search has none. */
function searchFilters(scope: SearchScope): RawBuilder<unknown> {
  const project = scope.projectId === null ? sql`` : sql` AND d.project_id = ${scope.projectId}::uuid`;
  const documents = scope.documentIds === null ? sql`` : sql` AND d.id = ANY(${scope.documentIds}::uuid[])`;
  return sql`${project}${documents}`;
}

/**
 * The two statistic scopes of the search's project (its public documents, the caller's private ones), as the list
 * of an `IN (…)`: the scopes a search narrowed to a project covers among the caller's.
 */
function projectStatScopes(actor: SearchScope['actor'], projectId: string): RawBuilder<unknown> {
  return sql`rag_stat_scope(true, NULL, ${projectId}::uuid), rag_stat_scope(false, ${actor.userId}::uuid, ${projectId}::uuid)`;
}

/**
 * Up to this many statistic scopes (an unpinned caller searching across all its projects has one per project),
 * a posting's scope id is compared with each in turn (`= ANY`); above, looked up in a hash of them, because a scan
 * grows with the number of scopes and a hash does not, while with few scopes both cost alike (docs/perf/rag.md).
 */
const POSTING_SCOPES_SCANNED = 32;

/**
 * CTE `ps`: the ids (`rag_scopes`) of the statistic scopes whose postings the search reads: the caller's
 * (`st.scopes`, viewerStatScopes), narrowed to the search's project when it has one.
 */
function postingScopesCte(scope: SearchScope): RawBuilder<unknown> {
  const project =
    scope.projectId === null ? sql`` : sql` WHERE r.scope IN (${projectStatScopes(scope.actor, scope.projectId)})`;
  return sql`ps AS MATERIALIZED (
              SELECT coalesce(array_agg(r.id), '{}') AS ids, count(*) <= ${sql.lit(POSTING_SCOPES_SCANNED)} AS few
              FROM st JOIN rag_scopes r ON r.scope = ANY(st.scopes)${project})`;
}

/**
 * Documents the caller sees outside its statistic scopes (visibleOutsideStatScopes) within the search's project
 * and documents: the second arm of postingInScope and chunkInScope, as a subquery for `IN (...) IS TRUE` (a
 * hashed lookup built only if a row fails the first arm).
 */
function outsideScopesDocuments(scope: SearchScope): RawBuilder<unknown> {
  return sql`SELECT d.id FROM documents d WHERE ${visibleOutsideStatScopes(scope.actor, 'd')}${searchFilters(scope)}`;
}

/**
 * Chunk `c` is in the search's scope, read from the statistic scope the chunk carries (`stat_scope`, kept by the
 * scope triggers) instead of a join to its document: one of the caller's scopes (viewerStatScopes, its arrays
 * computed once per statement), narrowed to the project's two, or a document of outsideScopesDocuments; and one
 * of the search's documents. Exactly the chunks of `inScope` (rag-scopes medium spec). The vector ranking filters
 * the rows the HNSW scan yields by it: no join and no per-row probe of `documents`, which was a visible share of it.
 */
function chunkInScope(scope: SearchScope): RawBuilder<boolean> {
  const project =
    scope.projectId === null ? sql`` : sql` AND c.stat_scope IN (${projectStatScopes(scope.actor, scope.projectId)})`;
  const documents = scope.documentIds === null ? sql`` : sql` AND c.document_id = ANY(${scope.documentIds}::uuid[])`;
  return sql<boolean>`((${viewerStatScopes(scope.actor, 'c.statScope')}${project}) OR (c.document_id IN (${outsideScopesDocuments(scope)})) IS TRUE)${documents}`;
}

/**
 * Posting `p` belongs to a chunk in the search's scope: its statistic scope is one of `ps.ids` (an integer compared
 * inside the index-only scan; a hashed lookup when the caller has many scopes, POSTING_SCOPES_SCANNED), or its document is one the caller sees outside its scopes (visibleOutsideStatScopes:
 * rare, and its hashed lookup is only built when a posting fails the first test), and it is in the search's
 * documents. Together: exactly the chunks of `inScope` (rag-scopes medium spec), without hashing every visible
 * document and probing that hash per posting (a large share of the keyword list's time; docs/perf/rag.md).
 */
function postingInScope(scope: SearchScope): RawBuilder<boolean> {
  const onlyDocuments =
    scope.documentIds === null
      ? sql``
      : sql` AND (p.document_id IN (SELECT unnest(${scope.documentIds}::uuid[]))) IS TRUE`;
  return sql<boolean>`(CASE WHEN ps.few THEN p.scope_id = ANY(ps.ids) ELSE (p.scope_id IN (SELECT unnest(many.ids) FROM ps many)) IS TRUE END
                OR (p.document_id IN (${outsideScopesDocuments(scope)})) IS TRUE)${onlyDocuments}`;
}

/**
 * A whole number written into the statement text (a limit, a cut-off): a code constant or a count the service
 * computed, never free input. Inlined rather than bound, so a generic plan sees the real limit (a parameterised
 * LIMIT made the planner's generic vector plan skip the HNSW index; docs/perf/rag.md).
 */
function int(value: number): RawBuilder<number> {
  if (!Number.isSafeInteger(value)) throw new Error(`not an integer: ${value}`);
  return sql.lit(value);
}

/** BM25's k1 and b as literals (code constants): folded into the statement's expressions, in every plan. */
const K1 = sql.lit(BM25_K1);
const B = sql.lit(BM25_B);

/**
 * CTEs `st` (the caller's chunk count `n` and mean chunk length `avgdl`, over the statistic scopes the caller may
 * see: viewerStatScopes) and `q` (the query's terms found in the caller's documents, each with its document
 * frequency `df` there and its IDF). Every BM25 figure comes from the documents the caller may see, so nobody
 * else's private document moves a score (API.md: statistics per viewer).
 */
function viewerTermsCtes(query: string, actor: SearchScope['actor']): RawBuilder<unknown> {
  return sql`st AS MATERIALIZED (
              SELECT greatest(coalesce(sum(s.chunk_count), 0), 1)::float8 AS n,
                     greatest(coalesce(sum(s.total_tokens), 0)::float8 / greatest(coalesce(sum(s.chunk_count), 0), 1), 1) AS avgdl,
                     coalesce(array_agg(s.scope) FILTER (WHERE s.chunk_count > 0), '{}') AS scopes
              FROM rag_scope_stats s WHERE ${viewerStatScopes(actor, 's.scope')}),
            q AS MATERIALIZED (
              SELECT t.lexeme, t.df, ln(1 + (st.n - t.df + 0.5) / (t.df + 0.5)) AS idf, st.avgdl
              FROM st CROSS JOIN LATERAL (
                SELECT l.lexeme, sum(l.df)::float8 AS df
                FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector(${sql.lit(TEXT_SEARCH_CONFIG)}, ${query}::text))) u
                JOIN rag_scope_lexicon l ON l.lexeme = u.lexeme AND l.scope = ANY(st.scopes)
                GROUP BY l.lexeme HAVING sum(l.df) > 0) t)`;
}

/**
 * A tsvector reduced to the lexemes of a text[]: they are marked with weight A and kept by ts_filter, far cheaper
 * than unnesting every lexeme. `tsv` must carry no weights: every stored chunk tsvector is a plain `to_tsvector`
 * (all positions weight D; the chunk writer is their only writer). Resetting them first (`setweight(tsv, 'D')`,
 * a copy of the whole tsvector per row) was a measurable share of the keyword list's time (docs/perf/rag.md).
 */
function onlyLexemes(tsv: RawBuilder<unknown>, lexemes: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`ts_filter(setweight(${tsv}, 'A', ${lexemes}), '{a}')`;
}

/** BM25 of one posting: IDF `idf`, term frequency `tf`, chunk length `dl`, mean length `st.avgdl`. */
function bm25(idf: RawBuilder<unknown>, tf: RawBuilder<unknown>, dl: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`${idf} * ${tf} * (${K1}::float8 + 1) / (${tf} + ${K1}::float8 * (1 - ${B}::float8 + ${B}::float8 * ${dl} / st.avgdl))`;
}

/** Exact BM25 of chunk `c` for the terms of CTE `q` (viewerTermsCtes), read from the tsvector expression `tsv`. */
function chunkBm25(tsv: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`(SELECT coalesce(sum(q.idf * t.tf * (${K1}::float8 + 1) / (t.tf + ${K1}::float8 * (1 - ${B}::float8 + ${B}::float8 * c.token_count / q.avgdl))), 0)::float8
                 FROM (SELECT u.lexeme, ${TSV_TF_SQL} AS tf FROM unnest(${tsv}) u) t JOIN q ON q.lexeme = t.lexeme)`;
}

/** The query vector cast to the configured dimension (a literal dimension, so the partial HNSW index matches). */
function vectorOf(vector: QueryVector): RawBuilder<unknown> {
  return sql`${vector.param}::vector(${sql.lit(vector.dims)})`;
}

/** Chunk `c`'s vector at the configured dimension: the expression of the partial HNSW index. */
function chunkVector(dims: number): RawBuilder<unknown> {
  return sql`c.embedding::vector(${sql.lit(dims)})`;
}

/**
 * Cosine similarity of chunk `c` to the query vector; null without one (a text of its own: the binary parameter
 * cannot be tested as text) or outside the configured vector space.
 */
function cosine(vector: QueryVector): RawBuilder<number | null> {
  if (vector.param === null) return sql<null>`NULL::float8`;
  return sql<
    number | null
  >`CASE WHEN c.embedding IS NOT NULL AND c.embedding_dims = ${sql.lit(vector.dims)} AND c.embedding_model = ${vector.model}
                     THEN (1 - (${chunkVector(vector.dims)} <=> ${vectorOf(vector)}))::float8 END`;
}

/**
 * One query term's best `cutAt` postings in scope, best impact first (the lateral read of keywordCandidates): from
 * `rag_postings_impact_idx`, and from each searchable pending segment's own index of the same shape over
 * `rag_pending_postings` (RagSegmentsRepository), merged in impact order under the same cut. A chunk's postings are in
 * one of the two places at every snapshot, so none is read twice.
 */
function termPostings(
  scope: SearchScope,
  cutAt: RawBuilder<number>,
  segments: readonly SearchableSegment[],
): RawBuilder<unknown> {
  const read = (table: RawBuilder<unknown>, segment: RawBuilder<unknown>) =>
    sql`SELECT p.chunk_id, p.tf::float8 AS tf, p.dl::float8 AS dl, ${POSTING_IMPACT_SQL} AS impact
        FROM ${table} p
        WHERE ${segment}p.lexeme = q.lexeme AND ${postingInScope(scope)}
        ORDER BY ${POSTING_IMPACT_SQL} DESC
        LIMIT ${cutAt}`;
  const pending = segments.map((segment) =>
    read(sql`rag_pending_postings`, sql`p.segment_id = ${segmentLiteral(segment.id)} AND `),
  );
  return withSegmentArms(read(sql`rag_postings`, sql``), pending, sql`r.impact DESC`, cutAt);
}

/**
 * The vector ranking's ids and distances: the main HNSW index (chunks of no pending segment) and each searchable
 * segment's own of this dimension (RagSegmentsRepository), each walked to `limit` and merged under one LIMIT.
 */
function vectorRanking(
  scope: SearchScope,
  vector: QueryVector,
  limit: number,
  segments: readonly SearchableSegment[],
): RawBuilder<unknown> {
  const arm = (segment: RawBuilder<unknown>) => sql`
              SELECT c.id, (${chunkVector(vector.dims)} <=> ${vectorOf(vector)})::float8 AS distance
              FROM document_chunks c
              WHERE c.embedding_dims = ${sql.lit(vector.dims)} AND c.embedding_model = ${vector.model} AND c.embedding IS NOT NULL
                AND ${segment} AND ${chunkInScope(scope)}
              ORDER BY ${chunkVector(vector.dims)} <=> ${vectorOf(vector)}
              LIMIT ${int(limit)}`;
  const pending = segments
    .filter((segment) => segment.dims === vector.dims)
    .map((segment) => arm(sql`c.segment_id = ${segmentLiteral(segment.id)}`));
  return withSegmentArms(arm(sql`c.segment_id IS NULL`), pending, sql`r.distance`, int(limit));
}

/**
 * A ranked read of the main indexes alone, or merged with the same read of each pending segment (`arms`): every arm
 * ordered and limited on its own, so each walks its own index, then cut again in the same order.
 */
function withSegmentArms(
  main: RawBuilder<unknown>,
  arms: readonly RawBuilder<unknown>[],
  order: RawBuilder<unknown>,
  limit: RawBuilder<number>,
): RawBuilder<unknown> {
  if (arms.length === 0) return main;
  const all = [main, ...arms].map((arm) => sql`(${arm})`);
  return sql`SELECT r.* FROM (${sql.join(all, sql` UNION ALL `)}) r ORDER BY ${order} LIMIT ${limit}`;
}

/**
 * The search statements over `document_chunks`, `rag_postings` and the BM25 statistics per scope. Each ranked
 * list is one statement that applies the access rule in SQL (a chunk of a document the caller may not see never
 * leaves the database) and also loads its best `detailRows` chunks with the other list's score, in the same
 * snapshot as its visibility check. See RagSearchService for the ranking itself.
 */
@Injectable()
export class RagSearchRepository {
  constructor(
    @InjectDb() private readonly db: Db,
    @InjectNamedStatements() private readonly named: NamedStatements,
  ) {}

  /**
   * The rows of a search statement (the lists, and `load`): as a named statement of its connection (parsed and
   * analysed once per connection, its plan possibly kept; NamedStatements) when it runs on its own, through Kysely on
   * `executor` when it runs in a transaction that withSettings opened.
   */
  private async listRows<R>(query: RawBuilder<R>, executor: DbExecutor): Promise<R[]> {
    return executor === this.db ? this.named.rows(query) : (await query.execute(executor)).rows;
  }

  /** The HNSW settings the pooled sessions have (applySearchSessionSettings); null until read or when unreliable. */
  private session: { efSearch: number | null; iterativeScan: boolean } | null = null;

  /** Reads which search settings the pooled sessions start with (once, at start-up: every connection gets the same). */
  async readSessionSettings(): Promise<void> {
    const { rows } = await sql<{ ef: string | null; iterative: string | null }>`
      SELECT current_setting('hnsw.ef_search', true) AS ef, current_setting('hnsw.iterative_scan', true) AS iterative`.execute(
      this.db,
    );
    const ef = Number(rows[0]?.ef);
    this.session = searchSessionSettingsHold()
      ? { efSearch: Number.isInteger(ef) && ef > 0 ? ef : null, iterativeScan: rows[0]?.iterative === 'relaxed_order' }
      : null;
  }

  /**
   * Runs `statement` with settings that only search wants (HNSW settings). Those the pooled
   * sessions already have (applySearchSessionSettings) cost nothing: with none left, the statement runs alone,
   * one round trip. The others are set for one transaction on a connection of the shared pool: `BEGIN` and the
   * `SET LOCAL`s go in one round trip (a simple-protocol batch), then the statement, then `COMMIT`. They end
   * with the transaction, so no other statement on that pooled connection ever runs with them.
   */
  async withSettings<T>(settings: SearchSettings, statement: (executor: DbExecutor) => Promise<T>): Promise<T> {
    const session = searchSessionSettingsHold() ? this.session : null;
    const assignments = [
      ...(settings.efSearch !== undefined && settings.efSearch !== session?.efSearch
        ? [`SET LOCAL hnsw.ef_search = ${Math.trunc(settings.efSearch)}`]
        : []),
      ...(settings.iterativeScan !== undefined && settings.iterativeScan !== session?.iterativeScan
        ? [`SET LOCAL hnsw.iterative_scan = ${settings.iterativeScan ? 'relaxed_order' : 'off'}`]
        : []),
    ];
    if (assignments.length === 0) return statement(this.db);
    return this.db.connection().execute(async (connection) => {
      // Constants of this method only (the ef_search an integer): no value from input enters this text.
      await sql.raw(['BEGIN', ...assignments].join('; ')).execute(connection);
      try {
        const result = await statement(connection);
        await sql`COMMIT`.execute(connection);
        return result;
      } catch (error) {
        await sql`ROLLBACK`.execute(connection).catch(() => undefined);
        throw error;
      }
    });
  }

  /** Whether this pgvector knows `hnsw.iterative_scan` (>= 0.8). */
  async supportsIterativeScan(): Promise<boolean> {
    try {
      await this.withSettings({ iterativeScan: true }, async () => undefined);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * BM25 top-`limit` over the chunks in scope, in two steps in one statement:
   * 1. For each query term, its best `KEYWORD_POSTINGS_PER_CANDIDATE × limit` postings in scope in impact order (an
   *    index-only scan of `rag_postings_impact_idx` that stops there; scope is the statistic scope each posting
   *    carries, see postingInScope). A term in fewer of the caller's chunks than that is read entirely, and exactly.
   * 2. When a term was cut off, the best `limit` chunks by that sum get their exact BM25 over all query terms,
   *    read from the chunk's own tsvector (the postings are derived from it: same tf and length), so the scores
   *    and their order are exact BM25. One chunk row per winner instead of a posting lookup per (term, winner):
   *    at 100k chunks the postings' primary key is far larger than memory, and those scattered lookups were
   *    most of the pages a cold query read.
   * When no term is cut off this is BM25 over all postings; otherwise a chunk can only be missed if what
   * lifts it is very common terms (low IDF) in which it is not among the best postings.
   * One statement, no session settings: the planner picks the ordered scan because migration 1764330000000
   * tells it a term has many postings (with the average estimate it could bitmap-scan them all and sort, and
   * this ran under `SET LOCAL enable_bitmapscan = off` in a transaction of its own).
   */
  async keywordCandidates(
    scope: SearchScope,
    query: string,
    limit: number,
    vector: QueryVector,
    detailRows: number,
    segments: readonly SearchableSegment[] = [],
  ): Promise<RankedChunk[]> {
    const cutAt = int(KEYWORD_POSTINGS_PER_CANDIDATE * limit);
    const rows = await this.listRows(
      sql<{ id: string; score: number } & DetailRow>`
      WITH ${viewerTermsCtes(query, scope.actor)},
            ${postingScopesCte(scope)},
            -- Each read posting's BM25 contribution, the scope checked inside the ordered index-only scan ("IN (...)
            -- IS TRUE" keeps a lookup a filter there: a semi-join would lose the order and read every posting of the term).
            post AS (
              SELECT t.chunk_id, ${bm25(sql`q.idf`, sql`t.tf`, sql`t.dl`)} AS s
              FROM q CROSS JOIN st CROSS JOIN ps CROSS JOIN LATERAL (${termPostings(scope, cutAt, segments)}) t),
            best AS MATERIALIZED (
              SELECT chunk_id, sum(s) AS approx
              FROM post
              GROUP BY chunk_id
              ORDER BY approx DESC, chunk_id
              LIMIT ${int(limit)}),
            -- cut: some term is in more of the caller's chunks than are read, so the sums may be incomplete.
            terms AS MATERIALIZED (SELECT array_agg(lexeme) AS lexemes, coalesce(bool_or(q.df > ${cutAt}), false) AS cut FROM q),
       -- With a term cut, each winner's exact BM25 over every query term, from its tsvector reduced to those terms
       -- (the postings are derived from it: same tf and length, so the same figure as summing all its postings);
       -- else the sum of the postings read, which are then all of them. One sum per chunk in the aggregate above
       -- (it also summed the uncut terms apart, to add the cut ones from the tsvector: ~0.15 ms more per search).
       scored AS MATERIALIZED (
         SELECT best.chunk_id AS id,
                (CASE WHEN terms.cut
                      THEN (SELECT ${chunkBm25(onlyLexemes(sql`c.tsv`, sql`terms.lexemes`))} FROM document_chunks c WHERE c.id = best.chunk_id)
                      ELSE best.approx END)::float8 AS score
         FROM best CROSS JOIN terms)
       -- The best detailRows also come loaded, with their cosine when there is a query vector, and the access rule
       -- checked on their documents (the scope ids above are derived from it; a row it refuses is left unloaded,
       -- and the service's load, which checks it too, drops it).
       SELECT r.id, r.score, x.*
       FROM (SELECT scored.*, row_number() OVER (ORDER BY score DESC, id) AS rank FROM scored) r
       LEFT JOIN LATERAL (
         SELECT true AS detailed, ${CHUNK_COLUMNS}, ${cosine(vector)} AS other
         FROM document_chunks c JOIN documents d ON d.id = c.document_id
         WHERE c.id = ${detailedId(detailRows)} AND ${inScope(scope)}) x ON true
       ORDER BY r.score DESC, r.id`,
      this.db,
    );
    return rows.map((row) => ({ id: row.id, score: Number(row.score), detail: detailOf(row) }));
  }

  /**
   * Cosine top-`limit` over the chunks in scope of the configured vector space. The ORDER BY expression matches
   * the partial HNSW index `(embedding::vector(dims)) WHERE embedding_dims = dims`; scope is a per-row filter
   * on the chunk's statistic scope (chunkInScope) so the planner walks the graph (iterative scan) instead of
   * driving an exact scan from every visible document. The best `detailRows` also come loaded, with their BM25 score from their tsvector reduced to the
   * query's terms (see keywordCandidates). With `detailRows` 0 the statement is the ranking alone, ids and
   * distances, without the caller's BM25 statistics (`st`, `q`), which only the loaded rows need: hybrid search
   * asks for that, as the keyword list loads its own best rows with their cosine and the fused top-K comes from
   * those (RagSearchService). Wants `{ efSearch, iterativeScan }` (withSettings).
   */
  async vectorCandidates(
    executor: DbExecutor,
    scope: SearchScope,
    query: string,
    vector: QueryVector & { param: Buffer },
    limit: number,
    detailRows: number,
    segments: readonly SearchableSegment[] = [],
  ): Promise<RankedChunk[]> {
    const ranking = vectorRanking(scope, vector, limit, segments);
    if (detailRows === 0) {
      const rows = await this.listRows(
        sql<{ id: string; distance: number }>`SELECT v.* FROM (${ranking}) v ORDER BY v.distance, v.id`,
        executor,
      );
      return rows.map((row) => ({ id: row.id, score: 1 - Number(row.distance) }));
    }
    const rows = await this.listRows(
      sql<{ id: string; distance: number } & DetailRow>`
      WITH v AS MATERIALIZED (${ranking}),
            ${viewerTermsCtes(query, scope.actor)},
            terms AS MATERIALIZED (SELECT array_agg(lexeme) AS lexemes FROM q)
       SELECT r.id, r.distance, x.*
       FROM (SELECT v.*, row_number() OVER (ORDER BY distance, id) AS rank FROM v) r
       LEFT JOIN LATERAL (
         SELECT true AS detailed, ${CHUNK_COLUMNS}, ${chunkBm25(onlyLexemes(sql`c.tsv`, sql`terms.lexemes`))} AS other
         FROM document_chunks c JOIN documents d ON d.id = c.document_id CROSS JOIN terms
         WHERE c.id = ${detailedId(detailRows)} AND ${inScope(scope)}) x ON true
       ORDER BY r.distance, r.id`,
      executor,
    );
    return rows.map((row) => ({ id: row.id, score: 1 - Number(row.distance), detail: detailOf(row) }));
  }

  /**
   * Loads chunks their lists did not, with the scores asked for, and the scope checked again: ranking and
   * loading are separate statements (separate snapshots under READ COMMITTED), and a document made private in
   * between must not come back. A hidden or deleted chunk is absent from the map.
   */
  async load(
    scope: SearchScope,
    ids: string[],
    needVector: string[],
    needKeyword: string[],
    query: string,
    vector: QueryVector,
  ): Promise<Map<string, LoadedChunk>> {
    const rows = await this.listRows(
      sql<{ id: string; vectorScore: number | null; keywordScore: number | null } & ChunkRow>`
      WITH ${viewerTermsCtes(query, scope.actor)}
       SELECT c.id, ${CHUNK_COLUMNS},
              CASE WHEN c.id = ANY(${needVector}::uuid[]) THEN ${cosine(vector)} END AS vector_score,
              CASE WHEN c.id = ANY(${needKeyword}::uuid[]) THEN ${chunkBm25(sql`c.tsv`)} END AS keyword_score
       FROM document_chunks c JOIN documents d ON d.id = c.document_id
       WHERE c.id = ANY(${ids}::uuid[]) AND ${inScope(scope)}`,
      this.db,
    );
    return new Map(
      rows.map((row) => [
        row.id,
        {
          ...chunkOf(row),
          vectorScore: row.vectorScore === null ? null : Number(row.vectorScore),
          keywordScore: row.keywordScore === null ? null : Number(row.keywordScore),
        },
      ]),
    );
  }
}
