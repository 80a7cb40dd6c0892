import { ErrorCode } from '../../src/common/errors/error-code.js';
import { encodeCursor } from '../../src/common/pagination/cursor-page.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { actorOf, useMediumContext } from '../support/medium.js';

/**
 * The one pagination of every list (pageOrder / toPage) against a real table: newest first, ties by id across
 * rows of one instant, no row skipped or repeated when rows are added between pages, and a hand-made cursor is a
 * validation error before PostgreSQL sees it (never a failed cast). Through ProjectsService.list, one of its users.
 */
describe('cursor pagination (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const list = (...args: Parameters<ProjectsService['list']>) =>
    medium()
      .get(ProjectsService)
      .list(...args);
  const ids = (items: { id: string }[]) => items.map((item) => item.id);

  async function projectsAt(user: { id: string }, instants: string[]): Promise<string[]> {
    const made: string[] = [];
    for (const at of instants) {
      const project = await medium().make.project(user);
      await medium().db.updateTable('projects').set({ createdAt: at }).where('id', '=', project.id).execute();
      made.push(project.id);
    }
    return made;
  }

  it('rows of one instant page by id, descending, one at a time, none skipped or repeated', async () => {
    const user = await medium().make.user();
    const made = await projectsAt(
      user,
      Array.from({ length: 4 }, () => '2026-05-01T00:00:00.000Z'),
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await list(actorOf(user), { limit: 1, cursor });
      seen.push(...ids(page.items));
      cursor = page.nextCursor ?? undefined;
    } while (cursor && seen.length < 10);
    expect(seen).toEqual([...made].sort().reverse());
  });

  it('a row added after the first page was read does not shift the next page (the cursor is a position, not an offset)', async () => {
    const user = await medium().make.user();
    const made = await projectsAt(user, [
      '2026-05-02T00:00:01.000Z',
      '2026-05-02T00:00:02.000Z',
      '2026-05-02T00:00:03.000Z',
    ]);
    const first = await list(actorOf(user), { limit: 2 });
    expect(ids(first.items)).toEqual([made[2], made[1]]);
    await projectsAt(user, ['2026-05-02T00:00:04.000Z']);
    const second = await list(actorOf(user), { limit: 2, cursor: first.nextCursor ?? undefined });
    expect(ids(second.items)).toEqual([made[0]]);
    expect(second.nextCursor).toBeNull();
  });

  it('a limit that fits exactly has no next page; one more row makes one', async () => {
    const user = await medium().make.user();
    await projectsAt(user, ['2026-05-03T00:00:01.000Z', '2026-05-03T00:00:02.000Z']);
    expect((await list(actorOf(user), { limit: 2 })).nextCursor).toBeNull();
    await projectsAt(user, ['2026-05-03T00:00:03.000Z']);
    expect((await list(actorOf(user), { limit: 2 })).nextCursor).toEqual(expect.any(String));
  });

  it('hand-made cursors are validation errors, never a database error', async () => {
    const user = await medium().make.user();
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const cursor of [
      'garbage',
      b64({ createdAt: 'x', id: "1' OR 1=1" }),
      b64({ createdAt: '0000-01-01T00:00:00.000Z', id: '00000000-0000-4000-8000-000000000000' }),
      b64({ createdAt: '2026-13-45T00:00:00.000Z', id: '00000000-0000-4000-8000-000000000000' }),
      b64({ createdAt: '2026-01-01T00:00:00Z', id: '00000000-0000-4000-8000-000000000000' }),
      b64({ createdAt: '2026-01-01T00:00:00.000Z' }),
      b64(['2026-01-01T00:00:00.000Z', '00000000-0000-4000-8000-000000000000']),
    ]) {
      await expect(list(actorOf(user), { limit: 5, cursor })).rejects.toMatchObject({
        code: ErrorCode.ValidationFailed,
      });
    }
    // A well-formed cursor past every row is simply an empty page.
    expect(
      await list(actorOf(user), {
        limit: 5,
        cursor: encodeCursor({ createdAt: new Date(Date.UTC(2000, 0, 1)), id: '00000000-0000-4000-8000-000000000000' }),
      }),
    ).toEqual({ items: [], nextCursor: null });
  });
});
