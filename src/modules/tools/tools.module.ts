import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { IdempotencyModule } from '../../common/idempotency/idempotency.module.js';
import { ApiKeysModule } from '../api-keys/api-keys.module.js';
import { McpController } from './mcp.controller.js';
import { McpExtensions } from './server-extensions.js';
import { McpOriginGuard } from './mcp-origin.guard.js';
import { McpServerFactory } from './mcp-server.factory.js';
import { McpSessionsRepository } from './mcp-sessions.repository.js';
import { McpAnswerListener, McpSessions, McpWriteConfirmations } from './mcp-sessions.service.js';
import { ScopeGuard } from './scope.guard.js';
import { ToolApiController } from './tool-api.controller.js';
import { ToolExplorer } from '../tool-kit/tool.explorer.js';
import { ToolCallPipeline } from './tool-call-pipeline.js';
import { ToolsService } from './tools.service.js';

/**
 * The registry of every `@ToolProvider()` in the app and the two Area A doors to it (JSON, MCP). Providers live in
 * their own feature modules; nothing here names them.
 */
@Module({
  imports: [DiscoveryModule, ApiKeysModule, IdempotencyModule],
  controllers: [ToolApiController, McpController],
  providers: [
    ToolExplorer,
    ToolsService,
    ToolCallPipeline,
    ScopeGuard,
    McpServerFactory,
    McpOriginGuard,
    McpSessionsRepository,
    McpSessions,
    McpAnswerListener,
    McpWriteConfirmations,
    McpExtensions,
  ],
  exports: [ToolsService, ToolCallPipeline, McpExtensions],
})
export class ToolsModule {}
