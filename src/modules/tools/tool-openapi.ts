import type { JsonSchema } from '../../common/openapi/openapi-schema.js';
import { PARAM_TYPES } from '../tool-kit/tool-parameters.js';
import type { ToolsService } from './tools.service.js';

/** Component names the Area A controllers reference; the schemas behind them come from the registry. */
export const TOOL_CALL_REQUEST = 'ToolCallRequest';
export const TOOL_CALL_RESPONSE = 'ToolCallResponse';
export const TOOL_LIST_RESPONSE = 'ToolList';

/** Operation extension on POST /call: tool name → its scope and the components of its arguments and result. */
export const TOOLS_EXTENSION = 'x-atrium-tools';

export interface ToolOpenApi {
  schemas: Record<string, JsonSchema>;
  /** `x-atrium-tools` of the call operation. */
  tools: Record<string, { scope: string; readOnly: boolean; arguments: JsonSchema; result: JsonSchema }>;
}

const pascal = (name: string): string =>
  name.replace(/(^|_)([a-z0-9])/g, (_, __, letter: string) => letter.toUpperCase());
const componentRef = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/**
 * The Area A part of the OpenAPI document, read from the tool registry: each tool's arguments are the same
 * JSON Schema MCP's tools/list announces (ToolsService.schemaView, built from the one parameter definition
 * that also validates calls), its result the tool's own output schema. Adding a tool adds it here.
 */
export function toolOpenApi(tools: ToolsService, scopes: readonly string[]): ToolOpenApi {
  const all = tools.toolsFor({ scopes });
  const schemas: Record<string, JsonSchema> = {};
  const toolsExtension: ToolOpenApi['tools'] = {};
  const mapping: Record<string, string> = {};
  for (const tool of all) {
    const view = tools.schemaView(tool);
    const base = pascal(view.name);
    const input = view.inputSchema as { required?: string[] };
    schemas[`${base}Arguments`] = { title: `${view.name} arguments`, ...view.inputSchema };
    schemas[`${base}Result`] = { title: `${view.name} result`, ...tool.definition.output };
    schemas[`${base}Call`] = {
      type: 'object',
      title: view.title,
      description: `${view.description} (scope ${view.scope})`,
      required: input.required?.length ? ['name', 'arguments'] : ['name'],
      properties: { name: { const: view.name }, arguments: componentRef(`${base}Arguments`) },
      additionalProperties: false,
    };
    mapping[view.name] = `#/components/schemas/${base}Call`;
    toolsExtension[view.name] = {
      scope: view.scope,
      readOnly: view.annotations.readOnlyHint,
      arguments: componentRef(`${base}Arguments`),
      result: componentRef(`${base}Result`),
    };
  }
  const names = all.map((tool) => tool.definition.name);
  schemas[TOOL_CALL_REQUEST] = {
    description:
      'One tool call: `name` picks the tool, `arguments` follows that tool’s schema (omit it when nothing is required).',
    oneOf: Object.values(mapping).map((target) => ({ $ref: target })),
    discriminator: { propertyName: 'name', mapping },
  };
  schemas[TOOL_CALL_RESPONSE] = {
    type: 'object',
    description:
      'The tool’s result (see x-atrium-tools on the operation for which result belongs to which tool). List results are arrays; X-Truncated: true says the list stopped at its limit.',
    required: ['result'],
    properties: { result: { anyOf: names.map((name) => componentRef(`${pascal(name)}Result`)) } },
  };
  schemas.ToolParameter = {
    type: 'object',
    required: ['type', 'default', 'required', 'description'],
    properties: {
      type: { type: 'string', enum: [...PARAM_TYPES] },
      default: { description: 'null when the parameter has no default' },
      required: { type: 'boolean' },
      description: { type: 'string' },
      enum: { type: 'array', items: { type: 'string' } },
      minimum: { type: 'integer' },
      maximum: { type: 'integer' },
    },
  };
  schemas.ToolDescriptor = {
    type: 'object',
    required: ['name', 'description', 'scope', 'parameters'],
    properties: {
      name: { type: 'string', enum: names },
      description: { type: 'string' },
      scope: componentRef('Scope'),
      parameters: { type: 'object', additionalProperties: componentRef('ToolParameter') },
    },
  };
  schemas[TOOL_LIST_RESPONSE] = {
    type: 'object',
    required: ['scopes', 'tool_count', 'tools'],
    properties: {
      scopes: { type: 'array', items: componentRef('Scope') },
      tool_count: { type: 'integer', minimum: 0 },
      tools: { type: 'array', items: componentRef('ToolDescriptor') },
    },
  };
  return { schemas, tools: toolsExtension };
}
