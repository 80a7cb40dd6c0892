import { toVectorParam } from './embedding-provider.js';

describe('toVectorParam', () => {
  it("writes pgvector's binary format: int16 dimensions, int16 unused, float4 values in network byte order", () => {
    const param = toVectorParam([0.5, -1.25, Number.NaN, 3]);
    expect(param.length).toBe(4 + 4 * 4);
    expect(param.readInt16BE(0)).toBe(4);
    expect(param.readInt16BE(2)).toBe(0);
    expect([0, 1, 2, 3].map((i) => param.readFloatBE(4 + 4 * i))).toEqual([0.5, -1.25, 0, 3]);
  });
});
