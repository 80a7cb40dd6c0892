/** Shared settings of the gateway benchmark: both servers see the same database, pool size and pepper. */
export const BENCH_PEPPER = process.env.BENCH_PEPPER ?? 'bench-pepper-not-a-secret-0123456789abcdef';
export const BENCH_POOL_SIZE = Number(process.env.BENCH_POOL_SIZE ?? 10);

/** The one list query both servers run (the TasksService.list SQL with no filters). */
export const LIST_SQL = `SELECT t.id, t.title, t.description, t.status, t.priority, t.due_date::text AS due_date, t.assignee_id, t.creator_id, t.project_id, t.created_at, t.updated_at
FROM tasks t
WHERE (t.creator_id = $1 OR t.assignee_id = $1) AND (t.project_id IS NULL OR $2::uuid[] IS NULL OR t.project_id = ANY($2::uuid[]))
ORDER BY t.created_at DESC, t.id DESC LIMIT $3`;

export const KEY_SQL =
  'SELECT id, user_id, scopes, project_ids, repos, expires_at, revoked_at, key_hash FROM api_keys WHERE key_hash = $1';

/** The create_task insert both servers run (TasksRepository.insert with the tool's defaults). */
export const INSERT_SQL = `INSERT INTO tasks (id, title, description, status, priority, due_date, assignee_id, creator_id, project_id)
VALUES ($1, $2, $3, $4, $5, NULL, NULL, $6, NULL)
RETURNING id, title, description, status, priority, assignee_id, creator_id, project_id, created_at, updated_at, due_date::text AS due_date`;

/** The bare handler's naive call count: one UPDATE of the key's row per call. */
export const COUNT_SQL = 'UPDATE api_keys SET call_count = call_count + 1, last_used_at = now() WHERE id = $1';

/** What each scenario sends (`arguments` of the tool call). */
export const SCENARIOS = {
  list_tasks: { limit: 50 },
  create_task: { title: 'Bench task', description: 'Written by bench:gateway' },
} as const;
export type Scenario = keyof typeof SCENARIOS;
