/** A candidate from one ranked list. */
export interface ScoredId {
  id: string;
  score: number;
}

export interface FusedHit {
  id: string;
  score: number;
  keywordScore: number | null;
  vectorScore: number | null;
}

/** Min-max normalises a list into [0, 1]; a list whose scores are all equal maps to 1. */
export function minMaxNormalise(list: readonly ScoredId[]): Map<string, number> {
  const result = new Map<string, number>();
  if (list.length === 0) return result;
  let min = Infinity;
  let max = -Infinity;
  for (const { score } of list) {
    min = Math.min(min, score);
    max = Math.max(max, score);
  }
  for (const { id, score } of list) result.set(id, max > min ? (score - min) / (max - min) : 1);
  return result;
}

/**
 * Convex score fusion: `(1 - w) · norm(keyword) + w · norm(vector)`, a missing side counting 0.
 * Measured on SciFact it beats reciprocal-rank fusion when one retriever is much stronger than the
 * other (RRF gives both equal say whatever their quality). Ties break by id for a stable order.
 */
export function fuseScores(
  keyword: readonly ScoredId[],
  vector: readonly ScoredId[],
  vectorWeight: number,
): FusedHit[] {
  const k = minMaxNormalise(keyword);
  const v = minMaxNormalise(vector);
  const rawK = new Map(keyword.map((hit) => [hit.id, hit.score]));
  const rawV = new Map(vector.map((hit) => [hit.id, hit.score]));
  const ids = new Set([...k.keys(), ...v.keys()]);
  return [...ids]
    .map((id) => ({
      id,
      score: (1 - vectorWeight) * (k.get(id) ?? 0) + vectorWeight * (v.get(id) ?? 0),
      keywordScore: rawK.get(id) ?? null,
      vectorScore: rawV.get(id) ?? null,
    }))
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Reciprocal-rank fusion (Cormack et al.), kept for comparison in the evaluation harness. */
export function reciprocalRankFusion(lists: readonly (readonly ScoredId[])[], k = 60): ScoredId[] {
  const scores = new Map<string, number>();
  for (const list of lists)
    list.forEach((hit, rank) => scores.set(hit.id, (scores.get(hit.id) ?? 0) + 1 / (k + rank + 1)));
  return [...scores.entries()]
    .map(([id, score]) => ({ id, score }))
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
}
