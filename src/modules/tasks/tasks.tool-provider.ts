import { Injectable } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import { ToolList } from '../tool-kit/tool-definition.js';
import { filterOrUndefined, param, type ToolArgs } from '../tool-kit/tool-parameters.js';
import { Tool, ToolProvider } from '../tool-kit/tool.decorators.js';
import {
  DELETED_JSON_SCHEMA,
  TASK_JSON_SCHEMA,
  TASK_PRIORITIES,
  TASK_STATS_JSON_SCHEMA,
  TASK_STATUSES,
} from './task.model.js';
import { TasksService } from './tasks.service.js';

const TASK_LIST_SCHEMA = { type: 'array', items: TASK_JSON_SCHEMA };
const taskId = param.str({ description: 'The task id (UUID)', required: true, format: 'uuid' });
const READ = { readOnlyHint: true, openWorldHint: false } as const;
/** A task's text may be written by its creator and by its assignee (both may update it). */
const TASK_TEXT = { kind: 'written', object: 'task', id: 'id', writers: ['creator_id', 'assignee_id'] } as const;
const NO_TEXT = { kind: 'none' } as const;

const LIST_TASKS = {
  status: param.str({ description: 'Only tasks in this status', default: '', enum: TASK_STATUSES }),
  assignee_id: param.str({ description: 'Only tasks assigned to this user id', default: '', format: 'uuid' }),
  project_id: param.str({ description: 'Only tasks of this project id', default: '', format: 'uuid' }),
  priority: param.str({ description: 'Only tasks with this priority', default: '', enum: TASK_PRIORITIES }),
  due_before: param.date({ description: 'Only tasks due before this date (YYYY-MM-DD)', default: '' }),
  limit: param.int({ description: 'Maximum number of tasks', default: 50, minimum: 1, maximum: 200 }),
};
const ONE_TASK = { task_id: taskId };
const SEARCH_TASKS = {
  query: param.str({ description: 'Words to look for', required: true, minLength: 1, maxLength: 500 }),
  status: param.str({ description: 'Only tasks in this status', default: '', enum: TASK_STATUSES }),
  limit: param.int({ description: 'Maximum number of tasks', default: 20, minimum: 1, maximum: 100 }),
};
const TASK_STATS = {
  project_id: param.str({ description: 'Only tasks of this project id', default: '', format: 'uuid' }),
};
const CREATE_TASK = {
  title: param.str({ description: 'Title (1..200 chars)', required: true, minLength: 1, maxLength: 200 }),
  description: param.str({
    description: 'Details (up to 20,000 chars)',
    default: '',
    maxLength: 20_000,
    audit: 'omit',
  }),
  priority: param.str({ description: 'Priority', default: 'medium', enum: TASK_PRIORITIES }),
  status: param.str({ description: 'Status', default: 'todo', enum: TASK_STATUSES }),
  due_date: param.date({ description: 'Due date (YYYY-MM-DD) or null', default: null, nullable: true }),
  assignee_id: param.str({
    description: "Id of a member of the task's project to assign (yourself for a task without a project), or null",
    default: null,
    nullable: true,
    format: 'uuid',
  }),
  project_id: param.str({
    description: 'Id of a project you are a member of, or null',
    default: null,
    nullable: true,
    format: 'uuid',
  }),
};
const UPDATE_TASK = {
  task_id: taskId,
  title: param.str({ description: 'New title (1..200 chars)', minLength: 1, maxLength: 200 }),
  description: param.str({ description: 'New details', maxLength: 20_000, audit: 'omit' }),
  status: param.str({ description: 'New status', enum: TASK_STATUSES }),
  priority: param.str({ description: 'New priority', enum: TASK_PRIORITIES }),
  due_date: param.date({ description: 'New due date (YYYY-MM-DD), or null to clear', nullable: true }),
  assignee_id: param.str({
    description: "Id of a member of the task's project (yourself for a task without a project), or null to unassign",
    nullable: true,
    format: 'uuid',
  }),
};

/** The seven task tools: thin adapters from tool arguments to TasksService, which owns every rule. */
@ToolProvider({
  position: 100,
  toolset: 'tasks',
  instructions: 'Task tools see the tasks you created or are assigned to.',
  scopes: [
    { name: 'tasks:read', group: 'Tasks', allows: 'List, statistics and search of tasks' },
    { name: 'tasks:write', group: 'Tasks', allows: 'Create, update and delete tasks' },
  ],
})
@Injectable()
export class TasksToolProvider {
  constructor(private readonly tasks: TasksService) {}

  @Tool({
    name: 'list_tasks',
    title: 'List tasks',
    description:
      'Tasks you created or are assigned to, newest first. Filters are optional; an empty string means no filter.',
    scope: 'tasks:read',
    annotations: READ,
    output: TASK_LIST_SCHEMA,
    provenance: TASK_TEXT,
    parameters: LIST_TASKS,
  })
  async listTasks(args: ToolArgs<typeof LIST_TASKS>, actor: Actor): Promise<ToolList> {
    const { json, found } = await this.tasks.list(actor, {
      status: filterOrUndefined(args.status),
      assigneeId: filterOrUndefined(args.assignee_id),
      projectId: filterOrUndefined(args.project_id),
      priority: filterOrUndefined(args.priority),
      dueBefore: filterOrUndefined(args.due_before),
      limit: args.limit,
    });
    return ToolList.fromJson(json, found, args.limit);
  }

  @Tool({
    name: 'get_task',
    title: 'Get a task',
    description: 'One task you created or are assigned to.',
    scope: 'tasks:read',
    annotations: READ,
    output: TASK_JSON_SCHEMA,
    provenance: TASK_TEXT,
    parameters: ONE_TASK,
  })
  getTask(args: ToolArgs<typeof ONE_TASK>, actor: Actor) {
    return this.tasks.get(actor, args.task_id);
  }

  @Tool({
    name: 'search_tasks',
    title: 'Search tasks',
    description:
      'Full-text search over the title and description of your tasks (every word matches as a prefix), best match first.',
    scope: 'tasks:read',
    annotations: READ,
    output: TASK_LIST_SCHEMA,
    provenance: TASK_TEXT,
    parameters: SEARCH_TASKS,
  })
  async searchTasks(args: ToolArgs<typeof SEARCH_TASKS>, actor: Actor): Promise<ToolList> {
    const rows = await this.tasks.search(actor, args.query, filterOrUndefined(args.status), args.limit);
    return ToolList.fromRows(rows, args.limit);
  }

  @Tool({
    name: 'task_stats',
    title: 'Task statistics',
    description:
      'Counts over your tasks: total, by status, by priority, overdue (due before today) and due in the next 7 days (today and the 6 days after), open tasks only, UTC dates.',
    scope: 'tasks:read',
    annotations: READ,
    output: TASK_STATS_JSON_SCHEMA,
    provenance: NO_TEXT,
    parameters: TASK_STATS,
  })
  taskStats(args: ToolArgs<typeof TASK_STATS>, actor: Actor) {
    return this.tasks.stats(actor, filterOrUndefined(args.project_id));
  }

  @Tool({
    name: 'create_task',
    title: 'Create a task',
    description: 'Creates a task with you as its creator. A project_id needs you to be a member of that project.',
    scope: 'tasks:write',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    output: TASK_JSON_SCHEMA,
    provenance: TASK_TEXT,
    parameters: CREATE_TASK,
  })
  createTask(args: ToolArgs<typeof CREATE_TASK>, actor: Actor) {
    return this.tasks.create(actor, {
      title: args.title,
      description: args.description,
      priority: args.priority,
      status: args.status,
      dueDate: args.due_date,
      assigneeId: args.assignee_id,
      projectId: args.project_id,
    });
  }

  @Tool({
    name: 'update_task',
    title: 'Update a task',
    description:
      'Changes any of title, description, status, priority, due_date, assignee_id. The creator or the assignee may update; null clears due_date or assignee_id.',
    scope: 'tasks:write',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    output: TASK_JSON_SCHEMA,
    provenance: TASK_TEXT,
    parameters: UPDATE_TASK,
  })
  updateTask(args: ToolArgs<typeof UPDATE_TASK>, actor: Actor) {
    return this.tasks.update(actor, args.task_id, {
      title: args.title,
      description: args.description,
      status: args.status,
      priority: args.priority,
      dueDate: args.due_date,
      assigneeId: args.assignee_id,
    });
  }

  @Tool({
    name: 'delete_task',
    title: 'Delete a task',
    description: 'Deletes a task. Only its creator may delete it.',
    scope: 'tasks:write',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    output: DELETED_JSON_SCHEMA,
    provenance: NO_TEXT,
    parameters: ONE_TASK,
  })
  deleteTask(args: ToolArgs<typeof ONE_TASK>, actor: Actor) {
    return this.tasks.delete(actor, args.task_id);
  }
}
