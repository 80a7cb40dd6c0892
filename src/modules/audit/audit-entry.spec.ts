import { uuidV7 } from './audit-entry.js';

describe('uuidV7', () => {
  it('is a version-7, variant-10 UUID whose first 48 bits are the time in ms', () => {
    const at = new Date('2026-11-24T03:00:00.123Z');
    const id = uuidV7(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at.getTime());
  });

  it('sorts by time as text', () => {
    const ids = [0, 1, 2, 1000, 86_400_000].map((offset) => uuidV7(new Date(1_764_000_000_000 + offset)));
    expect([...ids].sort()).toEqual(ids);
  });
});
