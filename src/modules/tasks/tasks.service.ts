import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  accessDenied,
  isProjectAllowed,
  mayAssignTask,
  mayCreateWithoutProject,
} from '../../common/access/access-rules.js';
import { type Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { AuditService } from '../audit/audit.service.js';
import { ProjectsService } from '../projects/projects.service.js';
import { TASK_PRIORITIES, TASK_STATUSES, type TaskStats, type TaskStatus, type TaskView } from './task.model.js';
import {
  TasksRepository,
  type NewTask,
  type RenderedTaskList,
  type TaskChanges,
  type TaskFilter,
} from './tasks.repository.js';

export interface TaskListFilter extends TaskFilter {
  limit: number;
}

/** A new task as a caller asks for it; the id and the creator are the service's. */
export type CreateTaskInput = Omit<NewTask, 'id' | 'creatorId'>;

export type UpdateTaskInput = TaskChanges;

/**
 * Owns the task rules (orchestration; the rules themselves are the access module's: visible and editable to
 * creator and assignee, deletable by the creator). No SQL here: TasksRepository.
 */
@Injectable()
export class TasksService {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly projects: ProjectsService,
    private readonly audit: AuditService,
    @InjectDb() private readonly db: Db,
  ) {}

  /** A project filter outside the key's pins names a project that does not exist for this caller. */
  private assertProjectFilter(actor: Actor, projectId: string | undefined): void {
    if (projectId && !isProjectAllowed(actor, projectId)) throw AppException.notFound('Project');
  }

  /** Newest first, as the JSON text of the views (TasksRepository.listRendered); `found` > `limit` when cut. */
  async list(actor: Actor, filter: TaskListFilter): Promise<RenderedTaskList> {
    this.assertProjectFilter(actor, filter.projectId);
    const { limit, ...where } = filter;
    return this.tasks.listRendered(actor, where, limit);
  }

  async get(actor: Actor, taskId: string): Promise<TaskView> {
    const task = await this.tasks.findVisible(actor, taskId);
    if (!task) throw AppException.notFound('Task');
    return task;
  }

  /** Full-text match on title + description, every word as a prefix; best match first. Fetches `limit + 1`. */
  async search(actor: Actor, query: string, status: TaskStatus | undefined, limit: number): Promise<TaskView[]> {
    const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    if (words.length === 0) return [];
    const tsquery = words
      .slice(0, 32)
      .map((word) => `${word}:*`)
      .join(' & ');
    return this.tasks.search(actor, tsquery, status, limit + 1);
  }

  async stats(actor: Actor, projectId: string | undefined): Promise<TaskStats> {
    this.assertProjectFilter(actor, projectId);
    const stats: TaskStats = {
      total: 0,
      by_status: Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as TaskStats['by_status'],
      by_priority: Object.fromEntries(TASK_PRIORITIES.map((p) => [p, 0])) as TaskStats['by_priority'],
      overdue: 0,
      due_next_7_days: 0,
    };
    for (const group of await this.tasks.countGroups(actor, projectId)) {
      stats.total += group.count;
      stats.by_status[group.status] += group.count;
      stats.by_priority[group.priority] += group.count;
      stats.overdue += group.overdue;
      stats.due_next_7_days += group.dueNext7Days;
    }
    return stats;
  }

  async create(actor: Actor, input: CreateTaskInput): Promise<TaskView> {
    if (!input.projectId && !mayCreateWithoutProject(actor)) {
      throw new AppException(
        ErrorCode.InvalidArgument,
        'This credential is limited to certain projects; name one of them as project_id',
        {
          argument: 'project_id',
        },
      );
    }
    // API.md: the creator must be a member of the project (any role, after the token's cap).
    if (input.projectId && (await this.projects.roleOf(actor, input.projectId)) === null)
      throw AppException.notFound('Project');
    if (input.assigneeId) await this.assertAssignable(actor, input.projectId ?? null, input.assigneeId);
    // Tasks change only through tools: the tool call's audit entry goes into the task's own INSERT statement.
    const id = randomUUID();
    return this.tasks.insert(
      { id, ...input, creatorId: actor.userId },
      this.audit.withToolChange({ type: 'task', id }, this.db),
    );
  }

  /** Creator or assignee may update; anyone else gets not_found (the task does not exist for them). */
  async update(actor: Actor, taskId: string, input: UpdateTaskInput): Promise<TaskView> {
    const current = await this.get(actor, taskId);
    if (input.assigneeId) await this.assertAssignable(actor, current.project_id, input.assigneeId);
    if (Object.values(input).every((value) => value === undefined)) return current;
    const updated = await this.db.transaction().execute(async (trx) => {
      const row = await this.tasks.updateEditable(actor, taskId, input, trx);
      if (row) await this.audit.recordToolChange(trx, { type: 'task', id: row.id });
      return row;
    });
    if (!updated) throw AppException.notFound('Task');
    return updated;
  }

  /** Creator only: an assignee sees the task but may not delete it (403); anyone else gets 404. */
  async delete(actor: Actor, taskId: string): Promise<{ id: string; deleted: true }> {
    const deletedId = await this.db.transaction().execute(async (trx) => {
      const id = await this.tasks.deleteDeletable(actor, taskId, trx);
      if (id) await this.audit.recordToolChange(trx, { type: 'task', id });
      return id;
    });
    if (deletedId) return { id: deletedId, deleted: true };
    const visible = (await this.tasks.findVisible(actor, taskId)) !== undefined;
    throw accessDenied(visible, 'Task', 'Only the creator of a task may delete it');
  }

  /** 400 on assignee_id unless the access rule allows the assignment (an unknown user is simply not a member). */
  private async assertAssignable(actor: Actor, projectId: string | null, assigneeId: string): Promise<void> {
    const role = projectId === null ? null : await this.projects.memberRoleOf(projectId, assigneeId);
    if (mayAssignTask(actor, projectId, assigneeId, role)) return;
    throw new AppException(
      ErrorCode.InvalidArgument,
      projectId === null
        ? 'A task without a project can be assigned only to yourself; put the task in a project to assign it to a member'
        : "assignee_id must name a member of the task's project",
      { argument: 'assignee_id' },
    );
  }
}
