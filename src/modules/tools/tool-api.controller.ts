import { Body, Controller, Get, Headers, HttpCode, Post, Res, UseGuards } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { sendJson, sendJsonResult } from '../../common/http/send-json.js';
import { ApiBareData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { TOOL_CALL_REQUEST, TOOL_CALL_RESPONSE, TOOL_LIST_RESPONSE } from './tool-openapi.js';
import type { Response } from 'express';
import { ApiKeyAuthGuard } from '../api-keys/api-key-auth.guard.js';
import { KeyRateLimitGuard } from '../api-keys/key-rate-limit.guard.js';
import { Caller, type KeyCaller } from '../api-keys/key-caller.js';
import { AnyKeyScope, RequiresToolScope, ScopeGuard } from './scope.guard.js';
import { parseToolCallBody } from './tool-call-body.js';
import { KeyToolCallsService } from './key-tool-calls.service.js';
import { ToolsService } from './tools.service.js';
import { observeToolCall } from './tool-call-telemetry.js';

/**
 * Area A: the JSON door to the tool registry. Guards run in order: key (401) → per-key limit (429) →
 * body, tool and scope (400/404/403); the key guard hands the owner to the handler as an Actor (`@Caller()`).
 * Bodies are bare; errors are rendered by the global filter in the Area A shape.
 */
@ApiTags('tool API (Area A)')
@Controller('api/v1/public/mcp')
@UseGuards(ApiKeyAuthGuard, KeyRateLimitGuard, ScopeGuard)
export class ToolApiController {
  constructor(
    private readonly tools: ToolsService,
    private readonly keyCalls: KeyToolCallsService,
  ) {}

  @Get('tools')
  @AnyKeyScope('tools/list')
  @ApiHeader({
    name: 'X-MCP-Toolsets',
    required: false,
    description: 'Only the tools of these toolsets, comma-separated (tasks, docs, github, …)',
  })
  @ApiHeader({ name: 'X-MCP-Readonly', required: false, description: 'true: only read-only tools' })
  @ApiOperation({
    summary:
      "The tools this key may use (its scopes, tools allowlist, read-only choice, the request's X-MCP-Toolsets/X-MCP-Readonly), with their parameters",
  })
  @ApiBareData(200, { $ref: `#/components/schemas/${TOOL_LIST_RESPONSE}` }, 'The tools, in catalog order')
  list(@Caller() caller: KeyCaller) {
    const tools = this.tools.toolsFor(caller).map((tool) => this.tools.descriptor(tool, caller));
    return { scopes: caller.scopes, tool_count: tools.length, tools };
  }

  @Post('call')
  @HttpCode(200)
  @RequiresToolScope()
  @ApiOperation({
    summary: 'Call one tool: {name, arguments} → {result}',
    description:
      'Ints may also come as decimal strings. A write tool with an Idempotency-Key returns the first result for a repeat within 24 h (Idempotent-Replayed: true) and 409 idempotency_conflict for other arguments. x-atrium-tools names each tool’s argument and result schemas.',
  })
  @ApiBody({ schema: { $ref: `#/components/schemas/${TOOL_CALL_REQUEST}` } })
  @ApiHeader({
    name: 'X-MCP-Toolsets',
    required: false,
    description: 'A tool outside these toolsets (comma-separated) is 403 tool_not_allowed',
  })
  @ApiHeader({ name: 'X-MCP-Readonly', required: false, description: 'true: a write tool is 403 tool_not_allowed' })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Write tools: a repeat with the same key and arguments within 24 h returns the first result',
  })
  @ApiResponse({
    status: 200,
    description: 'The tool’s result',
    headers: {
      'X-Truncated': {
        description: 'true when a list result stopped at its limit',
        schema: { type: 'string', enum: ['true'] },
      },
      'Idempotent-Replayed': {
        description: 'true when this is the stored answer of an earlier call with the same Idempotency-Key',
        schema: { type: 'string', enum: ['true'] },
      },
    },
    schema: { $ref: `#/components/schemas/${TOOL_CALL_RESPONSE}` },
  })
  @ApiErrors(403, 404, 409, 502)
  async call(
    @Caller() caller: KeyCaller,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const { name, arguments: args } = parseToolCallBody(body);
    const outcome = await observeToolCall({ door: 'json', tool: this.tools.find(name) }, () =>
      this.keyCalls.invoke(this.keyCalls.prepare(name, args, caller), caller, idempotencyKey),
    );
    if (outcome.replayed) response.setHeader('Idempotent-Replayed', 'true');
    if (outcome.truncated) response.setHeader('X-Truncated', 'true');
    // Answered here rather than returned: a POST answer needs no ETag (see sendJson). Errors thrown above
    // still go through the exception filter. A result the tool had written as JSON text goes out as it is.
    if (outcome.resultJson === undefined) sendJson(response, 200, { result: outcome.result });
    else sendJsonResult(response, outcome.resultJson);
  }
}
