import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ScopeCatalog, scopeDeclarationProblems, type ScopeDeclaration } from './scope-catalog.js';
import { ToolDefinitionError, type ToolDefinition } from './tool-definition.js';
import { TOOL_METADATA, ToolProvider } from './tool.decorators.js';
import { ToolRegistry, type ToolEntry } from './tool-registry.js';

interface DeclaredScope {
  declaration: ScopeDeclaration;
  source: string;
  position: number;
}

/**
 * Scans `@ToolProvider()` classes once at start-up: their tools (with catalog positions), MCP instructions
 * fragments and scope declarations. Seals the registry and the scope catalog; anything inconsistent fails start-up.
 */
@Injectable()
export class ToolExplorer implements OnModuleInit {
  private readonly logger = new Logger('Tools');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: ToolRegistry,
    private readonly scopes: ScopeCatalog,
  ) {}

  onModuleInit(): void {
    const entries: ToolEntry[] = [];
    const declared: DeclaredScope[] = [];
    for (const wrapper of this.discovery.getProviders({ metadataKey: ToolProvider.KEY })) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || !wrapper.isDependencyTreeStatic()) {
        throw new Error(`Tool provider ${wrapper.name} must be a singleton (no request scope)`);
      }
      const options = this.discovery.getMetadataByDecorator(ToolProvider, wrapper) ?? {};
      for (const declaration of options.scopes ?? [])
        declared.push({ declaration, source: String(wrapper.name), position: options.position ?? Infinity });
      const prototype = Object.getPrototypeOf(instance) as object;
      // Class methods come in declaration order: a provider's tools take position, position + 1, …
      let index = 0;
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = instance[methodName] as ((...args: unknown[]) => Promise<unknown>) | undefined;
        if (typeof method !== 'function') continue;
        const definition = this.reflector.get<ToolDefinition | undefined>(TOOL_METADATA, method);
        if (!definition) continue;
        entries.push({
          definition,
          handler: method.bind(instance),
          source: `${String(wrapper.name)}.${methodName}`,
          position: options.position === undefined ? undefined : options.position + index,
          instructions: options.instructions,
          toolset: options.toolset,
        });
        index += 1;
      }
    }
    const known = this.checkScopes(declared);
    this.registry.seal(entries, known);
    this.scopes.seal(
      [...known.values()].map((declaration) => ({
        ...declaration,
        access: declaration.name.endsWith(':write') ? 'write' : 'read',
        exampleTool: this.exampleTool(declaration.name),
      })),
    );
    this.logger.log({ msg: 'Tool registry built', toolCount: entries.length, scopeCount: known.size });
  }

  /** The first read-only tool of the scope, in catalog order, that needs no argument. */
  private exampleTool(scope: string): string | null {
    const callable = this.registry
      .all()
      .find(
        (tool) =>
          tool.definition.scope === scope &&
          tool.definition.annotations.readOnlyHint &&
          Object.values(tool.definition.parameters).every((p) => !p.required),
      );
    return callable?.definition.name ?? null;
  }

  /** Each scope declared once and well formed; returns them by name, in provider position, then declaration order. */
  private checkScopes(declared: DeclaredScope[]): Map<string, ScopeDeclaration> {
    const known = new Map<string, ScopeDeclaration>();
    const sources = new Map<string, string>();
    for (const { declaration, source } of [...declared].sort((a, b) => a.position - b.position)) {
      const problems = scopeDeclarationProblems(declaration);
      if (problems.length > 0)
        throw new ToolDefinitionError(
          `scope ${String(declaration.name)}`,
          problems.map((p) => `${p} (in ${source})`),
        );
      if (known.has(declaration.name))
        throw new ToolDefinitionError(`scope ${declaration.name}`, [
          `declared twice: ${sources.get(declaration.name)} and ${source}`,
        ]);
      known.set(declaration.name, { name: declaration.name, group: declaration.group, allows: declaration.allows });
      sources.set(declaration.name, source);
    }
    return known;
  }
}
