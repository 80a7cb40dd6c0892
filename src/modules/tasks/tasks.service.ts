import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { actorSqlValues, isProjectAllowed, mayCreateWithoutProject, visibleTaskSql } from '../../common/access/access-rules.js';
import { type Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { returningRows } from '../../database/returning-rows.js';
import { UsersService } from '../auth/users.service.js';
import { ProjectAccess } from './project-access.js';
import { TASK_PRIORITIES, TASK_STATUSES, type TaskPriority, type TaskStats, type TaskStatus, type TaskView } from './task.model.js';

export interface TaskListFilter {
  status?: TaskStatus;
  assigneeId?: string;
  projectId?: string;
  priority?: TaskPriority;
  /** YYYY-MM-DD: due strictly before this day. */
  dueBefore?: string;
  limit: number;
}

export interface CreateTaskInput {
  title: string;
  description: string;
  status: TaskStatus;
  priority: TaskPriority;
  dueDate: string | null;
  assigneeId: string | null;
  projectId: string | null;
}

export type UpdateTaskInput = Partial<Pick<CreateTaskInput, 'title' | 'description' | 'status' | 'priority' | 'dueDate' | 'assigneeId'>>;

/** A row as the queries below select it: the view's fields, with the timestamps not yet rendered. */
type TaskRow = Omit<TaskView, 'created_at' | 'updated_at'> & { created_at: Date; updated_at: Date };

// due_date comes back as text so no timezone can shift a calendar date.
const COLUMNS = `t.id, t.title, t.description, t.status, t.priority, t.due_date::text AS due_date, t.assignee_id, t.creator_id, t.project_id, t.created_at, t.updated_at`;

/**
 * Visibility as SQL (the access rules): $1 = the actor's user id, $2 = its pinned project ids or NULL.
 * Every query below starts from this; none can return a row it would exclude.
 */
const VISIBLE = visibleTaskSql('t', { user: '$1', pins: '$2' });

function toView(row: TaskRow): TaskView {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    status: row.status,
    priority: row.priority,
    due_date: row.due_date,
    assignee_id: row.assignee_id,
    creator_id: row.creator_id,
    project_id: row.project_id,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** Owns the task rules: visible = creator or assignee; update = creator or assignee; delete = creator only. */
@Injectable()
export class TasksService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly users: UsersService,
    private readonly projectAccess: ProjectAccess,
  ) {}

  private scope(actor: Actor): unknown[] {
    return actorSqlValues(actor);
  }

  /** A project filter outside the key's pins names a project that does not exist for this caller. */
  private assertProjectFilter(actor: Actor, projectId: string | undefined): void {
    if (projectId && !isProjectAllowed(actor, projectId)) throw AppException.notFound('Project');
  }

  /** Newest first; fetches `limit + 1` so the caller can tell a truncated list. */
  async list(actor: Actor, filter: TaskListFilter): Promise<TaskView[]> {
    this.assertProjectFilter(actor, filter.projectId);
    const params = this.scope(actor);
    const where = [VISIBLE];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (filter.status) add('t.status = ?', filter.status);
    if (filter.priority) add('t.priority = ?', filter.priority);
    if (filter.assigneeId) add('t.assignee_id = ?', filter.assigneeId);
    if (filter.projectId) add('t.project_id = ?', filter.projectId);
    if (filter.dueBefore) add('t.due_date < ?::date', filter.dueBefore);
    params.push(filter.limit + 1);
    const rows: TaskRow[] = await this.dataSource.query(
      `SELECT ${COLUMNS} FROM tasks t WHERE ${where.join(' AND ')} ORDER BY t.created_at DESC, t.id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(toView);
  }

  async get(actor: Actor, taskId: string): Promise<TaskView> {
    const rows: TaskRow[] = await this.dataSource.query(`SELECT ${COLUMNS} FROM tasks t WHERE t.id = $3 AND ${VISIBLE}`, [...this.scope(actor), taskId]);
    if (!rows[0]) throw AppException.notFound('Task');
    return toView(rows[0]);
  }

  /** Full-text match on title + description, every word as a prefix; best match first. Fetches `limit + 1`. */
  async search(actor: Actor, query: string, status: TaskStatus | undefined, limit: number): Promise<TaskView[]> {
    const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    if (words.length === 0) return [];
    const tsquery = words.slice(0, 32).map((word) => `${word}:*`).join(' & ');
    const params = [...this.scope(actor), tsquery, limit + 1];
    let statusSql = '';
    if (status) {
      params.push(status);
      statusSql = `AND t.status = $${params.length}`;
    }
    const rows: TaskRow[] = await this.dataSource.query(
      `SELECT ${COLUMNS} FROM tasks t
       WHERE t.search_vector @@ to_tsquery('simple', $3::text) AND ${VISIBLE} ${statusSql}
       ORDER BY ts_rank(t.search_vector, to_tsquery('simple', $3::text)) DESC, t.created_at DESC, t.id DESC LIMIT $4::int`,
      params,
    );
    return rows.map(toView);
  }

  async stats(actor: Actor, projectId: string | undefined): Promise<TaskStats> {
    this.assertProjectFilter(actor, projectId);
    const params = this.scope(actor);
    let projectSql = '';
    if (projectId) {
      params.push(projectId);
      projectSql = `AND t.project_id = $${params.length}`;
    }
    const rows: { status: TaskStatus; priority: TaskPriority; n: string; overdue: string; due_soon: string }[] = await this.dataSource.query(
      `WITH today AS (SELECT (now() AT TIME ZONE 'UTC')::date AS d)
       SELECT t.status, t.priority, count(*) AS n,
              count(*) FILTER (WHERE t.due_date < today.d AND t.status NOT IN ('done', 'cancelled')) AS overdue,
              -- The next 7 days are today and the 6 after it.
              count(*) FILTER (WHERE t.due_date >= today.d AND t.due_date < today.d + 7 AND t.status NOT IN ('done', 'cancelled')) AS due_soon
       FROM tasks t, today WHERE ${VISIBLE} ${projectSql}
       GROUP BY t.status, t.priority`,
      params,
    );
    const stats: TaskStats = {
      total: 0,
      by_status: Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as TaskStats['by_status'],
      by_priority: Object.fromEntries(TASK_PRIORITIES.map((p) => [p, 0])) as TaskStats['by_priority'],
      overdue: 0,
      due_next_7_days: 0,
    };
    for (const row of rows) {
      const n = Number(row.n);
      stats.total += n;
      stats.by_status[row.status] += n;
      stats.by_priority[row.priority] += n;
      stats.overdue += Number(row.overdue);
      stats.due_next_7_days += Number(row.due_soon);
    }
    return stats;
  }

  async create(actor: Actor, input: CreateTaskInput): Promise<TaskView> {
    if (!input.projectId && !mayCreateWithoutProject(actor)) {
      throw new AppException(ErrorCode.InvalidArgument, 'This credential is limited to certain projects; name one of them as project_id', {
        argument: 'project_id',
      });
    }
    if (input.projectId && !(await this.projectAccess.isMember(actor, input.projectId))) throw AppException.notFound('Project');
    if (input.assigneeId) await this.assertUserExists(input.assigneeId);
    const rows: TaskRow[] = await this.dataSource.query(
      `INSERT INTO tasks AS t (id, title, description, status, priority, due_date, assignee_id, creator_id, project_id)
       VALUES ($1, $2, $3, $4, $5, $6::date, $7, $8, $9) RETURNING ${COLUMNS}`,
      [randomUUID(), input.title, input.description, input.status, input.priority, input.dueDate, input.assigneeId, actor.userId, input.projectId],
    );
    return toView(rows[0]);
  }

  /** Creator or assignee may update; anyone else gets not_found (the task does not exist for them). */
  async update(actor: Actor, taskId: string, input: UpdateTaskInput): Promise<TaskView> {
    const current = await this.get(actor, taskId);
    if (input.assigneeId) await this.assertUserExists(input.assigneeId);
    const sets: string[] = [];
    const params: unknown[] = [...this.scope(actor), taskId];
    const set = (column: string, value: unknown, cast = '') => {
      params.push(value);
      sets.push(`${column} = $${params.length}${cast}`);
    };
    if (input.title !== undefined) set('title', input.title);
    if (input.description !== undefined) set('description', input.description);
    if (input.status !== undefined) set('status', input.status);
    if (input.priority !== undefined) set('priority', input.priority);
    if (input.dueDate !== undefined) set('due_date', input.dueDate, '::date');
    if (input.assigneeId !== undefined) set('assignee_id', input.assigneeId);
    if (sets.length === 0) return current;
    const rows = returningRows<TaskRow>(
      await this.dataSource.query(`UPDATE tasks t SET ${sets.join(', ')}, updated_at = now() WHERE t.id = $3 AND ${VISIBLE} RETURNING ${COLUMNS}`, params),
    );
    if (!rows[0]) throw AppException.notFound('Task');
    return toView(rows[0]);
  }

  /** Creator only: an assignee sees the task but may not delete it (403); anyone else gets 404. */
  async delete(actor: Actor, taskId: string): Promise<{ id: string; deleted: true }> {
    const rows = returningRows<{ id: string }>(
      await this.dataSource.query(`DELETE FROM tasks t WHERE t.id = $3 AND t.creator_id = $1 AND ${VISIBLE} RETURNING t.id`, [...this.scope(actor), taskId]),
    );
    if (rows[0]) return { id: rows[0].id, deleted: true };
    await this.get(actor, taskId); // 404 when it is not visible at all
    throw AppException.forbidden('Only the creator of a task may delete it');
  }

  private async assertUserExists(userId: string): Promise<void> {
    if (!(await this.users.findById(userId))) {
      throw new AppException(ErrorCode.InvalidArgument, 'assignee_id does not name an existing user', { argument: 'assignee_id' });
    }
  }
}
