/** BullMQ queue carrying indexing work; the `indexing_jobs` row is the truth users read. */
export const RAG_INDEXING_QUEUE = 'rag-indexing';

/** Text-search configuration for tsvectors and BM25 lexemes (stemming + stop words). */
export const TEXT_SEARCH_CONFIG = 'english';

/** BM25 parameters (Robertson defaults; measured on SciFact, see docs in rag-search.service.ts). */
export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

/**
 * Hybrid fusion: min-max-normalised BM25 and cosine scores, combined with this weight on the vector side.
 * Chosen on SciFact with the offline hashing embedder, whose vectors repeat BM25's lexical signal without
 * its IDF, so they add a little and may not dominate. With a semantic provider, raise RAG_HYBRID_VECTOR_WEIGHT.
 */
export const DEFAULT_HYBRID_VECTOR_WEIGHT = 0.15;

/** Candidates taken from each list before fusion. */
export const FUSION_CANDIDATES = 100;

/**
 * A posting's BM25 term-frequency component with a fixed reference chunk length of 100 tokens,
 * `tf / (tf + k1·(1 − b) + k1·b·dl / 100)`: the order of `rag_postings_impact_idx` (migration
 * 1763795000000, whose expression this must match exactly). It only orders postings; scores use the
 * current average chunk length.
 */
export const POSTING_IMPACT_SQL = '(p.tf::float8 / (p.tf::float8 + 0.3::float8 + 0.009::float8 * p.dl::float8))';

/**
 * Keyword search reads at most this many visible postings per query term, best impact first: a term in
 * fewer chunks is read entirely (exact), a very common one (low IDF) contributes only where it weighs most.
 * At 100k chunks a 12-word query otherwise sums ~235k postings.
 */
export const KEYWORD_POSTINGS_PER_TERM = 1000;
