import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { isRepoFullName, REPO_FULL_NAME_PATTERN } from '../../common/validation/repo.js';
import { isUuid, UUID_PATTERN } from '../../common/validation/uuid.js';

/** The seed's parameter types, as the descriptor names them. */
export type ParamType = 'str' | 'int' | 'bool' | 'date' | 'list[str]';
export const PARAM_TYPES: readonly ParamType[] = ['str', 'int', 'bool', 'date', 'list[str]'];

/** Phantom keys: they exist only in the type, so a handler's `args` type follows from the definition. */
declare const VALUE: unique symbol;
declare const PRESENT: unique symbol;

/**
 * One parameter, defined once. The same object yields argument validation, the seed-style descriptor
 * and the JSON Schema, so the three can never disagree; its type parameters give the handler's type:
 * `T` is the validated value, `Present` whether the argument is always there (required or defaulted).
 */
export interface ParamSpec<T = unknown, Present extends boolean = boolean> extends ParamRules {
  readonly [VALUE]?: T;
  readonly [PRESENT]?: Present;
}

/** What a parameter definition holds at run time. */
export interface ParamRules {
  type: ParamType;
  description: string;
  required: boolean;
  /** Value used when the argument is absent; `undefined` = stays absent (e.g. "any of" on update). */
  default?: unknown;
  /** Explicit `null` is accepted (clears the value, or "none"). */
  nullable: boolean;
  /** `""` is accepted and means "no filter". */
  allowEmpty: boolean;
  /** Surrounding whitespace is removed before the length checks (a blank value is then empty; a blank list item is refused). */
  trim?: boolean;
  enum?: readonly string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  format?: 'uuid' | 'repo';
  /** `omit`: the audit log records that the argument was given, never its value (secrets, document bodies). */
  audit?: 'omit';
}

// `any` (not unknown) so that every ParamSpec<T, P> is a ToolParameters member whatever its T.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ToolParameters = Readonly<Record<string, ParamSpec<any, boolean>>>;

type ValueOf<S> = S extends ParamSpec<infer T, boolean> ? T : never;
type PresentKeys<P> = { [K in keyof P]: P[K] extends ParamSpec<unknown, true> ? K : never }[keyof P];
type Flatten<T> = { [K in keyof T]: T[K] } & {};

/**
 * What a handler receives for parameters `P`, after validation: required and defaulted arguments are
 * always there, the others optional; enums are their literal unions, `""` included where it means
 * "no filter", `null` where the parameter is nullable, ints are numbers.
 */
export type ToolArgs<P extends ToolParameters> = Flatten<
  { readonly [K in PresentKeys<P>]: ValueOf<P[K]> } & {
    readonly [K in Exclude<keyof P, PresentKeys<P>>]?: ValueOf<P[K]>;
  }
>;

interface CommonOptions {
  description: string;
  required?: boolean;
  nullable?: boolean;
  /** See ParamRules.audit. */
  audit?: 'omit';
}

/** Always present when required or given a default (`default: null` counts: the value is then null). */
type IsPresent<O> = O extends { required: true }
  ? true
  : O extends { default: infer D }
    ? [D] extends [undefined]
      ? false
      : true
    : false;
type OrNull<O> = O extends { nullable: true } ? null : never;
/** `""` is a value when it is allowed ("no filter"): explicitly, or by being the default. */
type OrEmpty<O> = O extends { allowEmpty: true } ? '' : O extends { default: '' } ? '' : never;
type StrValue<O> = (O extends { enum: readonly (infer E extends string)[] } ? E : string) | OrEmpty<O> | OrNull<O>;

interface StrOptions extends CommonOptions {
  default?: string | null;
  enum?: readonly string[];
  minLength?: number;
  maxLength?: number;
  format?: 'uuid' | 'repo';
  allowEmpty?: boolean;
  trim?: boolean;
}
interface IntOptions extends CommonOptions {
  default?: number | null;
  minimum?: number;
  maximum?: number;
}
interface BoolOptions extends CommonOptions {
  default?: boolean | null;
}
interface DateOptions extends CommonOptions {
  default?: string | null;
  allowEmpty?: boolean;
}
interface StrListOptions extends CommonOptions {
  default?: string[] | null;
  maxItems?: number;
  maxLength?: number;
  trim?: boolean;
}

function spec<T, Present extends boolean>(
  type: ParamType,
  options: CommonOptions & Partial<ParamRules>,
): ParamSpec<T, Present> {
  const { required = false, nullable = false, ...rest } = options;
  return { allowEmpty: false, ...rest, type, required, nullable };
}

/**
 * Builders for tool parameters: `param.str({description, default: ''})`. The options are read as
 * literal types (`const O`), so `required: true`, a default, an enum or `nullable: true` show in `ToolArgs`.
 */
export const param = {
  str<const O extends StrOptions>(options: O): ParamSpec<StrValue<O>, IsPresent<O>> {
    return spec('str', { ...options, allowEmpty: options.allowEmpty ?? options.default === '' });
  },
  int<const O extends IntOptions>(options: O): ParamSpec<number | OrNull<O>, IsPresent<O>> {
    return spec('int', options);
  },
  bool<const O extends BoolOptions>(options: O): ParamSpec<boolean | OrNull<O>, IsPresent<O>> {
    return spec('bool', options);
  },
  /** A calendar date `YYYY-MM-DD`, as a string. */
  date<const O extends DateOptions>(options: O): ParamSpec<string | OrNull<O>, IsPresent<O>> {
    return spec('date', { ...options, allowEmpty: options.allowEmpty ?? options.default === '' });
  },
  strList<const O extends StrListOptions>(options: O): ParamSpec<string[] | OrNull<O>, IsPresent<O>> {
    return spec('list[str]', options);
  },
};

// ---------------------------------------------------------------------------------------------
// Validation

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DECIMAL_INT = /^-?\d{1,16}$/;

export function isCalendarDate(value: string): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 1) return false;
  // Not Date.UTC(year, …): it maps years 0-99 to 1900-1999, which refused 0001-0099 (API.md: years 0001-9999).
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function invalid(argument: string, message: string, extra: Record<string, unknown> = {}): AppException {
  return new AppException(ErrorCode.InvalidArgument, message, { argument, ...extra });
}

function checkValue(name: string, spec: ParamRules, value: unknown): unknown {
  if (value === null) {
    if (spec.nullable) return null;
    throw invalid(name, `Argument "${name}" must not be null`);
  }
  switch (spec.type) {
    case 'str': {
      if (typeof value !== 'string') throw invalid(name, `Argument "${name}" must be a string`, { expected: 'str' });
      const text = spec.trim ? value.trim() : value;
      if (text === '' && spec.allowEmpty) return text;
      if (spec.enum && !spec.enum.includes(text)) {
        throw invalid(name, `Argument "${name}" must be one of: ${spec.enum.join(', ')}`, {
          allowed: spec.allowEmpty ? ['', ...spec.enum] : [...spec.enum],
        });
      }
      if (spec.minLength !== undefined && text.length < spec.minLength) {
        throw invalid(name, `Argument "${name}" must be at least ${spec.minLength} characters`, {
          minLength: spec.minLength,
        });
      }
      if (spec.maxLength !== undefined && text.length > spec.maxLength) {
        throw invalid(name, `Argument "${name}" must be at most ${spec.maxLength} characters`, {
          maxLength: spec.maxLength,
        });
      }
      if (spec.format === 'uuid' && !isUuid(text))
        throw invalid(name, `Argument "${name}" must be a UUID`, { expected: 'uuid' });
      if (spec.format === 'repo' && !isRepoFullName(text))
        throw invalid(name, `Argument "${name}" must be "owner/name"`, { expected: 'owner/name' });
      return text;
    }
    case 'int': {
      let number: number;
      if (typeof value === 'number' && Number.isSafeInteger(value)) number = value;
      else if (
        typeof value === 'string' &&
        DECIMAL_INT.test(value.trim()) &&
        Number.isSafeInteger(Number(value.trim()))
      )
        number = Number(value.trim());
      else throw invalid(name, `Argument "${name}" must be an integer`, { expected: 'int' });
      if (
        (spec.minimum !== undefined && number < spec.minimum) ||
        (spec.maximum !== undefined && number > spec.maximum)
      ) {
        throw invalid(name, `Argument "${name}" must be between ${spec.minimum ?? '-∞'} and ${spec.maximum ?? '∞'}`, {
          minimum: spec.minimum,
          maximum: spec.maximum,
        });
      }
      return number;
    }
    case 'bool':
      if (typeof value !== 'boolean')
        throw invalid(name, `Argument "${name}" must be true or false`, { expected: 'bool' });
      return value;
    case 'date':
      if (typeof value !== 'string')
        throw invalid(name, `Argument "${name}" must be a date string YYYY-MM-DD`, { expected: 'date' });
      if (value === '' && spec.allowEmpty) return value;
      if (!isCalendarDate(value))
        throw invalid(name, `Argument "${name}" must be a real calendar date YYYY-MM-DD`, { expected: 'date' });
      return value;
    case 'list[str]': {
      if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
        throw invalid(name, `Argument "${name}" must be a list of strings`, { expected: 'list[str]' });
      }
      if (spec.maxItems !== undefined && value.length > spec.maxItems) {
        throw invalid(name, `Argument "${name}" takes at most ${spec.maxItems} items`, { maxItems: spec.maxItems });
      }
      const items = spec.trim ? value.map((item: string) => item.trim()) : [...(value as string[])];
      if (spec.trim && items.some((item) => item === '')) throw invalid(name, `Items of "${name}" must not be blank`);
      if (spec.maxLength !== undefined && items.some((item) => item.length > spec.maxLength!)) {
        throw invalid(name, `Items of "${name}" must be at most ${spec.maxLength} characters`, {
          maxLength: spec.maxLength,
        });
      }
      return items;
    }
  }
}

/**
 * Validates raw call arguments against a tool's parameters: unknown names, types, ranges, enums and
 * real dates. Returns a new object with defaults applied and ints normalised. Throws AppException.
 */
export function validateArguments<P extends ToolParameters>(parameters: P, raw: Record<string, unknown>): ToolArgs<P> {
  for (const name of Object.keys(raw)) {
    if (!Object.hasOwn(parameters, name)) {
      throw invalid(name, `Unknown argument "${name}"`, { allowed: Object.keys(parameters) });
    }
  }
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(parameters)) {
    const value = raw[name];
    if (value === undefined) {
      if (spec.required)
        throw new AppException(ErrorCode.MissingArgument, `Missing required argument "${name}"`, { argument: name });
      if (spec.default !== undefined) out[name] = Array.isArray(spec.default) ? [...spec.default] : spec.default;
      continue;
    }
    out[name] = checkValue(name, spec, value);
  }
  // The one place the type is asserted: every name of P was checked against its spec just above.
  return out as ToolArgs<P>;
}

// ---------------------------------------------------------------------------------------------
// Descriptor and JSON Schema

export interface ParamDescriptor {
  type: ParamType;
  default: unknown;
  required: boolean;
  description: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
}

export function describeParameters(parameters: ToolParameters): Record<string, ParamDescriptor> {
  const out: Record<string, ParamDescriptor> = {};
  for (const [name, spec] of Object.entries(parameters)) {
    const descriptor: ParamDescriptor = {
      type: spec.type,
      default: spec.default === undefined ? null : spec.default,
      required: spec.required,
      description: spec.description,
    };
    if (spec.enum) descriptor.enum = [...spec.enum];
    if (spec.minimum !== undefined) descriptor.minimum = spec.minimum;
    if (spec.maximum !== undefined) descriptor.maximum = spec.maximum;
    out[name] = descriptor;
  }
  return out;
}

export type JsonSchema = Record<string, unknown>;

function paramSchema(spec: ParamSpec): JsonSchema {
  const schema: JsonSchema = { description: spec.description };
  switch (spec.type) {
    case 'str':
      schema.type = 'string';
      if (spec.enum) schema.enum = spec.allowEmpty ? ['', ...spec.enum] : [...spec.enum];
      if (spec.minLength !== undefined && !spec.allowEmpty) schema.minLength = spec.minLength;
      if (spec.maxLength !== undefined) schema.maxLength = spec.maxLength;
      if (spec.format === 'uuid') {
        if (spec.allowEmpty) schema.pattern = `^(${UUID_PATTERN.source.slice(1, -1)})?$`;
        else schema.format = 'uuid';
      }
      if (spec.format === 'repo') schema.pattern = REPO_FULL_NAME_PATTERN.source;
      break;
    case 'int':
      schema.type = 'integer';
      if (spec.minimum !== undefined) schema.minimum = spec.minimum;
      if (spec.maximum !== undefined) schema.maximum = spec.maximum;
      break;
    case 'bool':
      schema.type = 'boolean';
      break;
    case 'date':
      schema.type = 'string';
      if (spec.allowEmpty) schema.pattern = '^(\\d{4}-\\d{2}-\\d{2})?$';
      else schema.format = 'date';
      break;
    case 'list[str]':
      schema.type = 'array';
      schema.items = spec.maxLength !== undefined ? { type: 'string', maxLength: spec.maxLength } : { type: 'string' };
      if (spec.maxItems !== undefined) schema.maxItems = spec.maxItems;
      break;
  }
  if (spec.nullable) {
    schema.type = [schema.type as string, 'null'];
    if (schema.enum) schema.enum = [...(schema.enum as string[]), null];
  }
  if (spec.default !== undefined) schema.default = spec.default;
  return schema;
}

/** The input JSON Schema (draft 2020-12 compatible) for MCP `inputSchema`. */
export function parametersJsonSchema(parameters: ToolParameters): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [name, spec] of Object.entries(parameters)) {
    properties[name] = paramSchema(spec);
    if (spec.required) required.push(name);
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}

/** Problems with a parameter definition (checked at start-up); empty when valid. */
export function parameterDefinitionProblems(parameters: unknown): string[] {
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters))
    return ['parameters must be an object'];
  const problems: string[] = [];
  for (const [name, candidate] of Object.entries(parameters as Record<string, unknown>)) {
    const spec = candidate as Partial<ParamSpec>;
    if (!/^[a-z][a-z0-9_]{0,63}$/.test(name)) problems.push(`parameter name "${name}" must be snake_case`);
    if (typeof spec !== 'object' || spec === null || !PARAM_TYPES.includes(spec.type as ParamType)) {
      problems.push(`parameter "${name}" has no valid type (one of ${PARAM_TYPES.join(', ')})`);
      continue;
    }
    if (typeof spec.description !== 'string' || spec.description.trim() === '')
      problems.push(`parameter "${name}" needs a description`);
    if (spec.required && spec.default !== undefined)
      problems.push(`parameter "${name}" is required and cannot have a default`);
    if (spec.enum && (spec.type !== 'str' || spec.enum.length === 0))
      problems.push(`parameter "${name}" has an invalid enum`);
    if (spec.minimum !== undefined && spec.maximum !== undefined && spec.minimum > spec.maximum) {
      problems.push(`parameter "${name}" has minimum > maximum`);
    }
    if (spec.default !== undefined) {
      try {
        checkValue(name, spec as ParamSpec, spec.default);
      } catch {
        problems.push(`parameter "${name}" has a default that its own definition rejects`);
      }
    }
  }
  return problems;
}

/** A filter argument whose `""` means "no filter" (`default: ''`), as the service takes it: absent when empty. */
export function filterOrUndefined<T extends string>(value: T | null | undefined): Exclude<T, ''> | undefined {
  return value === '' || value === null || value === undefined ? undefined : (value as Exclude<T, ''>);
}

/** What the audit log keeps of a call's arguments: every argument, but `[omitted]` for a parameter marked `audit: 'omit'`. */
export function auditedArguments(
  parameters: ToolParameters,
  args: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args))
    kept[name] = parameters[name]?.audit === 'omit' && value !== null && value !== undefined ? '[omitted]' : value;
  return kept;
}
