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
 * Candidates taken from each list before fusion (more when a search asks for more results); the HNSW
 * ef_search follows it. 50 rather than 100 halves the vector half and the keyword rescoring at 100k chunks;
 * SciFact hybrid nDCG@10 of a topK 10 search: 0.682 at 50 vs 0.681 at 100 (see README.md).
 */
export const FUSION_CANDIDATES = 50;

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
 * Keyword search reads at most this many visible postings per query term, best impact first: a term in
 * fewer chunks is read entirely (exact), a very common one (low IDF) contributes only where it weighs most.
 * At 100k chunks a 12-word query otherwise sums ~235k postings. Reading, projecting and grouping the read
 * postings is most of the keyword list's execution (~1 µs per posting at 100k chunks), so 300 (was 1,000, then
 * 500): SciFact nDCG@10 keyword 0.6853 / hybrid 0.6864 (0.6841 / 0.6852 at 500; topK-10 searches 0.6766 / 0.6796
 * against 0.6782 / 0.6816), keyword statement at 100k chunks −1 ms (RAG README, issue 15 session 9).
 */
export const KEYWORD_POSTINGS_PER_TERM = 300;
