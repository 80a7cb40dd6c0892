import { sql, type SelectQueryBuilder as KyselySelect, type SqlBool } from 'kysely';
import { AppException } from '../errors/app.exception.js';
import { isUuid } from '../validation/uuid.js';

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Position after the last row of a page, in the "newest first, ties by id" order every list uses. */
interface CursorPosition {
  createdAt: string;
  id: string;
}

export function encodeCursor(row: { createdAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify({ createdAt: row.createdAt.toISOString(), id: row.id })).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): CursorPosition | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorPosition>;
    // Exactly what encodeCursor writes: anything else (a hand-made cursor) must be a 400 here, never a
    // value PostgreSQL refuses to cast (a 500).
    if (
      typeof parsed?.createdAt === 'string' &&
      typeof parsed.id === 'string' &&
      isUuid(parsed.id) &&
      isCursorTimestamp(parsed.createdAt)
    ) {
      return { createdAt: parsed.createdAt, id: parsed.id };
    }
  } catch {
    // fall through to the 400 below
  }
  throw AppException.validation('cursor is not valid; pass back nextCursor from the previous page unchanged', [
    { field: 'cursor', message: 'invalid cursor' },
  ]);
}

/** An ISO-8601 UTC timestamp as Date#toISOString writes it, for a year PostgreSQL and Date both hold. */
function isCursorTimestamp(value: string): boolean {
  return /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value) && new Date(value).toISOString() === value;
}

/** Callers fetch `limit + 1` rows; the extra row only tells whether there is a next page. */
export function toPage<T extends { createdAt: Date; id: string }, R>(
  rows: T[],
  limit: number,
  render: (row: T) => R,
): Page<R> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  return {
    items: pageRows.map(render),
    nextCursor: hasMore ? encodeCursor(pageRows[pageRows.length - 1]) : null,
  };
}

export interface PageQuery {
  limit: number;
  cursor?: string;
}

/**
 * The one pagination of every list (Kysely repositories): rows after the cursor in the list order (newest
 * first, ties by id), `limit + 1` of them so {@link toPage} can tell whether another page follows.
 * `alias` is the table alias of the listed object in `qb`, from code. A bad cursor is a 400.
 */
export function pageOrder<DB, TB extends keyof DB, O>(
  qb: KyselySelect<DB, TB, O>,
  alias: string,
  query: PageQuery,
): KyselySelect<DB, TB, O> {
  const cursor = decodeCursor(query.cursor);
  const createdAt = sql.ref(`${alias}.created_at`);
  const id = sql.ref(`${alias}.id`);
  const after = cursor
    ? qb.where(sql<SqlBool>`(${createdAt}, ${id}) < (${cursor.createdAt}::timestamptz, ${cursor.id}::uuid)`)
    : qb;
  return after.orderBy(sql`${createdAt} DESC, ${id} DESC`).limit(query.limit + 1);
}
