import { join } from 'node:path';
import { loadBeirCollection, ndcgAt, recallAt, runEval } from '../scripts/eval-rag-lib.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { sharedDir } from './support/shared-dir.js';

/**
 * CI's slice of `npm run eval:rag`: a SciFact subset (the first queries, their judged documents and some
 * distractors) through the real path, with a sanity threshold far below the full-collection figure.
 */
describe('RAG quality harness (e2e, SciFact subset)', () => {
  let app: TestApp;

  beforeAll(async () => {
    // One user loads the whole subset at once, as `npm run eval:rag` does: above the per-user indexing cap.
    app = await startTestApp({ env: { INDEX_MAX_QUEUED_PER_USER: '100000' } });
  }, 120_000);

  afterAll(async () => {
    await app?.close();
  });

  it('computes nDCG and recall correctly', () => {
    const judged = new Map([
      ['a', 1],
      ['b', 1],
    ]);
    expect(ndcgAt(['a', 'b', 'c'], judged, 10)).toBeCloseTo(1, 10);
    expect(ndcgAt(['c', 'a'], judged, 10)).toBeCloseTo(1 / Math.log2(3) / (1 + 1 / Math.log2(3)), 10);
    expect(recallAt(['x', 'a'], judged, 100)).toBe(0.5);
  });

  it('indexes a subset through the real job and ranks judged documents well in every mode', async () => {
    const collection = loadBeirCollection(join(sharedDir(), 'data', 'ir', 'scifact'));
    const report = await runEval(app.app, collection, { limitQueries: 25, limitDocs: 150 });
    expect(report.queries).toBe(25);
    expect(report.chunks).toBeGreaterThanOrEqual(report.documents);
    const byMode = Object.fromEntries(report.modes.map((mode) => [mode.mode, mode]));
    expect(byMode.keyword.ndcg10).toBeGreaterThan(0.6);
    expect(byMode.hybrid.ndcg10).toBeGreaterThan(0.6);
    expect(byMode.vector.ndcg10).toBeGreaterThan(0.3);
    expect(byMode.hybrid.recall100).toBeGreaterThan(0.8);
  }, 600_000);
});
