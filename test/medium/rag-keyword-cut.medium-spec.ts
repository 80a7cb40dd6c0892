import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { DocumentChunksRepository } from '../../src/modules/rag/document-chunks.repository.js';
import { toVectorBatch } from '../../src/modules/rag/embeddings/embedding-provider.js';
import { RagSearchRepository } from '../../src/modules/rag/rag-search.repository.js';
import { KEYWORD_CANDIDATES, KEYWORD_POSTINGS_PER_CANDIDATE } from '../../src/modules/rag/rag.constants.js';
import { actorOf, useMediumContext, type UserRow } from '../support/medium.js';

/**
 * The keyword list reads only the best KEYWORD_POSTINGS_PER_CANDIDATE × candidates postings of a term and rescores
 * its winners from their tsvectors. With a term in more chunks than that (so it is cut off), every score it returns
 * must still be the exact BM25 of that chunk over all its postings, and where the data leaves no doubt about which
 * chunks win (a rare term read entirely, carried by the best chunks) the top 10 must be exact BM25's top 10.
 * Exact BM25 here is an independent statement that sums every posting of the query's terms.
 */
describe('keyword search with a term cut off (medium)', () => {
  const medium = useMediumContext();
  let user: UserRow;
  const cutAt = KEYWORD_POSTINGS_PER_CANDIDATE * KEYWORD_CANDIDATES;
  /** "alpha" in every other chunk (more of them than are read of a term, yet rare enough to weigh), "beta" in one in seven. */
  const chunkCount = 2 * cutAt + 40;

  beforeAll(async () => {
    user = await medium().make.user();
    const document = await medium().make.document(user);
    // Term frequencies 1–6 and lengths 4–40 tokens in a spread that does not follow impact order alone.
    const texts = Array.from({ length: chunkCount }, (_, i) => {
      const alpha = i % 2 === 0 ? Array<string>(1 + ((i * 7) % 6)).fill('alpha') : [];
      const words = [...alpha, ...(i % 7 === 0 ? ['beta'] : []), ...Array<string>(3 + ((i * 13) % 37)).fill('gamma')];
      return words.join(' ');
    });
    await medium()
      .get(DocumentChunksRepository)
      .insertBatch(
        { documentId: document.id, sha256: 'x', embeddingModel: 'm', embeddingDims: 2 },
        texts.map((text, index) => ({ id: randomUUID(), index, text, start: 0, end: text.length, indexText: text })),
        toVectorBatch(
          texts.map(() => [1, 0]),
          2,
        ),
        medium().db,
      );
  });

  /** Exact BM25 (k1 1.2, b 0.75) of every chunk with a query term, over all postings, with the caller's statistics. */
  const exactBm25 = async (terms: string[]): Promise<Map<string, number>> => {
    const { rows } = await sql<{ chunkId: string; score: number }>`
      WITH st AS (SELECT sum(chunk_count)::float8 AS n, sum(total_tokens)::float8 / sum(chunk_count) AS avgdl
                  FROM rag_scope_stats WHERE scope = rag_stat_scope(false, ${user.id}::uuid, NULL)),
           q AS (SELECT l.lexeme, ln(1 + (st.n - l.df + 0.5) / (l.df + 0.5)) AS idf
                 FROM rag_scope_lexicon l CROSS JOIN st
                 WHERE l.scope = rag_stat_scope(false, ${user.id}::uuid, NULL) AND l.lexeme = ANY(${terms}::text[]))
      SELECT p.chunk_id, sum(q.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.dl / st.avgdl)))::float8 AS score
      FROM rag_postings p JOIN q ON q.lexeme = p.lexeme CROSS JOIN st
      GROUP BY p.chunk_id`.execute(medium().db);
    return new Map(rows.map((row) => [row.chunkId, Number(row.score)]));
  };

  it('cuts the common term off, and still returns exact BM25 scores and exact BM25’s top 10', async () => {
    const [{ df }] = (
      await sql<{ df: number }>`SELECT count(*)::int AS df FROM rag_postings WHERE lexeme = 'alpha'`.execute(
        medium().db,
      )
    ).rows;
    expect(df).toBeGreaterThan(cutAt);

    const exact = await exactBm25(['alpha', 'beta']);
    const listed = await medium()
      .get(RagSearchRepository)
      .keywordCandidates(
        { actor: actorOf(user), projectId: null, documentIds: null },
        'alpha beta',
        KEYWORD_CANDIDATES,
        { param: null, dims: 2, model: 'm' },
        15,
      );
    expect(listed).toHaveLength(KEYWORD_CANDIDATES);
    for (const hit of listed) expect(hit.score).toBeCloseTo(exact.get(hit.id)!, 9);
    // In descending order, and the best ten are exact BM25's best ten.
    expect(listed.map((hit) => hit.score)).toEqual([...listed.map((hit) => hit.score)].sort((a, b) => b - a));
    const exactTop = [...exact.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
    expect(listed.slice(0, 10).map((hit) => hit.id)).toEqual(exactTop.map(([id]) => id));
  });
});
