import { Injectable } from '@nestjs/common';
import { sql, type CompiledQuery, type QueryCreator } from 'kysely';
import { deletableTask, editableTask, visibleTask } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import type { DB } from '../../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import { InjectNamedStatements, type NamedStatements } from '../../database/named-statements.js';
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

export type TaskChanges = Partial<
  Pick<NewTask, 'title' | 'description' | 'status' | 'priority' | 'dueDate' | 'assigneeId'>
>;

/** Task counts of one (status, priority) pair, for the stats. */
export interface TaskCountGroup {
  status: TaskStatus;
  priority: TaskPriority;
  count: number;
  overdue: number;
  dueNext7Days: number;
}

/**
 * Every task statement reads the task's stored view (`view_json`, written by PostgreSQL with the row: migration
 * 1765200000000): the one definition of what a task looks like to a caller, byte for byte the same on every door.
 */
const VIEW = 't.viewJson';
const INSERTED_VIEW = 'viewJson';
const today = sql`(now() AT TIME ZONE 'UTC')::date`;
const OPEN = sql`t.status NOT IN ('done', 'cancelled')`;

/**
 * The tasks table. Every statement that reads or changes a task an actor names composes the access predicates
 * (visibleTask, editableTask, deletableTask), so none can return or touch a task the actor may not.
 */
@Injectable()
export class TasksRepository {
  constructor(
    @InjectDb() private readonly db: Db,
    @InjectNamedStatements() private readonly named: NamedStatements,
  ) {}

  /**
   * The list statement of each filter shape (which filters are set, pinned or not: at most 64), compiled once.
   * Building and compiling it with Kysely on every list_tasks call cost time and garbage on the hottest tool.
   */
  private readonly compiledLists = new Map<string, CompiledQuery<RenderedRow>>();

  /**
   * The tasks the actor may see, newest first, as the JSON array of their first `shown` views, and how many rows
   * the statement found (at most `shown + 1`: more than `shown` means the list was cut). The Area A list_tasks hot
   * path, one statement: it aggregates the stored views, so one row of two values reaches Node, which answers the
   * text as it is (the rows' parsing, their dates, the views and `JSON.stringify` were about half of the gateway's
   * Node time on a 50-task call). Run as a named statement of its connection (NamedStatements): parsing and
   * planning it on every call was about half of its PostgreSQL time (pgbench at 100k tasks: 5,100–5,200 calls/s
   * unprepared, 10,500–13,200 prepared); its generic plan is the custom one (the caller's tasks by the creator and
   * assignee indexes, then the top of them by date), and the limits stay parameters, so one text per filter shape.
   */
  async listRendered(actor: Actor, filter: TaskFilter, shown: number): Promise<RenderedTaskList> {
    const shape = `${actor.projectIds === null ? '-' : 'p'}${filter.status ? 's' : '-'}${filter.priority ? 'r' : '-'}${filter.assigneeId ? 'a' : '-'}${filter.projectId ? 'j' : '-'}${filter.dueBefore ? 'd' : '-'}`;
    // The values in the order the statement takes them: how many it shows, visibleTask's (user twice, then the
    // pins), the filters, the limit.
    const parameters: unknown[] = [shown, actor.userId, actor.userId];
    if (actor.projectIds !== null) parameters.push([...actor.projectIds]);
    for (const value of [filter.status, filter.priority, filter.assigneeId, filter.projectId, filter.dueBefore])
      if (value) parameters.push(value);
    parameters.push(shown + 1);
    let query = this.compiledLists.get(shape);
    if (query) {
      query = { ...query, parameters };
    } else {
      query = this.renderedListQuery(actor, filter, shown).compile(this.db);
      // Kept for reuse only if its parameters are the ones listed above, in that order (a change to the access
      // predicate or the filters that breaks this costs speed, never correctness).
      if (JSON.stringify(query.parameters) === JSON.stringify(parameters)) this.compiledLists.set(shape, query);
    }
    const [row] = await this.named.compiledRows(query);
    return { json: row.items, found: row.found };
  }

  /**
   * The list statement inside one aggregate: the stored views in the list's own order (its sort keys as stored,
   * which the views' millisecond text could not tell apart), cut to `shown`, joined into one JSON array.
   */
  private renderedListQuery(actor: Actor, filter: TaskFilter, shown: number) {
    const rows = this.listQuery(actor, filter, shown + 1);
    return sql<RenderedRow>`SELECT '[' || coalesce(array_to_string((array_agg(s.view_json ORDER BY s.created_at DESC, s.id DESC))[1:${shown}::int], ','), '') || ']' AS items, count(*)::int AS found FROM ${rows} AS s`;
  }

  private listQuery(actor: Actor, filter: TaskFilter, limit: number) {
    let query = this.db.selectFrom('tasks as t').select(['t.id', 't.createdAt', VIEW]).where(visibleTask(actor, 't'));
    if (filter.status) query = query.where('t.status', '=', filter.status);
    if (filter.priority) query = query.where('t.priority', '=', filter.priority);
    if (filter.assigneeId) query = query.where('t.assigneeId', '=', filter.assigneeId);
    if (filter.projectId) query = query.where('t.projectId', '=', filter.projectId);
    if (filter.dueBefore) query = query.where(sql<boolean>`t.due_date < ${filter.dueBefore}::date`);
    return query.orderBy('t.createdAt', 'desc').orderBy('t.id', 'desc').limit(limit);
  }

  async findVisible(actor: Actor, taskId: string): Promise<TaskView | undefined> {
    const row = await this.db
      .selectFrom('tasks as t')
      .select(VIEW)
      .where('t.id', '=', taskId)
      .where(visibleTask(actor, 't'))
      .executeTakeFirst();
    return row && toView(row);
  }

  /** Full-text match (`tsquery` over the simple configuration); best match first, `limit` rows. */
  async search(actor: Actor, tsquery: string, status: TaskStatus | undefined, limit: number): Promise<TaskView[]> {
    const match = sql`to_tsquery('simple', ${tsquery}::text)`;
    let query = this.db
      .selectFrom('tasks as t')
      .select(VIEW)
      .where(sql<boolean>`t.search_vector @@ ${match}`)
      .where(visibleTask(actor, 't'));
    if (status) query = query.where('t.status', '=', status);
    const rows = await query
      .orderBy(sql`ts_rank(t.search_vector, ${match})`, 'desc')
      .orderBy('t.createdAt', 'desc')
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
        sql<string>`count(*) FILTER (WHERE t.due_date >= ${today} AND t.due_date < ${today} + 7 AND ${OPEN})`.as(
          'dueSoon',
        ),
      ])
      .where(visibleTask(actor, 't'));
    if (projectId) query = query.where('t.projectId', '=', projectId);
    const rows = await query.groupBy(['t.status', 't.priority']).execute();
    return rows.map((row) => ({
      status: row.status as TaskStatus,
      priority: row.priority as TaskPriority,
      count: Number(row.n),
      overdue: Number(row.overdue),
      dueNext7Days: Number(row.dueSoon),
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
        dueDate: task.dueDate === null ? null : sql<Date>`${task.dueDate}::date`,
        assigneeId: task.assigneeId,
        creatorId: task.creatorId,
        projectId: task.projectId,
      })
      .returning(INSERTED_VIEW)
      .executeTakeFirstOrThrow();
    return toView(row);
  }

  /** Applies `changes` when the actor may edit the task; undefined when it may not (or the task is gone). */
  async updateEditable(
    actor: Actor,
    taskId: string,
    changes: TaskChanges,
    executor: DbExecutor = this.db,
  ): Promise<TaskView | undefined> {
    const row = await executor
      .updateTable('tasks as t')
      .set({
        ...(changes.title !== undefined && { title: changes.title }),
        ...(changes.description !== undefined && { description: changes.description }),
        ...(changes.status !== undefined && { status: changes.status }),
        ...(changes.priority !== undefined && { priority: changes.priority }),
        ...(changes.dueDate !== undefined && {
          dueDate: changes.dueDate === null ? null : sql<Date>`${changes.dueDate}::date`,
        }),
        ...(changes.assigneeId !== undefined && { assigneeId: changes.assigneeId }),
        updatedAt: sql<Date>`now()`,
      })
      .where('t.id', '=', taskId)
      .where(editableTask(actor, 't'))
      .returning(VIEW)
      .executeTakeFirst();
    return row && toView(row);
  }

  /** Deletes the task when the actor may delete it and returns its id; undefined otherwise (invisible, not its creator, or gone). */
  async deleteDeletable(actor: Actor, taskId: string, executor: DbExecutor = this.db): Promise<string | undefined> {
    const row = await executor
      .deleteFrom('tasks as t')
      .where('t.id', '=', taskId)
      .where(deletableTask(actor, 't'))
      .returning('t.id')
      .executeTakeFirst();
    return row?.id;
  }
}

/** A task statement's row: the task's stored view. */
function toView(row: { viewJson: string }): TaskView {
  return JSON.parse(row.viewJson) as TaskView;
}

interface RenderedRow {
  items: string;
  found: number;
}
