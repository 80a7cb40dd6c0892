import { SetMetadata } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { ToolDefinition } from './tool-definition.js';

/** Marks a provider class whose methods carry `@Tool`; the explorer finds it at start-up. */
export const ToolProvider = DiscoveryService.createDecorator<void>();

export const TOOL_METADATA = 'atrium:tool';

/** Registers the decorated method as a tool handler: `(args, actor) => Promise<result>`. */
export const Tool = (definition: ToolDefinition): MethodDecorator => SetMetadata(TOOL_METADATA, definition);
