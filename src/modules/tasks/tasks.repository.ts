import { Injectable } from '@nestjs/common';
import { sql, type CompiledQuery, type QueryCreator, type Selectable } from 'kysely';
import { deletableTask, editableTask, visibleTask } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import type { DB, Tasks } from '../../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import type { TaskPriority, TaskStatus, TaskView } from './task.model.js';

export interface TaskFilter {
  status?: TaskStatus;
  priority?: TaskPriority;
  assigneeId?: string;
  projectId?: string;
  /** YYYY-MM-DD: due strictly before this day. */
  dueBefore?: string;
}

export interface NewTask {
  id: string;
  title: string;
  description: string;
  status: TaskStatus;
  priority: TaskPriority;
  /** YYYY-MM-DD */
  dueDate: string | null;
  assigneeId: string | null;
  creatorId: string;
  projectId: string | null;
}

/** A task list as JSON text (TasksRepository.listRendered). */
export interface RenderedTaskList {
  /** The JSON array of the shown task views. */
  json: string;
  /** Rows found: one more than shown when the list was cut. */
  found: number;
}

export type TaskChanges = Partial<Pick<NewTask, 'title' | 'description' | 'status' | 'priority' | 'dueDate' | 'assigneeId'>>;

/** Task counts of one (status, priority) pair, for the stats. */
export interface TaskCountGroup {
  status: TaskStatus;
  priority: TaskPriority;
  count: number;
  overdue: number;
  dueNext7Days: number;
}

type SelectedTask = Omit<Selectable<Tasks>, 'due_date' | 'search_vector' | 'created_at' | 'updated_at'> & {
  due_date: string | null;
  created_at: string;
  updated_at: string;
};

/**
 * A timestamp as the view shows it (`Date.prototype.toISOString`'s form: UTC, milliseconds truncated), written by
 * PostgreSQL: parsing it into a Date (a regular expression per value) and formatting it again cost ~2 µs a value,
 * 100 values in a 50-task list. Every statement below selects its timestamps this way, so every door and every
 * route shows the same text for the same instant.
 */
const isoText = (column: string) => sql<string>`to_char(${sql.ref(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
// due_date comes back as text so no timezone can shift a calendar date.
const dueDateText = sql<string | null>`t.due_date::text`.as('due_date');
const COLUMNS = [
  't.id',
  't.title',
  't.description',
  't.status',
  't.priority',
  't.assignee_id',
  't.creator_id',
  't.project_id',
  isoText('t.created_at').as('created_at'),
  isoText('t.updated_at').as('updated_at'),
] as const;
// INSERT cannot alias its table in Kysely: the same columns unqualified.
const INSERTED_COLUMNS = [
  'id',
  'title',
  'description',
  'status',
  'priority',
  'assignee_id',
  'creator_id',
  'project_id',
  isoText('created_at').as('created_at'),
  isoText('updated_at').as('updated_at'),
] as const;
/** TaskView's keys in its order: the rendered list writes its objects with these keys, in this order. */
const VIEW_KEYS = ['id', 'title', 'description', 'status', 'priority', 'due_date', 'assignee_id', 'creator_id', 'project_id', 'created_at', 'updated_at'] as const satisfies readonly (keyof TaskView)[];
const insertedDueDateText = sql<string | null>`due_date::text`.as('due_date');
const today = sql`(now() AT TIME ZONE 'UTC')::date`;
const OPEN = sql`t.status NOT IN ('done', 'cancelled')`;

/**
 * The tasks table. Every statement that reads or changes a task an actor names composes the access predicates
 * (visibleTask, editableTask, deletableTask), so none can return or touch a task the actor may not.
 */
@Injectable()
export class TasksRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /**
   * The list statements of each filter shape (which filters are set, pinned or not: at most 64) and form, compiled
   * once. Building and compiling one with Kysely cost ~50 µs and much garbage on every list_tasks call.
   */
  private readonly compiledLists = new Map<string, CompiledQuery>();

  /** Newest first, `limit` rows (callers pass one more than they show). One statement. */
  async list(actor: Actor, filter: TaskFilter, limit: number): Promise<TaskView[]> {
    const { rows } = await this.db.executeQuery(this.compiledList(actor, filter, limit, 'rows'));
    return (rows as SelectedTask[]).map(toView);
  }

  /**
   * The same list as the JSON text of its first `shown` task views, newest first, rendered by PostgreSQL, and how
   * many rows the statement found (at most `shown + 1`: more than `shown` means the list was cut). The Area A
   * list_tasks hot path: one row of two values reaches Node instead of 51 rows of 11 (the rows' parsing, their
   * dates, the views and `JSON.stringify` were ~0.3 ms of Node CPU and most of the garbage of a 50-task call).
   * The text is what `JSON.stringify(list(…))` writes, byte for byte (tasks.e2e asserts it).
   */
  async listRendered(actor: Actor, filter: TaskFilter, shown: number): Promise<RenderedTaskList> {
    const { rows } = await this.db.executeQuery(this.compiledList(actor, filter, shown + 1, 'json', shown));
    const [row] = rows as { items: string; found: number }[];
    return { json: row.items, found: row.found };
  }

  private compiledList(actor: Actor, filter: TaskFilter, limit: number, form: 'rows' | 'json', shown = limit): CompiledQuery {
    const shape = `${form}${actor.projectIds === null ? '-' : 'p'}${filter.status ? 's' : '-'}${filter.priority ? 'r' : '-'}${filter.assigneeId ? 'a' : '-'}${filter.projectId ? 'j' : '-'}${filter.dueBefore ? 'd' : '-'}`;
    // The values in the order the statement takes them: for the rendered form how many rows it shows, then
    // visibleTask's (user twice, then the pins), the filters, the limit.
    const parameters: unknown[] = form === 'json' ? [shown, actor.userId, actor.userId] : [actor.userId, actor.userId];
    if (actor.projectIds !== null) parameters.push([...actor.projectIds]);
    for (const value of [filter.status, filter.priority, filter.assigneeId, filter.projectId, filter.dueBefore]) if (value) parameters.push(value);
    parameters.push(limit);
    const cached = this.compiledLists.get(shape);
    if (cached) return { ...cached, parameters };
    const compiled = form === 'rows' ? this.listQuery(actor, filter, limit).compile() : this.renderedListQuery(actor, filter, limit, shown).compile(this.db);
    // Kept for reuse only if its parameters are the ones listed above, in that order (a change to the access
    // predicate or the filters that breaks this costs speed, never correctness).
    if (JSON.stringify(compiled.parameters) === JSON.stringify(parameters)) this.compiledLists.set(shape, compiled);
    return compiled;
  }

  /**
   * The list statement inside one aggregate: each row becomes its view (the LATERAL select names the keys, in
   * TaskView's order; PostgreSQL folds it into the row), the views are aggregated in the list's own order (the
   * sort keys as stored, not their millisecond text), cut to `shown` and written as one JSON array.
   */
  private renderedListQuery(actor: Actor, filter: TaskFilter, limit: number, shown: number) {
    const rows = this.listQuery(actor, filter, limit).select('t.created_at as sort_key');
    const view = sql.join(VIEW_KEYS.map((key) => sql.ref(`s.${key}`)));
    return sql<{ items: string; found: number }>`SELECT coalesce(array_to_json((array_agg(v ORDER BY s.sort_key DESC, s.id DESC))[1:${shown}::int])::text, '[]') AS items, count(*)::int AS found FROM ${rows} AS s, LATERAL (SELECT ${view}) AS v`;
  }

  private listQuery(actor: Actor, filter: TaskFilter, limit: number) {
    let query = this.db.selectFrom('tasks as t').select(COLUMNS).select(dueDateText).where(visibleTask(actor, 't'));
    if (filter.status) query = query.where('t.status', '=', filter.status);
    if (filter.priority) query = query.where('t.priority', '=', filter.priority);
    if (filter.assigneeId) query = query.where('t.assignee_id', '=', filter.assigneeId);
    if (filter.projectId) query = query.where('t.project_id', '=', filter.projectId);
    if (filter.dueBefore) query = query.where(sql<boolean>`t.due_date < ${filter.dueBefore}::date`);
    return query.orderBy('t.created_at', 'desc').orderBy('t.id', 'desc').limit(limit);
  }

  async findVisible(actor: Actor, taskId: string): Promise<TaskView | undefined> {
    const row = await this.db.selectFrom('tasks as t').select(COLUMNS).select(dueDateText).where('t.id', '=', taskId).where(visibleTask(actor, 't')).executeTakeFirst();
    return row && toView(row);
  }

  /** Full-text match (`tsquery` over the simple configuration); best match first, `limit` rows. */
  async search(actor: Actor, tsquery: string, status: TaskStatus | undefined, limit: number): Promise<TaskView[]> {
    const match = sql`to_tsquery('simple', ${tsquery}::text)`;
    let query = this.db
      .selectFrom('tasks as t')
      .select(COLUMNS)
      .select(dueDateText)
      .where(sql<boolean>`t.search_vector @@ ${match}`)
      .where(visibleTask(actor, 't'));
    if (status) query = query.where('t.status', '=', status);
    const rows = await query
      .orderBy(sql`ts_rank(t.search_vector, ${match})`, 'desc')
      .orderBy('t.created_at', 'desc')
      .orderBy('t.id', 'desc')
      .limit(limit)
      .execute();
    return rows.map(toView);
  }

  /** Visible tasks grouped by (status, priority), with the open ones overdue or due in the next 7 days (today and the 6 after). */
  async countGroups(actor: Actor, projectId: string | undefined): Promise<TaskCountGroup[]> {
    let query = this.db
      .selectFrom('tasks as t')
      .select([
        't.status',
        't.priority',
        sql<string>`count(*)`.as('n'),
        sql<string>`count(*) FILTER (WHERE t.due_date < ${today} AND ${OPEN})`.as('overdue'),
        sql<string>`count(*) FILTER (WHERE t.due_date >= ${today} AND t.due_date < ${today} + 7 AND ${OPEN})`.as('due_soon'),
      ])
      .where(visibleTask(actor, 't'));
    if (projectId) query = query.where('t.project_id', '=', projectId);
    const rows = await query.groupBy(['t.status', 't.priority']).execute();
    return rows.map((row) => ({
      status: row.status as TaskStatus,
      priority: row.priority as TaskPriority,
      count: Number(row.n),
      overdue: Number(row.overdue),
      dueNext7Days: Number(row.due_soon),
    }));
  }

  /** `creator`: the shared client, or one that adds a statement of its own (AuditService.withToolChange). */
  async insert(task: NewTask, creator: QueryCreator<DB> = this.db): Promise<TaskView> {
    const row = await creator
      .insertInto('tasks')
      .values({
        id: task.id,
        title: task.title,
        description: task.description,
        status: task.status,
        priority: task.priority,
        due_date: task.dueDate === null ? null : sql<Date>`${task.dueDate}::date`,
        assignee_id: task.assigneeId,
        creator_id: task.creatorId,
        project_id: task.projectId,
      })
      .returning(INSERTED_COLUMNS)
      .returning(insertedDueDateText)
      .executeTakeFirstOrThrow();
    return toView(row);
  }

  /** Applies `changes` when the actor may edit the task; undefined when it may not (or the task is gone). */
  async updateEditable(actor: Actor, taskId: string, changes: TaskChanges, executor: DbExecutor = this.db): Promise<TaskView | undefined> {
    const row = await executor
      .updateTable('tasks as t')
      .set({
        ...(changes.title !== undefined && { title: changes.title }),
        ...(changes.description !== undefined && { description: changes.description }),
        ...(changes.status !== undefined && { status: changes.status }),
        ...(changes.priority !== undefined && { priority: changes.priority }),
        ...(changes.dueDate !== undefined && { due_date: changes.dueDate === null ? null : sql<Date>`${changes.dueDate}::date` }),
        ...(changes.assigneeId !== undefined && { assignee_id: changes.assigneeId }),
        updated_at: sql<Date>`now()`,
      })
      .where('t.id', '=', taskId)
      .where(editableTask(actor, 't'))
      .returning(COLUMNS)
      .returning(dueDateText)
      .executeTakeFirst();
    return row && toView(row);
  }

  /** Deletes the task when the actor may delete it and returns its id; undefined otherwise (invisible, not its creator, or gone). */
  async deleteDeletable(actor: Actor, taskId: string, executor: DbExecutor = this.db): Promise<string | undefined> {
    const row = await executor.deleteFrom('tasks as t').where('t.id', '=', taskId).where(deletableTask(actor, 't')).returning('t.id').executeTakeFirst();
    return row?.id;
  }
}

function toView(row: SelectedTask): TaskView {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    status: row.status as TaskStatus,
    priority: row.priority as TaskPriority,
    due_date: row.due_date,
    assignee_id: row.assignee_id,
    creator_id: row.creator_id,
    project_id: row.project_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
