import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { phaseClock, phaseGroup, phaseSince } from '../../common/timing/phase-timer.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ProjectsService } from '../projects/projects.service.js';
import { EMBEDDING_PROVIDER, toVectorParam, type EmbeddingProvider } from './embeddings/embedding-provider.js';
import { fuseScores } from './fusion.js';
import {
  RagSearchRepository,
  type LoadedChunk,
  type QueryVector,
  type RankedChunk,
  type SearchScope,
} from './rag-search.repository.js';
import { DETAIL_MARGIN, KEYWORD_CANDIDATES, VECTOR_CANDIDATES } from './rag.constants.js';
import { RagSegmentsService } from './rag-segments.service.js';

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
  authorId: string;
  chunkId: string;
  chunkIndex: number;
  text: string;
  score: number;
  vectorScore: number | null;
  keywordScore: number | null;
  startOffset: number;
  endOffset: number;
}

export interface SearchResult {
  results: SearchHit[];
  tookMs: number;
}

/**
 * Search over document chunks, with the access rule (visibleDocument) applied in SQL so a chunk of a
 * document the caller may not see never leaves the database, and BM25 statistics counted over the caller's
 * visible documents only (viewerStatScopes), so no score depends on a document the caller cannot see.
 * The statements are RagSearchRepository's; this service embeds the query, runs the two ranked lists, fuses
 * and assembles.
 *
 * - keyword: BM25 (k1 1.2, b 0.75) over the `rag_postings` inverted index with English stemming, reading at
 *   most KEYWORD_POSTINGS_PER_CANDIDATE postings per term and candidate in impact order (see keywordCandidates); on
 *   SciFact it scores above the published BM25 baseline (docs/perf/rag.md).
 * - vector: cosine over the HNSW index of the configured vector space only.
 * - hybrid: convex fusion of min-max-normalised scores (see fusion.ts), which beat reciprocal-rank fusion on SciFact
 *   with the offline embedder (docs/perf/rag.md).
 */
@Injectable()
export class RagSearchService implements OnModuleInit {
  private readonly logger = new Logger(RagSearchService.name);
  private iterativeScan = false;
  readonly vectorWeight: number;

  constructor(
    private readonly searches: RagSearchRepository,
    private readonly segments: RagSegmentsService,
    @Inject(EMBEDDING_PROVIDER) private readonly embedder: EmbeddingProvider,
    private readonly projects: ProjectsService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.vectorWeight = config.ragSearch.hybridVectorWeight;
  }

  async onModuleInit(): Promise<void> {
    await this.searches.readSessionSettings();
    // pgvector >= 0.8 can keep scanning the HNSW graph until enough rows pass the visibility filter.
    this.iterativeScan = await this.searches.supportsIterativeScan();
    if (!this.iterativeScan)
      this.logger.warn({ msg: 'pgvector without hnsw.iterative_scan; filtered vector search may return fewer hits' });
  }

  /** HNSW candidate-list size for `candidates` results. */
  private static efSearch(candidates: number): number {
    return Math.min(1000, Math.max(40, candidates));
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
    const keywordCandidates = Math.max(KEYWORD_CANDIDATES, input.topK);
    const vectorCandidates = Math.max(VECTOR_CANDIDATES, input.topK);
    let clock = phaseClock();
    const queryVector = input.mode === 'keyword' ? null : (await this.embedder.embed([input.query], 'query'))[0];
    phaseSince('embed', clock);
    clock = phaseClock();
    const vector: QueryVector = {
      param: queryVector && queryVector.some((value) => value !== 0) ? toVectorParam(queryVector) : null,
      dims: this.embedder.dimensions,
      model: this.embedder.key,
    };
    phaseSince('vectorParam', clock);
    const scope: SearchScope = {
      actor,
      projectId: input.projectId,
      documentIds: input.documentIds?.length ? input.documentIds : null,
    };
    // The keyword list also loads its best `detailRows` chunks with their cosine, in the same statement (same
    // snapshot as its visibility check), and so does the vector list in vector mode, with their BM25. In hybrid
    // mode the vector list is the ranking alone: the keyword score weighs 0.85, so the fused top-K comes almost
    // always from the keyword list's best rows (docs/perf/rag.md), and the vector list skips the caller's BM25
    // statistics and its own loading. A fused
    // hit that no list loaded, or that lacks a score, is loaded by one more statement (assemble).
    const detailRows = input.topK + DETAIL_MARGIN;
    // The two ranked lists run concurrently, each on its own pooled connection: hybrid costs about the slower
    // of the two instead of their sum. Both apply the visibility rule in SQL (and a later load checks it again).
    // Large documents still in a pending segment are read beside the main indexes (RagSegmentsService).
    const segments = await this.segments.searchable();
    const [keywordList, vectorList] = await Promise.all([
      input.mode === 'vector'
        ? Promise.resolve([])
        : phaseGroup('keyword', () =>
            timedList(() =>
              this.searches.keywordCandidates(scope, input.query, keywordCandidates, vector, detailRows, segments),
            ),
          ),
      vector.param === null
        ? Promise.resolve([])
        : phaseGroup('vector', () =>
            timedList(() =>
              this.searches.withSettings(
                { efSearch: RagSearchService.efSearch(vectorCandidates), iterativeScan: this.iterativeScan },
                (executor) =>
                  this.searches.vectorCandidates(
                    executor,
                    scope,
                    input.query,
                    { ...vector, param: vector.param! },
                    vectorCandidates,
                    input.mode === 'vector' ? detailRows : 0,
                    segments,
                  ),
              ),
            ),
          ),
    ]);
    clock = phaseClock();
    const weight = input.mode === 'keyword' ? 0 : input.mode === 'vector' ? 1 : this.vectorWeight;
    const fused = fuseScores(keywordList, vectorList, weight)
      .filter((hit) =>
        input.mode === 'keyword'
          ? hit.keywordScore !== null
          : input.mode === 'vector'
            ? hit.vectorScore !== null
            : true,
      )
      .slice(0, input.topK);
    phaseSince('fuse', clock);
    clock = phaseClock();
    const results = await this.assemble(
      fused,
      keywordList,
      vectorList,
      input.mode,
      async (ids, needVector, needKeyword) => {
        const loadClock = phaseClock();
        const loaded = await this.searches.load(scope, ids, needVector, needKeyword, input.query, vector);
        phaseSince('load', loadClock);
        return loaded;
      },
    );
    phaseSince('assemble', clock);
    return { results, tookMs: Math.round((performance.now() - started) * 100) / 100 };
  }

  /**
   * The results in fused order: each from the detail its lists loaded, the rest (a hit neither list loaded, or
   * one without the other list's score) loaded by `load`.
   */
  private async assemble(
    fused: ReturnType<typeof fuseScores>,
    keyword: readonly RankedChunk[],
    vector: readonly RankedChunk[],
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
    const missing = known.filter(
      (entry) => !entry.detail || entry.vectorScore === undefined || entry.keywordScore === undefined,
    );
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
        authorId: detail.authorId,
        chunkId: hit.id,
        chunkIndex: detail.chunkIndex,
        text: detail.text,
        score: round(
          mode === 'keyword' ? (hit.keywordScore ?? 0) : mode === 'vector' ? (hit.vectorScore ?? 0) : hit.score,
        ),
        vectorScore: vectorScore === null ? null : round(Number(vectorScore)),
        keywordScore: round(Number(keywordScore ?? 0)),
        startOffset: detail.startOffset,
        endOffset: detail.endOffset,
      });
    }
    return hits;
  }
}

/** A ranked list, timed from the call to its answer (phase `list` of its group) when a phase trace is on. */
async function timedList<T>(list: () => Promise<T>): Promise<T> {
  const clock = phaseClock();
  const result = await list();
  phaseSince('list', clock);
  return result;
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
