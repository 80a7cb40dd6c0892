import { fuseScores, minMaxNormalise, reciprocalRankFusion } from './fusion.js';

describe('fusion', () => {
  it('min-max normalises, mapping a flat list to 1', () => {
    expect([
      ...minMaxNormalise([
        { id: 'a', score: 10 },
        { id: 'b', score: 5 },
        { id: 'c', score: 0 },
      ]).values(),
    ]).toEqual([1, 0.5, 0]);
    expect([
      ...minMaxNormalise([
        { id: 'a', score: 3 },
        { id: 'b', score: 3 },
      ]).values(),
    ]).toEqual([1, 1]);
    expect(minMaxNormalise([]).size).toBe(0);
  });

  it('combines both lists with the vector weight and keeps raw scores', () => {
    const keyword = [
      { id: 'a', score: 12 },
      { id: 'b', score: 6 },
      { id: 'c', score: 0 },
    ];
    const vector = [
      { id: 'c', score: 0.9 },
      { id: 'b', score: 0.5 },
      { id: 'd', score: 0.1 },
    ];
    const fused = fuseScores(keyword, vector, 0.25);
    expect(fused.map((hit) => hit.id)).toEqual(['a', 'b', 'c', 'd']);
    expect(fused[0]).toEqual({ id: 'a', score: 0.75, keywordScore: 12, vectorScore: null });
    expect(fused[1].score).toBeCloseTo(0.75 * 0.5 + 0.25 * 0.5, 10);
    expect(fused[2]).toMatchObject({ id: 'c', keywordScore: 0, vectorScore: 0.9 });
    expect(fused[2].score).toBeCloseTo(0.25, 10);
    expect(fused[3].score).toBe(0);
  });

  it('weight 0 is keyword order, weight 1 is vector order', () => {
    const keyword = [
      { id: 'a', score: 3 },
      { id: 'b', score: 2 },
      { id: 'c', score: 1 },
    ];
    const vector = [
      { id: 'c', score: 0.9 },
      { id: 'b', score: 0.8 },
      { id: 'a', score: 0.1 },
    ];
    expect(fuseScores(keyword, vector, 0).map((hit) => hit.id)).toEqual(['a', 'b', 'c']);
    expect(fuseScores(keyword, vector, 1).map((hit) => hit.id)).toEqual(['c', 'b', 'a']);
  });

  it('breaks ties by id so the order is stable', () => {
    const fused = fuseScores(
      [
        { id: 'z', score: 1 },
        { id: 'y', score: 1 },
      ],
      [],
      0.5,
    );
    expect(fused.map((hit) => hit.id)).toEqual(['y', 'z']);
  });

  it('reciprocal-rank fusion rewards agreement', () => {
    const fused = reciprocalRankFusion([
      [
        { id: 'a', score: 9 },
        { id: 'b', score: 8 },
      ],
      [
        { id: 'b', score: 0.9 },
        { id: 'c', score: 0.8 },
      ],
    ]);
    expect(fused[0].id).toBe('b');
    expect(fused.map((hit) => hit.id).sort()).toEqual(['a', 'b', 'c']);
  });
});
