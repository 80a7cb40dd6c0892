import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { AppException } from '../../src/common/errors/app.exception.js';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import { IdempotencyService } from '../../src/common/idempotency/idempotency.service.js';
import { useMediumContext } from '../support/medium.js';

/**
 * Idempotency-Key on a real database, below every route that takes one: a repeat replays the stored answer and
 * runs nothing, other arguments are a conflict, key spaces are per owner and scope, a failure frees the key, and
 * the checks run before any replay. The headers and statuses of each route are their e2e suites'.
 */
describe('IdempotencyService (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const idempotency = () => medium().get(IdempotencyService);
  const conflict = { code: ErrorCode.IdempotencyConflict };

  /** Work that counts its runs and answers which run it was. */
  const counter = () => {
    let runs = 0;
    return { work: async () => ({ run: (runs += 1) }), runs: () => runs };
  };

  it('a repeat with the same request replays the first answer without running the work again', async () => {
    const request = { ownerId: randomUUID(), scope: 'medium:test', key: 'key-1', request: { title: 'x', n: 1 } };
    const { work, runs } = counter();
    expect(await idempotency().run(request, work)).toEqual({ value: { run: 1 }, replayed: false });
    // The same arguments in another key order are the same request.
    expect(await idempotency().run({ ...request, request: { n: 1, title: 'x' } }, work)).toEqual({
      value: { run: 1 },
      replayed: true,
    });
    expect(runs()).toBe(1);
  });

  it('the same key with other arguments is a conflict; other owners and scopes have their own keys', async () => {
    const ownerId = randomUUID();
    const { work, runs } = counter();
    await idempotency().run({ ownerId, scope: 'medium:a', key: 'shared', request: { v: 1 } }, work);
    await expect(
      idempotency().run({ ownerId, scope: 'medium:a', key: 'shared', request: { v: 2 } }, work),
    ).rejects.toMatchObject(conflict);
    expect(
      await idempotency().run({ ownerId: randomUUID(), scope: 'medium:a', key: 'shared', request: { v: 1 } }, work),
    ).toMatchObject({ replayed: false });
    expect(
      await idempotency().run({ ownerId, scope: 'medium:b', key: 'shared', request: { v: 1 } }, work),
    ).toMatchObject({ replayed: false });
    expect(runs()).toBe(3);
  });

  it('a failed first attempt leaves no record: the retry runs', async () => {
    const request = { ownerId: randomUUID(), scope: 'medium:test', key: 'flaky', request: {} };
    await expect(idempotency().run(request, () => Promise.reject(new Error('upstream down')))).rejects.toThrow(
      'upstream down',
    );
    expect(await idempotency().run(request, async () => 'second try')).toEqual({
      value: 'second try',
      replayed: false,
    });
  });

  it('two requests with one key at the same moment run the work once; the other gets its answer', async () => {
    const request = { ownerId: randomUUID(), scope: 'medium:test', key: 'race', request: { same: true } };
    let runs = 0;
    const slow = async () => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 200));
      return 'done';
    };
    const outcomes = await Promise.all([idempotency().run(request, slow), idempotency().run(request, slow)]);
    expect(runs).toBe(1);
    expect(outcomes.map((o) => o.value)).toEqual(['done', 'done']);
    expect(outcomes.map((o) => o.replayed).sort()).toEqual([false, true]);
  });

  it('checks run before a replay: a caller refused now gets the refusal, not the stored answer', async () => {
    const base = { ownerId: randomUUID(), scope: 'medium:test', key: 'guarded', request: { id: 1 } };
    expect(
      await idempotency().runAuthorized({ ...base, authorize: async () => 'ok', work: async () => 'stored' }),
    ).toEqual({ value: 'stored', replayed: false });
    const refused = idempotency().runAuthorized({
      ...base,
      authorize: () => Promise.reject(AppException.notFound('Thing')),
      work: async () => 'never',
    });
    await expect(refused).rejects.toMatchObject({ code: ErrorCode.NotFound });
    // Without a key the work simply runs.
    expect(
      await idempotency().runAuthorized({
        ...base,
        key: undefined,
        authorize: async () => 'ok',
        work: async () => 'fresh',
      }),
    ).toEqual({ value: 'fresh', replayed: false });
  });

  it('refuses a key that cannot be a header value', async () => {
    for (const key of ['', 'x'.repeat(256), 'caf\u00e9', 'line\nbreak']) {
      await expect(
        idempotency().run({ ownerId: randomUUID(), scope: 'medium:test', key, request: {} }, async () => 'never'),
      ).rejects.toMatchObject({ code: ErrorCode.InvalidRequest });
    }
  });

  it('a stored answer replays as stored: the keys of a JSON value, snake_case or camelCase, nested or in arrays, are never renamed', async () => {
    const ownerId = randomUUID();
    const answer = {
      project_id: 'snake',
      projectId: 'camel',
      due_date: null,
      content_sha256: 'digits',
      Mixed_Case: 1,
      nested: { assignee_id: 'a', creatorId: 'b', rows: [{ created_at: '2026-01-01T00:00:00.000Z', updatedAt: 2 }] },
      list: [{ snake_key: true }, [{ inner_key: 'x' }]],
    };
    const request = { ownerId, scope: 'medium:json', key: 'mixed-keys', request: {} };
    expect(await idempotency().run(request, async () => answer)).toEqual({ value: answer, replayed: false });
    const replay = await idempotency().run(request, async () => 'not run');
    expect(replay).toEqual({ value: answer, replayed: true });
    // What PostgreSQL holds, read past the column naming of the application's client: the same text.
    const { rows } = await sql<{ response: { value: unknown } }>`
      SELECT response FROM idempotency_records WHERE owner_id = ${ownerId}`.execute(medium().db.withoutPlugins());
    expect(JSON.stringify(replay.value)).toBe(JSON.stringify(rows[0].response.value));
  });
});
