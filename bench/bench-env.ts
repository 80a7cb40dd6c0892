/** Shared settings of the gateway benchmark: both servers see the same database, pool size and pepper. */
export const BENCH_PEPPER = process.env.BENCH_PEPPER ?? 'bench-pepper-not-a-secret-0123456789abcdef';
export const BENCH_POOL_SIZE = Number(process.env.BENCH_POOL_SIZE ?? 10);

/** The one list query both servers run (the TasksService.list SQL with no filters). */
export const LIST_SQL = `SELECT t.id, t.title, t.description, t.status, t.priority, t.due_date::text AS due_date, t.assignee_id, t.creator_id, t.project_id, t.created_at, t.updated_at
FROM tasks t
WHERE (t.creator_id = $1 OR t.assignee_id = $1) AND (t.project_id IS NULL OR $2::uuid[] IS NULL OR t.project_id = ANY($2::uuid[]))
ORDER BY t.created_at DESC, t.id DESC LIMIT $3`;

export const KEY_SQL = 'SELECT id, user_id, scopes, project_ids, repos, expires_at, revoked_at, key_hash FROM api_keys WHERE key_hash = $1';
