import { sql } from 'kysely';

/** BullMQ queue carrying indexing work; the `indexing_jobs` row is the truth users read. */
export const RAG_INDEXING_QUEUE = 'rag-indexing';

/** Text-search configuration for tsvectors and BM25 lexemes (stemming + stop words). */
export const TEXT_SEARCH_CONFIG = 'english';

/**
 * A term's frequency in a chunk from one element `u` of `unnest(tsvector)`: its number of positions (1 for a
 * stripped lexeme). The BM25 postings are written with this expression, and search reads it back from a
 * chunk's tsvector where that is cheaper than a posting lookup: both must agree.
 */
export const TSV_TF_SQL = sql<number>`coalesce(array_length(u.positions, 1), 1)`;

/** BM25 parameters (Robertson defaults; measured on SciFact, see docs in rag-search.service.ts). */
export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

/**
 * Candidates the keyword list takes before fusion (more when a search asks for more results): fewer halves the
 * keyword rescoring at no cost in SciFact quality (docs/perf/rag.md).
 */
export const KEYWORD_CANDIDATES = 50;

/**
 * Candidates a vector list takes (more when a search asks for more results); the HNSW ef_search follows it, and 40
 * is pgvector's default, the one the pooled sessions start with (applySearchSessionSettings). The HNSW walk is its
 * ef_search wide, so a narrower list makes the vector ranking faster, and with hybrid's vector side weighing little
 * the fused quality holds (docs/perf/rag.md).
 */
export const VECTOR_CANDIDATES = 40;

/**
 * Each ranked list loads its best `topK + DETAIL_MARGIN` chunks (text, title, the other list's score) in its
 * own statement; a fused hit from further down a list is loaded by one more statement.
 */
export const DETAIL_MARGIN = 5;

/**
 * A posting's BM25 term-frequency component with a fixed reference chunk length of 100 tokens,
 * `tf / (tf + k1·(1 − b) + k1·b·dl / 100)`: the order of `rag_postings_impact_idx` (migration
 * 1763795000000, whose expression this must match exactly). It only orders postings; scores use the
 * current average chunk length.
 */
export const POSTING_IMPACT_SQL = sql<number>`(p.tf::float8 / (p.tf::float8 + 0.3::float8 + 0.009::float8 * p.dl::float8))`;

/**
 * Keyword search reads at most this many visible postings per query term for each candidate it ranks (150 for the
 * 50 candidates of a topK-10 search, 300 for a topK-100 one), best impact first: a term in fewer chunks is read
 * entirely (exact), a very common one (low IDF) contributes only where it weighs most, and the winners are then
 * rescored exactly. On a large corpus a long query otherwise sums every posting of every term, and reading,
 * projecting and grouping the read postings is most of the keyword list's execution. A cut per candidate rather than
 * a fixed one per term reads what ranking the candidates needs and no more, faster with SciFact quality kept, where a
 * smaller fixed cut lost quality (the figures and the cuts tried: docs/perf/rag.md).
 */
export const KEYWORD_POSTINGS_PER_CANDIDATE = 3;
