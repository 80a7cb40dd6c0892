import { Injectable } from '@nestjs/common';
import { isApiKeyScope } from '../api-keys/api-key-scopes.js';
import { compareToolNames } from './tool-catalog-order.js';
import { ToolDefinitionError, type RegisteredTool, type ToolDefinition, type ToolHandler } from './tool-definition.js';
import { parameterDefinitionProblems } from './tool-parameters.js';

export function definitionProblems(definition: Partial<ToolDefinition>): string[] {
  const problems: string[] = [];
  if (typeof definition.name !== 'string' || !/^[a-z][a-z0-9_]{0,63}$/.test(definition.name)) problems.push('name must be snake_case (a-z, 0-9, _), at most 64 chars');
  if (typeof definition.title !== 'string' || definition.title.trim() === '') problems.push('title is required');
  if (typeof definition.description !== 'string' || definition.description.trim() === '') problems.push('description is required');
  if (!isApiKeyScope(definition.scope)) problems.push(`scope "${String(definition.scope)}" is not a known scope`);
  if (typeof definition.annotations?.readOnlyHint !== 'boolean') problems.push('annotations.readOnlyHint must be true or false');
  else if (definition.scope?.endsWith(':read') && !definition.annotations.readOnlyHint) problems.push('a tool with a read scope must be read-only');
  else if (definition.scope?.endsWith(':write') && definition.annotations.readOnlyHint) problems.push('a tool with a write scope cannot be read-only');
  if (typeof definition.output !== 'object' || definition.output === null) problems.push('output (a JSON Schema of the result) is required');
  problems.push(...parameterDefinitionProblems(definition.parameters));
  return problems;
}

/**
 * The immutable name → handler map, filled once by the explorer at start-up and frozen. Anything
 * wrong (duplicate name, bad definition) throws a ToolDefinitionError and start-up fails.
 */
@Injectable()
export class ToolRegistry {
  private tools: ReadonlyMap<string, RegisteredTool> = new Map();
  private ordered: readonly RegisteredTool[] = [];
  private sealed = false;

  seal(entries: { definition: ToolDefinition; handler: ToolHandler; source: string }[]): void {
    if (this.sealed) throw new Error('The tool registry is already built');
    const map = new Map<string, RegisteredTool>();
    for (const entry of entries) {
      const problems = definitionProblems(entry.definition);
      if (problems.length > 0) throw new ToolDefinitionError(String(entry.definition?.name), problems.map((p) => `${p} (in ${entry.source})`));
      const existing = map.get(entry.definition.name);
      if (existing) {
        throw new ToolDefinitionError(entry.definition.name, [`defined twice: ${existing.source} and ${entry.source}`]);
      }
      map.set(entry.definition.name, Object.freeze({ definition: deepFreeze(entry.definition), handler: entry.handler, source: entry.source }));
    }
    this.tools = map;
    this.ordered = Object.freeze([...map.values()].sort((a, b) => compareToolNames(a.definition.name, b.definition.name)));
    this.sealed = true;
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  /** Every tool in the fixed catalog order. */
  all(): readonly RegisteredTool[] {
    return this.ordered;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
