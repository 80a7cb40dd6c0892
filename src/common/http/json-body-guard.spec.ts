import { jsonBodyProblem } from './json-body-guard';

describe('jsonBodyProblem', () => {
  it('accepts ordinary bodies, emoji and other paired surrogates', () => {
    expect(
      jsonBodyProblem({
        name: 'create_task',
        arguments: { title: 'Fix 😀 ✓', labels: ['a', 'b'], n: 1, ok: true, x: null },
      }),
    ).toBeNull();
    expect(jsonBodyProblem(undefined)).toBeNull();
  });

  it('refuses NUL and unpaired surrogates in values and keys', () => {
    expect(jsonBodyProblem({ title: 'a\u0000b' })).toMatch(/NUL/);
    expect(jsonBodyProblem({ list: ['ok', 'x\ud800'] })).toMatch(/surrogate/);
    expect(jsonBodyProblem({ t: '\udfffy' })).toMatch(/surrogate/);
    expect(jsonBodyProblem({ 'k\u0000': 1 })).toMatch(/Keys/);
  });

  it('refuses deep nesting without recursing (10,000 levels)', () => {
    const deep = JSON.parse('['.repeat(10_000) + ']'.repeat(10_000));
    expect(jsonBodyProblem(deep)).toMatch(/nested more than 64/);
    let shallow: unknown = 1;
    for (let i = 0; i < 64; i++) shallow = { a: shallow };
    expect(jsonBodyProblem(shallow)).toBeNull();
    expect(jsonBodyProblem({ a: shallow })).toMatch(/nested/);
  });
});
