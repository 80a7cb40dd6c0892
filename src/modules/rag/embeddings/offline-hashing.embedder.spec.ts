import { OfflineHashingEmbedder } from './offline-hashing.embedder.js';

const cosine = (a: number[], b: number[]): number => a.reduce((sum, value, i) => sum + value * b[i], 0);

describe('OfflineHashingEmbedder', () => {
  const embedder = new OfflineHashingEmbedder({ dimensions: 768 });

  it('is deterministic, L2-normalised and of the configured dimension', async () => {
    const [a, b] = await embedder.embed(
      ['Vitamin D deficiency and bone density', 'Vitamin D deficiency and bone density'],
      'document',
    );
    expect(a).toHaveLength(768);
    expect(a).toEqual(b);
    expect(cosine(a, a)).toBeCloseTo(1, 6);
    expect(embedder.key).toBe('offline:hash-v1:768');
  });

  it('ranks lexically related text above unrelated text, tolerating morphology', async () => {
    const [query, related, unrelated] = await embedder.embed(
      [
        'insulin regulates glucose',
        'Insulin regulation of blood glucose levels in diabetic patients',
        'The castle wall was built of granite blocks',
      ],
      'query',
    );
    expect(cosine(query, related)).toBeGreaterThan(cosine(query, unrelated) + 0.2);
  });

  it('returns a zero vector for text without words', async () => {
    const [vector] = await embedder.embed(['  ... !!! '], 'document');
    expect(vector.every((value) => value === 0)).toBe(true);
  });
});
