export const TASK_STATUSES = ['todo', 'in_progress', 'in_review', 'done', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TASK_PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
export type TaskPriority = (typeof TASK_PRIORITIES)[number];

/** The Area A task object (snake_case, as the seed). */
export interface TaskView {
  id: string;
  title: string;
  description: string;
  status: TaskStatus;
  priority: TaskPriority;
  due_date: string | null;
  assignee_id: string | null;
  creator_id: string;
  project_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface TaskStats {
  total: number;
  by_status: Record<TaskStatus, number>;
  by_priority: Record<TaskPriority, number>;
  overdue: number;
  due_next_7_days: number;
}

const nullableUuid = { type: ['string', 'null'], format: 'uuid' };

export const TASK_JSON_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    title: { type: 'string' },
    description: { type: 'string' },
    status: { type: 'string', enum: [...TASK_STATUSES] },
    priority: { type: 'string', enum: [...TASK_PRIORITIES] },
    due_date: { type: ['string', 'null'], format: 'date' },
    assignee_id: nullableUuid,
    creator_id: { type: 'string', format: 'uuid' },
    project_id: nullableUuid,
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
  required: [
    'id',
    'title',
    'description',
    'status',
    'priority',
    'due_date',
    'assignee_id',
    'creator_id',
    'project_id',
    'created_at',
    'updated_at',
  ],
  additionalProperties: false,
};

const countsOf = (names: readonly string[]) => ({
  type: 'object',
  properties: Object.fromEntries(names.map((name) => [name, { type: 'integer' }])),
  required: [...names],
});

export const TASK_STATS_JSON_SCHEMA = {
  type: 'object',
  properties: {
    total: { type: 'integer' },
    by_status: countsOf(TASK_STATUSES),
    by_priority: countsOf(TASK_PRIORITIES),
    overdue: { type: 'integer' },
    due_next_7_days: { type: 'integer' },
  },
  required: ['total', 'by_status', 'by_priority', 'overdue', 'due_next_7_days'],
};

export const DELETED_JSON_SCHEMA = {
  type: 'object',
  properties: { id: { type: 'string', format: 'uuid' }, deleted: { type: 'boolean', const: true } },
  required: ['id', 'deleted'],
};
