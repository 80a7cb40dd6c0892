import { Injectable } from '@nestjs/common';
import type { ProjectRole } from '../../common/access/project-roles.js';
import type { Actor } from '../../common/auth/actor.js';
import type { ToolRestriction } from '../../common/auth/caller.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import type { RegisteredTool } from '../tool-kit/tool-definition.js';
import {
  describeParameters,
  parametersJsonSchema,
  type JsonSchema,
  type ParamDescriptor,
} from '../tool-kit/tool-parameters.js';
import { ToolRegistry } from '../tool-kit/tool-registry.js';
import { restrictableTool, toolAllowed, unpinnedParameters } from '../tool-kit/tool-restriction.js';

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

/**
 * What decides the tools a caller sees: its scopes, its restriction (the credential's tools allowlist and read-only
 * choice, the request's toolsets) and its pins (one project or repository drops that parameter). A Caller is one; the
 * agent loop lists with its scopes only.
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
 * What the doors show of the registry: the tools a caller's scopes allow, their descriptors and schemas, the MCP
 * instructions. Calling a tool is ToolCallPipeline's, for every door.
 */
@Injectable()
export class ToolsService {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly scopes: ScopeCatalog,
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

  /** The registry tool of this name, for listing and offering; a call resolves its tool in ToolCallPipeline. */
  find(name: string): RegisteredTool | undefined {
    return this.registry.get(name);
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
