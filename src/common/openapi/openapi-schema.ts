import { ERROR_CODE_MAPPING } from '../errors/error-code.js';

/** A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1). */
export type JsonSchema = Record<string, unknown>;

/** A schema with a name: it becomes `components.schemas.<name>` and is referenced, never copied. */
export interface NamedSchema {
  readonly name: string;
  readonly $ref: string;
}

const registry = new Map<string, JsonSchema>();

/**
 * Declares a named schema. Modules declare their response shapes beside their controllers (`*.schemas.ts`);
 * the OpenAPI builder publishes every declared one under `components.schemas`. Two different schemas under
 * one name is a programming error and fails at import time.
 */
export function named(name: string, schema: JsonSchema): NamedSchema {
  const existing = registry.get(name);
  if (existing && JSON.stringify(existing) !== JSON.stringify(schema)) {
    throw new Error(`Two different OpenAPI schemas are named "${name}"`);
  }
  registry.set(name, schema);
  return Object.freeze({ name, $ref: `#/components/schemas/${name}` });
}

/** Every named schema declared so far (the modules' schema files are imported by their controllers). */
export function namedSchemas(): Record<string, JsonSchema> {
  return Object.fromEntries([...registry.entries()].sort(([a], [b]) => a.localeCompare(b)));
}

export function ref(schema: NamedSchema): JsonSchema {
  return { $ref: schema.$ref };
}

/** A schema or a reference to a named one. */
export function schemaOf(schema: NamedSchema | JsonSchema): JsonSchema {
  return isNamed(schema) ? ref(schema) : schema;
}

function isNamed(schema: NamedSchema | JsonSchema): schema is NamedSchema {
  return typeof (schema as NamedSchema).$ref === 'string' && typeof (schema as NamedSchema).name === 'string';
}

export const nullable = (schema: NamedSchema | JsonSchema): JsonSchema => ({
  anyOf: [schemaOf(schema), { type: 'null' }],
});

/** An object whose listed properties are all present (the services build every field, null included). */
export function object(
  properties: Record<string, NamedSchema | JsonSchema>,
  optional: readonly string[] = [],
): JsonSchema {
  const props = Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, schemaOf(value)]));
  return { type: 'object', properties: props, required: Object.keys(props).filter((key) => !optional.includes(key)) };
}

export const uuid: JsonSchema = { type: 'string', format: 'uuid' };
export const timestamp: JsonSchema = {
  type: 'string',
  format: 'date-time',
  description: 'ISO-8601 UTC',
  examples: ['2026-11-21T10:00:00.000Z'],
};
export const stringArray: JsonSchema = { type: 'array', items: { type: 'string' } };

/** Area B list page: `{items, nextCursor}`, `nextCursor` null at the end. */
export function page(item: NamedSchema | JsonSchema): JsonSchema {
  return object({
    items: { type: 'array', items: schemaOf(item) },
    nextCursor: {
      type: ['string', 'null'],
      description: 'Opaque; pass as `cursor` for the next page. null at the end.',
    },
  });
}

const unique = (values: string[]): string[] => [...new Set(values)].sort();

/** The codes come from the one exhaustive error table, so the document cannot drift from the filter. */
export const BACKEND_ERROR_CODES = unique(Object.values(ERROR_CODE_MAPPING).map((mapping) => mapping.backendCode));
export const TOOL_API_ERROR_CODES = unique(Object.values(ERROR_CODE_MAPPING).map((mapping) => mapping.toolApiCode));

/** Area B codes a status can carry (the filter answers 404 for unknown routes, 500 for anything unforeseen). */
export function backendCodesFor(status: number): string[] {
  return unique(
    Object.values(ERROR_CODE_MAPPING)
      .filter((m) => m.status === status)
      .map((m) => m.backendCode),
  );
}

export function toolApiCodesFor(status: number): string[] {
  return unique(
    Object.values(ERROR_CODE_MAPPING)
      .filter((m) => m.status === status)
      .map((m) => m.toolApiCode),
  );
}

export const TraceId = named('TraceId', {
  type: 'string',
  description: 'The request id: also the X-Request-Id header and the id in the logs',
});

/** `{code, message, details}`: the error object both areas share, with each area's codes. */
function errorObject(codes: string[], details: JsonSchema): JsonSchema {
  return object({ code: { type: 'string', enum: codes }, message: { type: 'string' }, details });
}

export const BackendErrorBody = named('BackendError', {
  ...object({
    success: { const: false },
    data: { type: 'null' },
    error: errorObject(BACKEND_ERROR_CODES, {
      description:
        'VALIDATION_FAILED: [{field?, message}]; CONFLICT on upload: {existingId}; RATE_LIMITED: {retryAfterSeconds}; NOT_FOUND on ingest: the offending ids; else [] or an object',
    }),
    traceId: TraceId,
  }),
  description: 'Area B error envelope.',
});

export const ToolApiErrorBody = named('ToolApiError', {
  ...object({
    error: errorObject(TOOL_API_ERROR_CODES, {
      type: 'object',
      description:
        'invalid_argument: {argument, allowed?}; missing_argument: {argument}; insufficient_scope: {required_scope}; upstream_error: {status}; rate_limited: {retry_after_seconds}',
    }),
    traceId: TraceId,
  }),
  description: 'Area A error body (bare, no envelope).',
});

export const SuccessEnvelope = named('Envelope', {
  type: 'object',
  description: 'Area B success envelope; each operation narrows `data` to its own type (allOf with this schema).',
  required: ['success', 'data', 'error', 'traceId'],
  properties: { success: { const: true }, data: {}, error: { type: 'null' }, traceId: ref(TraceId) },
});

/** The Area B success envelope around one route's `data`: the generic `Envelope` narrowed with allOf. */
export function envelope(data: NamedSchema | JsonSchema): JsonSchema {
  return {
    allOf: [ref(SuccessEnvelope), { type: 'object', required: ['data'], properties: { data: schemaOf(data) } }],
  };
}
