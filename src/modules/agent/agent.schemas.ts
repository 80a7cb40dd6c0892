import { named, nullable, object, stringArray, timestamp, uuid } from '../../common/openapi/openapi-schema.js';
import { AGENT_RUN_APPROVALS, AGENT_RUN_STATUSES } from './agent-run.types.js';

const status = { type: 'string', enum: [...AGENT_RUN_STATUSES] };

export const AgentStepSchema = named(
  'AgentStep',
  object(
    {
      index: { type: 'integer', minimum: 0 },
      type: { type: 'string', enum: ['tool_call', 'message'] },
      status: {
        type: 'string',
        enum: ['started', 'ok', 'error', 'unknown', 'awaiting_approval', 'approved', 'rejected'],
      },
      tool: { type: 'string' },
      arguments: { description: 'The tool arguments (tool_call steps)' },
      resultSummary: { type: 'string' },
      content: { type: ['string', 'null'], description: 'The model’s message (message steps)' },
      approval: object(
        {
          decision: { type: 'string', enum: ['approve', 'reject'] },
          decidedBy: {
            ...object({
              userId: uuid,
              via: { type: 'string', enum: ['user_token', 'project_token'] },
              credentialId: nullable(uuid),
            }),
            description:
              'The credential that decided (credentialId: the project session token; null for a user access token)',
          },
          decidedAt: timestamp,
          originalArguments: {},
        },
        ['originalArguments'],
      ),
      untrusted: {
        ...object({ target: { type: 'string' } }),
        description:
          "Set when this result carried text the run's starter did not write (target: `document:<id>`, `task:<id>`, `github:<owner/name>`)",
      },
      startedAt: timestamp,
      finishedAt: nullable(timestamp),
    },
    ['tool', 'arguments', 'resultSummary', 'content', 'approval', 'untrusted'],
  ),
);

const runFields = {
  jobId: uuid,
  projectId: uuid,
  status,
  provider: { type: 'string' },
  model: { type: 'string' },
  tools: { ...nullable(stringArray), description: 'The tool allowlist (null: every tool the caller may use)' },
  maxSteps: { type: 'integer', minimum: 1, maximum: 20 },
  approval: {
    type: 'string',
    enum: [...AGENT_RUN_APPROVALS],
    description: 'auto: writes wait for approval once untrustedSince is set; writes: always; none: never',
  },
  untrustedSince: {
    ...nullable(
      object({ stepIndex: { type: 'integer', minimum: 0 }, tool: { type: 'string' }, target: { type: 'string' } }),
    ),
    description:
      'The first step that read text the starter did not write (null while the run has read only its own text)',
  },
  input: { type: 'string' },
  output: { type: ['string', 'null'] },
  error: { type: ['string', 'null'] },
  createdAt: timestamp,
  startedAt: nullable(timestamp),
  finishedAt: nullable(timestamp),
};

export const AgentRunSchema = named(
  'AgentRun',
  object(
    {
      ...runFields,
      steps: { type: 'array', items: { $ref: AgentStepSchema.$ref } },
      webhook: object({
        url: { type: 'string', format: 'uri' },
        deliveries: {
          type: 'array',
          items: object({
            deliveryId: { type: 'string' },
            type: { type: 'string' },
            status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
            attempts: { type: 'integer' },
            lastStatusCode: { type: ['integer', 'null'] },
            lastError: { type: ['string', 'null'] },
            occurredAt: timestamp,
            deliveredAt: nullable(timestamp),
          }),
        },
      }),
    },
    ['webhook'],
  ),
);

export const AgentRunSummarySchema = named(
  'AgentRunSummary',
  object({ ...runFields, stepCount: { type: 'integer', minimum: 0 } }),
);

export const AgentRunStartedSchema = named(
  'AgentRunStarted',
  object(
    {
      jobId: uuid,
      status: { const: 'queued' },
      webhookSecret: { type: 'string', description: 'With a webhookUrl: the signing secret, shown once' },
    },
    ['webhookSecret'],
  ),
);

export const AgentRunStateSchema = named('AgentRunState', object({ jobId: uuid, status }));
