import { Injectable } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import type { ProjectRole } from '../../common/access/project-roles.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { newAuditEntry, type AuditActor, type AuditEntry } from '../audit/audit-entry.js';
import { toAppException } from '../../common/errors/to-app-exception.js';
import { AuditService } from '../audit/audit.service.js';
import { redactJsonText, redactValue } from '../../common/secrets/secret-redactor.js';
import { isWriteTool, ToolList, type RegisteredTool } from '../tool-kit/tool-definition.js';
import {
  auditedArguments,
  describeParameters,
  parametersJsonSchema,
  validateArguments,
  type JsonSchema,
  type ParamDescriptor,
} from '../tool-kit/tool-parameters.js';
import { ToolRegistry } from '../tool-kit/tool-registry.js';
import type { ToolRestriction } from '../../common/auth/caller.js';
import {
  assertToolAllowed,
  restrictableTool,
  toolAllowed,
  unpinnedParameters,
  withPinnedArguments,
} from '../tool-kit/tool-restriction.js';

/** Area A descriptor (seed style). */
export interface ToolDescriptor {
  name: string;
  description: string;
  scope: string;
  parameters: Record<string, ParamDescriptor>;
}

/** What the MCP transport lists. `outputSchema` is always an object schema (lists as `{items: [...]}`). */
export interface ToolSchemaView {
  name: string;
  title: string;
  description: string;
  scope: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  annotations: RegisteredTool['definition']['annotations'];
}

/** A validated call, ready to run: lets a caller (e.g. the idempotency layer) see normalised arguments first. */
export interface PreparedToolCall {
  tool: RegisteredTool;
  args: Record<string, unknown>;
}

export interface ToolCallOutcome {
  result: unknown;
  /** A list result stopped at its limit (Area A answers `X-Truncated: true`). */
  truncated: boolean;
  /**
   * The result as JSON text, when the tool had it written (`ToolList.fromJson`): the JSON door answers this text
   * as it is. `result` is then parsed from it on first read, so a door that needs the value still gets it.
   */
  resultJson?: string;
}

/**
 * What decides the tools a caller sees and may call: its scopes, its restriction (the credential's tools allowlist and
 * read-only choice, the request's toolsets) and its pins (one project or repository drops and fills that parameter).
 * A Caller is one; the agent loop passes its scopes only.
 */
export interface ToolAccess {
  readonly scopes: readonly string[];
  readonly restriction?: ToolRestriction;
  readonly actor?: Pick<Actor, 'projectIds' | 'repos'>;
}

/** What every MCP `instructions` starts with; the providers' fragments for the caller's tools follow. */
const INSTRUCTIONS_LEAD =
  'Atrium tools. Each tool acts for the owner of the API key or OAuth grant, within its scopes.';

/**
 * A tool's input JSON Schema (draft 2020-12 compatible), as MCP `inputSchema` lists it: from its one parameter
 * definition, without the parameters the caller's single pins fill in.
 */
export function toolInputJsonSchema(tool: RegisteredTool, access?: ToolAccess): JsonSchema {
  return parametersJsonSchema(unpinnedParameters(tool.definition.parameters, access?.actor));
}

/**
 * Validates arguments and dispatches to the registered handler. Every door (Area A JSON, MCP, the
 * agent loop) goes through here, so scope checks, validation and the redaction of results cannot be skipped.
 */
@Injectable()
export class ToolsService {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly scopes: ScopeCatalog,
    private readonly audit: AuditService,
  ) {}

  /** The tools the caller may use (its scopes, within its restriction), in catalog order. */
  toolsFor(access: ToolAccess): readonly RegisteredTool[] {
    return this.registry
      .all()
      .filter(
        (tool) =>
          access.scopes.includes(tool.definition.scope) &&
          (access.restriction === undefined || toolAllowed(restrictableTool(tool), access.restriction)),
      );
  }

  /** The toolsets the providers declared, in catalog order (what X-MCP-Toolsets and /x/{toolset} name). */
  toolsets(): readonly string[] {
    return this.registry.toolsets();
  }

  /** Every tool's input JSON Schema, in catalog order (e.g. for an OpenAPI description of the tool call body). */
  inputSchemas(): { name: string; scope: string; inputSchema: JsonSchema }[] {
    return this.registry.all().map((tool) => ({
      name: tool.definition.name,
      scope: tool.definition.scope,
      inputSchema: toolInputJsonSchema(tool),
    }));
  }

  /**
   * MCP `instructions` for a caller: the lead sentence, the fragments of the providers whose tools it may call, and
   * how to narrow the list to toolsets or read-only tools.
   */
  instructionsFor(access: ToolAccess): string {
    const narrowing = `Toolsets: ${this.toolsets().join(', ')}; narrow the tools per request with the X-MCP-Toolsets header (e.g. X-MCP-Toolsets: tasks,docs) or the URL /api/v1/public/mcp/x/{toolset}, and to read-only tools with X-MCP-Readonly: true or a URL ending in /readonly.`;
    return [INSTRUCTIONS_LEAD, ...this.registry.instructionsFor(this.toolsFor(access)), narrowing].join(' ');
  }

  /**
   * The one project role → scopes rule: what an agent run of a member with this role may use (creating, running
   * and approving a run all narrow by it). A viewer gets the read scopes, an editor or owner every scope.
   */
  scopesForRole(role: ProjectRole): string[] {
    return role === 'viewer' ? this.scopes.readNames() : this.scopes.names();
  }

  find(name: string): RegisteredTool | undefined {
    return this.registry.get(name);
  }

  /** 404 unknown_tool for a name that is not registered. */
  require(name: string): RegisteredTool {
    const tool = this.registry.get(name);
    if (!tool) throw new AppException(ErrorCode.UnknownTool, `No tool named "${name}"`, { name });
    return tool;
  }

  /**
   * Deny by default: 403 insufficient_scope unless the tool's scope is on the key, then 403 tool_not_allowed unless
   * the caller's restriction allows it (tool-restriction.ts holds that rule).
   */
  assertScope(tool: RegisteredTool, access: ToolAccess): void {
    if (!access.scopes.includes(tool.definition.scope)) {
      throw new AppException(
        ErrorCode.InsufficientScope,
        `This key lacks the "${tool.definition.scope}" scope that ${tool.definition.name} needs`,
        {
          required_scope: tool.definition.scope,
        },
      );
    }
    if (access.restriction) assertToolAllowed(restrictableTool(tool), access.restriction);
  }

  /** Tool, scope and restriction, then the arguments (with what the caller's single pins fill in) validated. */
  prepare(name: string, rawArgs: Record<string, unknown> | undefined, access: ToolAccess): PreparedToolCall {
    const tool = this.require(name);
    this.assertScope(tool, access);
    const { parameters } = tool.definition;
    const args = withPinnedArguments(parameters, rawArgs ?? {}, access.actor, isWriteTool(tool));
    return { tool, args: validateArguments(parameters, args) };
  }

  /**
   * Runs the call with its tool.call audit entry pending (AuditService.runToolCall): a write commits the entry with
   * its change, anything else is written behind the answer. `by` names the acting credential; by default the one of
   * the current request (both Area A doors); the agent loop passes its run.
   */
  async invoke(prepared: PreparedToolCall, actor: Actor, by?: AuditActor): Promise<ToolCallOutcome> {
    const entry = this.toolCallEntry(prepared, actor, by);
    const value = await this.audit.runToolCall(entry, () => prepared.tool.handler(prepared.args, actor));
    // Every door (JSON, MCP, agent) gets results here, so credential shapes in them are redacted once, here.
    if (value instanceof ToolList)
      return listOutcome(
        (value as ToolList<unknown>).redacted(
          (json) => redactJsonText(json, 'tool_result'),
          (items) => redactValue(items, 'tool_result'),
        ),
      );
    return { result: redactValue(value, 'tool_result'), truncated: false };
  }

  /** Validate, check scope, dispatch. Callable from any module (MCP transport, agent loop). */
  async call(
    name: string,
    args: Record<string, unknown> | undefined,
    actor: Actor,
    access: ToolAccess,
    by?: AuditActor,
  ): Promise<ToolCallOutcome> {
    return this.invoke(this.prepare(name, args, access), actor, by);
  }

  /**
   * A call an Area A door refused before running it (unknown tool, missing scope, bad arguments, a write awaiting
   * confirmation): on the audit log with its error, the tool name only (arguments that failed validation are
   * untrusted input of any size and shape, and may be exactly what a parameter marked `audit: 'omit'` keeps out).
   */
  recordRefused(name: string, actor: Actor, error: unknown): void {
    const entry = this.toolCallEntry(undefined, actor, undefined, name);
    this.audit.recordBehind({
      ...entry,
      outcome: { status: 'error', code: toAppException(error)?.code ?? 'internal' },
    });
  }

  /** A write answered from its Idempotency-Key record (nothing ran, nothing changed): on the audit log as a replay. */
  recordReplay(prepared: PreparedToolCall, actor: Actor): void {
    const entry = this.toolCallEntry(prepared, actor);
    this.audit.recordBehind({ ...entry, details: { ...entry.details, replayed: true } });
  }

  private toolCallEntry(
    prepared: PreparedToolCall | undefined,
    actor: Actor,
    by?: AuditActor,
    refusedName?: string,
  ): AuditEntry {
    const details = prepared
      ? {
          tool: prepared.tool.definition.name,
          arguments: auditedArguments(prepared.tool.definition.parameters, prepared.args),
        }
      : { tool: String(refusedName).slice(0, 64) };
    return newAuditEntry({
      action: 'tool.call',
      // Both Area A doors run inside their request, whose credential this is; the agent loop passes its run.
      actor: by ?? this.audit.actorOfRequest() ?? { userId: actor.userId, via: 'api_key', credentialId: null },
      target: null,
      outcome: { status: 'ok' },
      details,
    });
  }

  /** The JSON door's view of a tool, for this caller (without the parameters its single pins fill in). */
  descriptor(tool: RegisteredTool, access?: ToolAccess): ToolDescriptor {
    const { name, description, scope, parameters } = tool.definition;
    return { name, description, scope, parameters: describeParameters(unpinnedParameters(parameters, access?.actor)) };
  }

  schemaView(tool: RegisteredTool, access?: ToolAccess): ToolSchemaView {
    const { name, title, description, scope, output, annotations } = tool.definition;
    const outputSchema =
      output.type === 'object' ? output : { type: 'object', properties: { items: output }, required: ['items'] };
    return {
      name,
      title,
      description,
      scope,
      inputSchema: toolInputJsonSchema(tool, access),
      outputSchema,
      annotations,
    };
  }
}

function listOutcome(list: ToolList): ToolCallOutcome {
  if (list.json === undefined) return { result: list.items, truncated: list.truncated };
  return {
    get result() {
      return list.items;
    },
    truncated: list.truncated,
    resultJson: list.json,
  };
}
