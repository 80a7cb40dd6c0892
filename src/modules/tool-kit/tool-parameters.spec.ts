import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import {
  describeParameters,
  isCalendarDate,
  param,
  parameterDefinitionProblems,
  parametersJsonSchema,
  validateArguments,
} from './tool-parameters.js';

const PARAMS = {
  status: param.str({ description: 'Status', default: '', enum: ['todo', 'done'] }),
  task_id: param.str({ description: 'Task', required: true, format: 'uuid' }),
  limit: param.int({ description: 'Limit', default: 50, minimum: 1, maximum: 200 }),
  due: param.date({ description: 'Due', default: null, nullable: true }),
  since: param.date({ description: 'Since', default: '' }),
  flag: param.bool({ description: 'Flag', default: true }),
  labels: param.strList({ description: 'Labels', default: [] }),
  title: param.str({ description: 'Title', minLength: 1, maxLength: 5 }),
};
const ID = '6f1c1e0a-0b7e-4c8e-9a51-0d8c4f1e2a33';

function failure(raw: Record<string, unknown>): { code: ErrorCode; details: unknown } {
  try {
    validateArguments(PARAMS, raw);
  } catch (error) {
    expect(error).toBeInstanceOf(AppException);
    return { code: (error as AppException).code, details: (error as AppException).details };
  }
  throw new Error('expected a validation failure');
}

describe('tool argument validation', () => {
  it('applies defaults and leaves optional no-default params absent', () => {
    expect(validateArguments(PARAMS, { task_id: ID })).toEqual({
      status: '',
      task_id: ID,
      limit: 50,
      due: null,
      since: '',
      flag: true,
      labels: [],
    });
  });

  it('accepts ints as JSON integers or decimal strings', () => {
    expect(validateArguments(PARAMS, { task_id: ID, limit: 7 }).limit).toBe(7);
    expect(validateArguments(PARAMS, { task_id: ID, limit: '7' }).limit).toBe(7);
  });

  it.each([
    [{ task_id: ID, limit: '7.5' }, 'limit'],
    [{ task_id: ID, limit: 7.5 }, 'limit'],
    [{ task_id: ID, limit: '0x10' }, 'limit'],
    [{ task_id: ID, limit: true }, 'limit'],
    [{ task_id: ID, limit: 0 }, 'limit'],
    [{ task_id: ID, limit: 201 }, 'limit'],
    [{ task_id: ID, status: 'open' }, 'status'],
    [{ task_id: 'nope' }, 'task_id'],
    [{ task_id: ID, due: '2026-02-30' }, 'due'],
    [{ task_id: ID, due: '2026-2-3' }, 'due'],
    [{ task_id: ID, since: '2025-02-29' }, 'since'],
    [{ task_id: ID, flag: 'true' }, 'flag'],
    [{ task_id: ID, labels: ['a', 1] }, 'labels'],
    [{ task_id: ID, labels: 'a' }, 'labels'],
    [{ task_id: ID, title: '' }, 'title'],
    [{ task_id: ID, title: 'toolong' }, 'title'],
    [{ task_id: ID, title: null }, 'title'],
    [{ task_id: ID, unknown: 1 }, 'unknown'],
  ])('rejects %j as invalid_argument on %s', (raw, argument) => {
    const { code, details } = failure(raw);
    expect(code).toBe(ErrorCode.InvalidArgument);
    expect((details as { argument: string }).argument).toBe(argument);
  });

  it('refuses an int string beyond the safe integer range instead of rounding it', () => {
    expect(failure({ task_id: ID, limit: '9999999999999999' })).toMatchObject({
      code: ErrorCode.InvalidArgument,
      details: { argument: 'limit', expected: 'int' },
    });
  });

  it('trims where the definition says so: a blank value is then too short, a blank list item refused', () => {
    const TRIMMED = {
      title: param.str({ description: 'Title', required: true, minLength: 1, maxLength: 5, trim: true }),
      labels: param.strList({ description: 'Labels', default: [], trim: true }),
    };
    expect(validateArguments(TRIMMED, { title: '  abc  ', labels: [' bug '] })).toEqual({
      title: 'abc',
      labels: ['bug'],
    });
    expect(() => validateArguments(TRIMMED, { title: '   ' })).toThrow(/at least 1 characters/);
    expect(() => validateArguments(TRIMMED, { title: 'x', labels: ['ok', '  '] })).toThrow(/must not be blank/);
    // Trimming is normalisation only: the JSON Schema the clients see is unchanged.
    expect(parametersJsonSchema(TRIMMED)).toEqual(
      parametersJsonSchema({
        title: param.str({ description: 'Title', required: true, minLength: 1, maxLength: 5 }),
        labels: param.strList({ description: 'Labels', default: [] }),
      }),
    );
  });

  it('lists allowed values for an enum', () => {
    expect(failure({ task_id: ID, status: 'open' }).details).toEqual({
      argument: 'status',
      allowed: ['', 'todo', 'done'],
    });
  });

  it('reports a missing required argument as missing_argument', () => {
    expect(failure({})).toEqual({ code: ErrorCode.MissingArgument, details: { argument: 'task_id' } });
  });

  it('accepts real dates including leap days, "" for a filter and null for a nullable date', () => {
    expect(isCalendarDate('2028-02-29')).toBe(true);
    expect(isCalendarDate('2027-02-29')).toBe(false);
    expect(isCalendarDate('2026-04-31')).toBe(false);
    // Every year 0001-9999 (Date.UTC alone maps 0-99 to the 1900s); year 0000 is no calendar year.
    expect(isCalendarDate('0001-01-01')).toBe(true);
    expect(isCalendarDate('0099-12-31')).toBe(true);
    expect(isCalendarDate('0004-02-29')).toBe(true);
    expect(isCalendarDate('0100-02-29')).toBe(false);
    expect(isCalendarDate('9999-12-31')).toBe(true);
    expect(isCalendarDate('0000-01-01')).toBe(false);
    expect(validateArguments(PARAMS, { task_id: ID, due: '2028-02-29', since: '' })).toMatchObject({
      due: '2028-02-29',
      since: '',
    });
    expect(validateArguments(PARAMS, { task_id: ID, due: null }).due).toBeNull();
  });
});

describe('descriptor and JSON Schema generation', () => {
  it('builds the seed-style descriptor from the one definition', () => {
    const d = describeParameters(PARAMS);
    expect(d.status).toEqual({
      type: 'str',
      default: '',
      required: false,
      description: 'Status',
      enum: ['todo', 'done'],
    });
    expect(d.task_id).toEqual({ type: 'str', default: null, required: true, description: 'Task' });
    expect(d.limit).toEqual({
      type: 'int',
      default: 50,
      required: false,
      description: 'Limit',
      minimum: 1,
      maximum: 200,
    });
    expect(d.due).toEqual({ type: 'date', default: null, required: false, description: 'Due' });
    expect(d.flag.type).toBe('bool');
    expect(d.labels).toEqual({ type: 'list[str]', default: [], required: false, description: 'Labels' });
  });

  it('builds a closed JSON Schema with required names, ranges, enums and nullability', () => {
    const schema = parametersJsonSchema(PARAMS) as any;
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['task_id']);
    expect(schema.properties.limit).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 200,
      default: 50,
      description: 'Limit',
    });
    expect(schema.properties.status.enum).toEqual(['', 'todo', 'done']);
    expect(schema.properties.task_id.format).toBe('uuid');
    expect(schema.properties.due.type).toEqual(['string', 'null']);
    expect(schema.properties.labels).toMatchObject({ type: 'array', items: { type: 'string' } });
    expect(schema.properties.flag).toMatchObject({ type: 'boolean', default: true });
  });

  it('finds problems in a bad definition', () => {
    expect(parameterDefinitionProblems(PARAMS)).toEqual([]);
    expect(parameterDefinitionProblems({ x: { type: 'float', description: 'x' } })).toHaveLength(1);
    expect(parameterDefinitionProblems({ x: param.int({ description: 'x', required: true, default: 1 }) })[0]).toMatch(
      /required/,
    );
    expect(parameterDefinitionProblems({ x: param.int({ description: 'x', default: 0, minimum: 1 }) })[0]).toMatch(
      /default/,
    );
    expect(parameterDefinitionProblems({ BadName: param.int({ description: 'x' }) })[0]).toMatch(/snake_case/);
    expect(parameterDefinitionProblems({ x: param.str({ description: '' }) })[0]).toMatch(/description/);
  });
});
