import { portableSchema } from './portable-schema.js';

describe('portableSchema', () => {
  it('turns a type list into anyOf, keeping type-specific keywords with their type and annotations outside', () => {
    expect(portableSchema({ type: ['string', 'null'], format: 'uuid', description: 'An id' })).toEqual({
      description: 'An id',
      anyOf: [{ type: 'string', format: 'uuid' }, { type: 'null' }],
    });
  });

  it('rewrites nested schemas and leaves everything else as it was', () => {
    const schema = {
      type: 'object',
      properties: { due: { type: ['string', 'null'] }, n: { type: 'integer', minimum: 1 } },
      required: ['n'],
      additionalProperties: false,
    };
    expect(portableSchema(schema)).toEqual({
      type: 'object',
      properties: { due: { anyOf: [{ type: 'string' }, { type: 'null' }] }, n: { type: 'integer', minimum: 1 } },
      required: ['n'],
      additionalProperties: false,
    });
    expect(JSON.stringify(portableSchema(schema))).not.toContain('["string","null"]');
  });

  it('keeps enum and const values untouched, and a one-type list becomes that type', () => {
    expect(portableSchema({ type: ['string'], enum: ['a', null] })).toEqual({ type: 'string', enum: ['a', null] });
  });
});
