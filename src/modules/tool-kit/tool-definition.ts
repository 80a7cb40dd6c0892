import type { Actor } from '../../common/auth/actor.js';
import type { JsonSchema, ToolArgs, ToolParameters } from './tool-parameters.js';

/** MCP tool annotations; `readOnlyHint: false` marks a write tool (Idempotency-Key applies). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** The one rule for "is a write": a tool not marked `readOnlyHint: true` (unknown tools count as writes). */
export function isWriteTool(tool: RegisteredTool | undefined): boolean {
  return tool?.definition.annotations?.readOnlyHint !== true;
}

/** What `@Tool({...})` takes; `P` types the handler's `args` (`ToolArgs<P>`). */
export interface ToolDefinition<P extends ToolParameters = ToolParameters> {
  /** snake_case, unique across the installation. */
  name: string;
  title: string;
  description: string;
  /** A scope some `@ToolProvider({scopes})` declares (start-up fails otherwise). */
  scope: string;
  parameters: P;
  annotations: ToolAnnotations;
  /** JSON Schema of the result (an array schema for list tools). */
  output: JsonSchema;
  /**
   * Who wrote the text a result carries, so an agent run knows when it has read text its starter did not write
   * (`tool-provenance.ts`). Absent: unknown, and such a result counts as untrusted.
   */
  provenance?: ToolProvenance;
}

/**
 * Where a tool's result text comes from:
 * - `none`: no text anyone wrote (counts, deletion receipts);
 * - `upstream`: an answer from outside Atrium (GitHub, any remote service): never the starter's own;
 * - `written`: Atrium objects (each item of a list, or the object itself) whose `writers` fields name every user who
 *   may have written its text; `object` and `id` name it in the run view (`document:<id>`).
 */
export type ToolProvenance =
  | { kind: 'none' }
  | { kind: 'upstream'; object: string; targetArgument?: string }
  | { kind: 'written'; object: string; id: string; writers: readonly string[] };

/** A handler gets validated arguments (defaults applied) and the Actor it works for, nothing else. */
export type TypedToolHandler<P extends ToolParameters> = (args: ToolArgs<P>, actor: Actor) => unknown;

/** The registry's view of a handler: its arguments were validated against its own definition before the call. */
export type ToolHandler = (args: Readonly<Record<string, unknown>>, actor: Actor) => Promise<unknown>;

export interface RegisteredTool {
  readonly definition: ToolDefinition;
  readonly handler: ToolHandler;
  /** Where it came from, for error messages. */
  readonly source: string;
  /** Its provider's toolset (`@ToolProvider({toolset})`). */
  readonly toolset: string;
}

/**
 * What a list tool returns: the rows plus whether more existed than `limit`. The gateway answers the
 * bare array and sets `X-Truncated: true`. A list can also come as the JSON text of its rows, already written
 * (by PostgreSQL: `fromJson`): the JSON door answers that text as it is, and `items` parses it only for a door
 * that needs the values (MCP's structured content, an agent run's model).
 */
export class ToolList<T = unknown> {
  private parsed: T[] | undefined;

  private constructor(
    items: T[] | undefined,
    readonly truncated: boolean,
    /** The JSON array text of the items, when the tool had it written rather than the values. */
    readonly json?: string,
  ) {
    this.parsed = items;
  }

  static of<T>(items: T[], truncated: boolean): ToolList<T> {
    return new ToolList(items, truncated);
  }

  /** From `limit + 1` fetched rows. */
  static fromRows<T>(rows: T[], limit: number): ToolList<T> {
    return rows.length > limit ? new ToolList(rows.slice(0, limit), true) : new ToolList(rows, false);
  }

  /** From the JSON array text of the shown rows and how many were fetched (`limit + 1` of them when cut). */
  static fromJson<T>(json: string, fetched: number, limit: number): ToolList<T> {
    return new ToolList<T>(undefined, fetched > limit, json);
  }

  get items(): T[] {
    return (this.parsed ??= JSON.parse(this.json!) as T[]);
  }

  /** The same list with its text passed through `redact` (JSON text when it has it, else its items); itself when nothing changed. */
  redacted(redactJson: (json: string) => string, redactItems: (items: T[]) => T[]): ToolList<T> {
    if (this.json !== undefined) {
      const json = redactJson(this.json);
      return json === this.json ? this : new ToolList<T>(undefined, this.truncated, json);
    }
    const items = redactItems(this.items);
    return items === this.items ? this : new ToolList(items, this.truncated);
  }
}

/** Thrown at start-up for a bad or duplicate tool definition, so a broken catalog never serves. */
export class ToolDefinitionError extends Error {
  constructor(
    readonly toolName: string,
    readonly problems: string[],
  ) {
    super(`Invalid tool definition "${toolName}": ${problems.join('; ')}`);
    this.name = 'ToolDefinitionError';
  }
}
