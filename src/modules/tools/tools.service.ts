import { Injectable } from '@nestjs/common';
import type { ProjectRole } from '../../common/access/project-roles.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import type { RegisteredTool } from '../tool-kit/tool-definition.js';
import {
  describeParameters,
  parametersJsonSchema,
  type JsonSchema,
  type ParamDescriptor,
} from '../tool-kit/tool-parameters.js';
import { ToolRegistry } from '../tool-kit/tool-registry.js';

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

/** What every MCP `instructions` starts with; the providers' fragments for the caller's tools follow. */
const INSTRUCTIONS_LEAD =
  'Atrium tools. Each tool acts for the owner of the API key or OAuth grant, within its scopes.';

/** A tool's input JSON Schema (draft 2020-12 compatible), as MCP `inputSchema` lists it: from its one parameter definition. */
export function toolInputJsonSchema(tool: RegisteredTool): JsonSchema {
  return parametersJsonSchema(tool.definition.parameters);
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

  /** The tools the scopes allow, in catalog order. */
  toolsFor(scopes: readonly string[]): readonly RegisteredTool[] {
    return this.registry.all().filter((tool) => scopes.includes(tool.definition.scope));
  }

  /** Every tool's input JSON Schema, in catalog order (e.g. for an OpenAPI description of the tool call body). */
  inputSchemas(): { name: string; scope: string; inputSchema: JsonSchema }[] {
    return this.registry.all().map((tool) => ({
      name: tool.definition.name,
      scope: tool.definition.scope,
      inputSchema: toolInputJsonSchema(tool),
    }));
  }

  /** MCP `instructions` for a caller: the lead sentence and the fragments of the providers whose tools it may call. */
  instructionsFor(scopes: readonly string[]): string {
    return [INSTRUCTIONS_LEAD, ...this.registry.instructionsFor(this.toolsFor(scopes))].join(' ');
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

  descriptor(tool: RegisteredTool): ToolDescriptor {
    const { name, description, scope, parameters } = tool.definition;
    return { name, description, scope, parameters: describeParameters(parameters) };
  }

  schemaView(tool: RegisteredTool): ToolSchemaView {
    const { name, title, description, scope, output, annotations } = tool.definition;
    const outputSchema =
      output.type === 'object' ? output : { type: 'object', properties: { items: output }, required: ['items'] };
    return { name, title, description, scope, inputSchema: toolInputJsonSchema(tool), outputSchema, annotations };
  }
}
