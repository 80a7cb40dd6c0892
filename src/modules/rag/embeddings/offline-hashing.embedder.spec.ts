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

  it('gives a text the same vector whatever was embedded before it (its feature tables are a cache)', async () => {
    const text = 'Insulin regulates glucose; insulin resistance raises blood glucose.';
    const fresh = new OfflineHashingEmbedder({ dimensions: 64 });
    const warmed = new OfflineHashingEmbedder({ dimensions: 64 });
    await warmed.embed(
      ['insulin and glucose regulate each other', 'Blood glucose rises; resistance to insulin'],
      'document',
    );
    // The vector the embedder computed before its tables existed (stored collections and SciFact depend on it).
    const expected = [
      -0.022158566626451985, 0.006106691589967083, 0, 0.010992044861940749, 0.5932281925572119, -0.015877398133914415,
      0.008374891323383428, -0.2674730916405582, 0, 0.2526425549220668, -0.008549368225953915, -0.014656059815920998,
      0.018145597867330762, 0.014656059815920998, 0.014656059815920998, 0, 0, 0.006281168492537571, 0.04030416449378275,
      0.02093722830845857, -0.015877398133914415, 0.014656059815920998, 0.014656059815920998, -0.014656059815920998,
      0.131904538343289, 0, 0.010992044861940749, 0, -0.4307901962640875, -0.014656059815920998, -0.043968179447762996,
      0, 0.03297613458582225, -0.02076275140588808, -0.009770706543947332, -0.014656059815920998, 0,
      0.12091249348134825, -0.004885353271973666, 0.014656059815920998, 0.3930964614913096, -0.006281168492537571,
      -0.014656059815920998, -0.019366936185324177, -0.006281168492537571, 0.14656059815921, 0.131904538343289,
      0.006281168492537571, 0, 0, -0.014656059815920998, 0.03419747290381566, 0, 0, -0.004710876369403178,
      0.004885353271973666, 0, -0.019541413087894664, 0.017447690257048808, 0.263809076686578, 0.006281168492537571,
      -0.014656059815920998, -0.0013958152205639047, 0.14027942966667242,
    ];
    expect(fresh.embedOne(text)).toEqual(expected);
    expect(warmed.embedOne(text)).toEqual(expected);
  });
});
