import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { ToolDefinition, ToolHandler } from './tool-definition.js';
import { TOOL_METADATA, ToolProvider } from './tool.decorators.js';
import { ToolRegistry } from './tool-registry.js';

/** Scans `@ToolProvider()` classes once at start-up and seals the registry. */
@Injectable()
export class ToolExplorer implements OnModuleInit {
  private readonly logger = new Logger('Tools');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: ToolRegistry,
  ) {}

  onModuleInit(): void {
    const entries: { definition: ToolDefinition; handler: ToolHandler; source: string }[] = [];
    for (const wrapper of this.discovery.getProviders({ metadataKey: ToolProvider.KEY })) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || !wrapper.isDependencyTreeStatic()) {
        throw new Error(`Tool provider ${wrapper.name} must be a singleton (no request scope)`);
      }
      const prototype = Object.getPrototypeOf(instance) as object;
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = instance[methodName] as ((...args: unknown[]) => Promise<unknown>) | undefined;
        if (typeof method !== 'function') continue;
        const definition = this.reflector.get<ToolDefinition | undefined>(TOOL_METADATA, method);
        if (!definition) continue;
        entries.push({ definition, handler: method.bind(instance) as ToolHandler, source: `${String(wrapper.name)}.${methodName}` });
      }
    }
    this.registry.seal(entries);
    this.logger.log({ msg: 'Tool registry built', toolCount: entries.length });
  }
}
