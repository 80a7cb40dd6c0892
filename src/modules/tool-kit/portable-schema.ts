/**
 * A JSON Schema rewritten for the clients that validate tool schemas strictly (the Inspector's `--strict` portability
 * check, several model providers): a type list such as `["string", "null"]` becomes `anyOf` of one schema per type,
 * the type-specific keywords (format, enum, minimum, …) staying with the non-null member. Everything else is kept.
 */
export function portableSchema<T>(schema: T): T {
  if (Array.isArray(schema)) return (schema as unknown[]).map((item) => portableSchema(item)) as T;
  if (typeof schema !== 'object' || schema === null) return schema;
  const source = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source)) {
    out[key] =
      key === 'const' || key === 'default' || key === 'enum' || key === 'examples' ? value : portableSchema(value);
  }
  if (!Array.isArray(out.type)) return out as T;
  const types = out.type as string[];
  const { type: _type, ...rest } = out;
  const shared: Record<string, unknown> = {};
  const specific: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) (ANNOTATIONS.has(key) ? shared : specific)[key] = value;
  const members = types.map((type) => (type === 'null' ? { type: 'null' } : { type, ...specific }));
  if (members.length === 1) return { ...shared, ...members[0] } as T;
  return { ...shared, anyOf: members } as T;
}

/** Keywords that describe the whole value rather than one of its types. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$comment',
]);
