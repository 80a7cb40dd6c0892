import { AppException } from '../errors/app.exception.js';
import { decodeCursor, encodeCursor } from './cursor-page.js';

const handMade = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const ID = '5b1d2a9e-2f4e-4b8e-9a41-0c6a1b2c3d4e';

describe('list cursors', () => {
  it('round-trips what encodeCursor wrote', () => {
    const at = new Date('2026-11-22T07:00:00.123Z');
    expect(decodeCursor(encodeCursor({ createdAt: at, id: ID }))).toEqual({ createdAt: at.toISOString(), id: ID });
    expect(decodeCursor(undefined)).toBeUndefined();
    expect(decodeCursor('')).toBeUndefined();
  });

  it.each([
    ['not base64 JSON', 'garbage'],
    ['JSON null', handMade(null)],
    ['an id that is not a uuid', handMade({ createdAt: '2026-01-01T00:00:00.000Z', id: 'x' })],
    ['an empty id', handMade({ createdAt: '2026-01-01T00:00:00.000Z', id: '' })],
    ['a number as the time', handMade({ createdAt: '0', id: ID })],
    ['a year PostgreSQL cannot hold', handMade({ createdAt: '+275760-09-13T00:00:00.000Z', id: ID })],
    ['year zero', handMade({ createdAt: '0000-01-01T00:00:00.000Z', id: ID })],
    ['an impossible date', handMade({ createdAt: '2026-02-30T00:00:00.000Z', id: ID })],
    ['a time with an offset', handMade({ createdAt: '2026-01-01T00:00:00+02:00', id: ID })],
  ])('refuses %s with a validation error (400), never passing it to SQL', (_what, cursor) => {
    expect(() => decodeCursor(cursor)).toThrow(AppException);
  });
});
