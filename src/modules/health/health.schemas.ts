import { named, object } from '../../common/openapi/openapi-schema.js';

export const DependencyCheckSchema = named(
  'DependencyCheck',
  object(
    {
      status: { type: 'string', enum: ['up', 'down'] },
      latencyMs: { type: 'number', minimum: 0 },
      message: { type: 'string' },
    },
    ['message'],
  ),
);

const checks = {
  type: 'object',
  description: 'database, vector, queue, …',
  additionalProperties: { $ref: DependencyCheckSchema.$ref },
};

export const HealthSchema = named(
  'Health',
  object({
    status: { type: 'string', enum: ['ok', 'degraded'] },
    checks,
    version: { type: 'string' },
    uptimeSeconds: { type: 'integer', minimum: 0 },
  }),
);

export const ReadySchema = named('Ready', object({ status: { const: 'ready' }, checks }));
