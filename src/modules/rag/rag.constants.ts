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
 * Candidates the keyword list takes before fusion (more when a search asks for more results). 50 rather than 100
 * halves the keyword rescoring at 100k chunks; SciFact hybrid nDCG@10 of a topK 10 search: 0.682 at 50 vs 0.681 at
 * 100 (see README.md).
 */
export const KEYWORD_CANDIDATES = 50;

/**
 * Candidates a vector list takes (more when a search asks for more results); the HNSW ef_search follows it, and 40
 * is pgvector's default, the one the pooled sessions start with (applySearchSessionSettings). 40 rather than 50: the
 * HNSW walk is its ef_search wide, so the vector ranking at 100k chunks went 1.32 → 1.05 ms (a bare query of 0.88),
 * with hybrid's vector side weighing 0.15. SciFact nDCG@10 of topK-10 searches: vector 0.4600 → 0.4571, hybrid with
 * KEYWORD_POSTINGS_PER_CANDIDATE 0.6815 (RAG README, issue 15 session 12).
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
 * rescored exactly. At 100k chunks a 12-word query otherwise sums ~235k postings; reading, projecting and grouping
 * the read postings is most of the keyword list's execution. A fixed 300 per term (session 9; 1,000, then 500
 * before) read twice what ranking 50 candidates needs: at 3 per candidate the keyword list of a topK-10 search at
 * 100k chunks is ~20 % faster, SciFact nDCG@10 of topK-10 searches rises (keyword 0.6766 → 0.6784, hybrid 0.6792 →
 * 0.6807; 0.6815 with VECTOR_CANDIDATES 40) and the topK-100 figures are those of 300 (keyword 0.6853, hybrid 0.6876). A flat 200 or 150 per term
 * fell below them (0.6842 / 0.6850, Recall@100 0.893; RAG README, issue 15 session 12).
 */
export const KEYWORD_POSTINGS_PER_CANDIDATE = 3;
