import { Global, Injectable, Module } from '@nestjs/common';
import { ToolDefinitionError, type RegisteredTool, type ToolDefinition, type ToolHandler } from './tool-definition.js';
import { parameterDefinitionProblems } from './tool-parameters.js';
import { TOOLSET_NAME } from './tool-restriction.js';

/** One `@Tool` method as the explorer found it. */
export interface ToolEntry {
  definition: ToolDefinition;
  handler: ToolHandler;
  source: string;
  /** Catalog position (its provider's position + its index there); undefined = after every positioned tool, by name. */
  position: number | undefined;
  /** Its provider's MCP instructions fragment. */
  instructions: string | undefined;
  /** Its provider's toolset. */
  toolset: string | undefined;
}

export function definitionProblems(
  definition: Partial<ToolDefinition>,
  isKnownScope: (scope: unknown) => boolean,
): string[] {
  const problems: string[] = [];
  if (typeof definition.name !== 'string' || !/^[a-z][a-z0-9_]{0,63}$/.test(definition.name))
    problems.push('name must be snake_case (a-z, 0-9, _), at most 64 chars');
  if (typeof definition.title !== 'string' || definition.title.trim() === '') problems.push('title is required');
  if (typeof definition.description !== 'string' || definition.description.trim() === '')
    problems.push('description is required');
  if (!isKnownScope(definition.scope))
    problems.push(`scope "${String(definition.scope)}" is not a known scope (declare it in a @ToolProvider({scopes}))`);
  if (typeof definition.annotations?.readOnlyHint !== 'boolean')
    problems.push('annotations.readOnlyHint must be true or false');
  else if (definition.scope?.endsWith(':read') && !definition.annotations.readOnlyHint)
    problems.push('a tool with a read scope must be read-only');
  else if (definition.scope?.endsWith(':write') && definition.annotations.readOnlyHint)
    problems.push('a tool with a write scope cannot be read-only');
  if (typeof definition.output !== 'object' || definition.output === null)
    problems.push('output (a JSON Schema of the result) is required');
  problems.push(...parameterDefinitionProblems(definition.parameters));
  return problems;
}

/**
 * The immutable name → handler map, filled once by the explorer at start-up and frozen, in catalog order:
 * by position, then by name. Anything wrong (duplicate name, bad definition, undeclared scope) throws a
 * ToolDefinitionError and start-up fails.
 */
@Injectable()
export class ToolRegistry {
  private tools: ReadonlyMap<string, RegisteredTool> = new Map();
  private ordered: readonly RegisteredTool[] = [];
  /** Instructions fragments with the tools they speak for, in catalog order of their first tool. */
  private fragments: readonly { text: string; tools: ReadonlySet<string> }[] = [];
  private toolsetNames: readonly string[] = [];
  private sealed = false;

  seal(entries: readonly ToolEntry[], knownScopes: ReadonlyMap<string, unknown>): void {
    if (this.sealed) throw new Error('The tool registry is already built');
    const map = new Map<string, RegisteredTool>();
    for (const entry of entries) {
      const problems = definitionProblems(
        entry.definition,
        (scope) => typeof scope === 'string' && knownScopes.has(scope),
      );
      if (problems.length > 0)
        throw new ToolDefinitionError(
          String(entry.definition?.name),
          problems.map((p) => `${p} (in ${entry.source})`),
        );
      const existing = map.get(entry.definition.name);
      if (existing) {
        throw new ToolDefinitionError(entry.definition.name, [`defined twice: ${existing.source} and ${entry.source}`]);
      }
      if (typeof entry.toolset !== 'string' || !TOOLSET_NAME.test(entry.toolset))
        throw new ToolDefinitionError(entry.definition.name, [
          `its provider must declare a toolset (lowercase a-z, 0-9, -), e.g. @ToolProvider({toolset: 'tasks'}) (in ${entry.source})`,
        ]);
      map.set(
        entry.definition.name,
        Object.freeze({
          definition: deepFreeze(entry.definition),
          handler: entry.handler,
          source: entry.source,
          toolset: entry.toolset,
        }),
      );
    }
    const sorted = [...entries].sort(compareEntries);
    this.tools = map;
    this.ordered = Object.freeze(sorted.map((entry) => map.get(entry.definition.name)!));
    this.toolsetNames = Object.freeze([...new Set(this.ordered.map((tool) => tool.toolset))]);
    const fragments = new Map<string, Set<string>>();
    for (const entry of sorted) {
      if (!entry.instructions) continue;
      const tools = fragments.get(entry.instructions) ?? new Set<string>();
      tools.add(entry.definition.name);
      fragments.set(entry.instructions, tools);
    }
    this.fragments = Object.freeze([...fragments].map(([text, tools]) => ({ text, tools })));
    this.sealed = true;
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  /** Every tool in catalog order. */
  all(): readonly RegisteredTool[] {
    return this.ordered;
  }

  /** The toolsets the providers declared, in catalog order of their first tool. */
  toolsets(): readonly string[] {
    return this.toolsetNames;
  }

  /** The providers' instructions fragments that speak for at least one of these tools, in catalog order. */
  instructionsFor(tools: readonly RegisteredTool[]): string[] {
    const names = new Set(tools.map((tool) => tool.definition.name));
    return this.fragments
      .filter((fragment) => [...fragment.tools].some((name) => names.has(name)))
      .map((fragment) => fragment.text);
  }
}

/** The registry, global like the scope catalog: credentials check tool names at creation, the doors at each call. */
@Global()
@Module({ providers: [ToolRegistry], exports: [ToolRegistry] })
export class ToolRegistryModule {}

function compareEntries(a: ToolEntry, b: ToolEntry): number {
  const pa = a.position ?? Infinity;
  const pb = b.position ?? Infinity;
  if (pa !== pb) return pa - pb;
  const [na, nb] = [a.definition.name, b.definition.name];
  return na < nb ? -1 : na > nb ? 1 : 0;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
