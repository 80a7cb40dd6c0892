import { Body, Controller, Get, Headers, HttpCode, Inject, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { sendJson, sendJsonResult } from '../../common/http/send-json.js';
import { ApiBareData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { TOOL_CALL_REQUEST, TOOL_CALL_RESPONSE, TOOL_LIST_RESPONSE } from './tool-openapi.js';
import type { Request, Response } from 'express';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ApiKeyAuthGuard, protectedResourceMetadataUrl, setUsageTool } from '../api-keys/api-key-auth.guard.js';
import { Caller, type KeyCaller } from '../api-keys/key-caller.js';
import { AnyKeyScope, ScopeInPipeline, ScopeGuard } from './scope.guard.js';
import { toolCallBody, type ToolCallBody } from './tool-call-body.js';
import { ToolCallPipeline } from './tool-call-pipeline.js';
import { ToolsService } from './tools.service.js';

/**
 * Area A: the JSON door to the tool registry. It translates HTTP in and out; the call itself is ToolCallPipeline's.
 * In order: key (401, the guard) → the caller's limit (429) → body (400) → tool, scope, arguments (404/403/400) →
 * confirmation, idempotency, the tool. The key guard hands the caller to the handler (`@Caller()`).
 * Bodies are bare; errors are rendered by the global filter in the Area A shape.
 */
@ApiTags('tool API (Area A)')
@Controller('api/v1/public/mcp')
@UseGuards(ApiKeyAuthGuard, ScopeGuard)
export class ToolApiController {
  constructor(
    private readonly tools: ToolsService,
    private readonly pipeline: ToolCallPipeline,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** The limit step, answered as HTTP 429 on this door. */
  private async limit(caller: KeyCaller): Promise<void> {
    const limited = await this.pipeline.limit(caller);
    if (limited.refused) throw limited.refused;
  }

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
  async list(@Caller() caller: KeyCaller) {
    await this.limit(caller);
    const tools = this.tools.toolsFor(caller).map((tool) => this.tools.descriptor(tool, caller));
    return { scopes: caller.scopes, tool_count: tools.length, tools };
  }

  @Post('call')
  @HttpCode(200)
  @ScopeInPipeline()
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
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    await this.limit(caller);
    let call: ToolCallBody;
    try {
      call = toolCallBody.parse(body);
    } catch (error) {
      this.pipeline.refuse('json', caller, (body as { name?: unknown } | undefined)?.name, error);
      throw error;
    }
    setUsageTool(request, call.name);
    // The limit step ran above, before the body was read.
    const ran = await this.pipeline
      .run({ door: 'json', caller, tool: call.name, args: call.arguments, idempotencyKey, limited: {} })
      .catch((error: unknown) => {
        throw this.withScopeChallenge(error);
      });
    const { outcome } = ran;
    if (ran.replayed) response.setHeader('Idempotent-Replayed', 'true');
    if (outcome.truncated) response.setHeader('X-Truncated', 'true');
    // Answered here rather than returned: a POST answer needs no ETag (see sendJson). Errors thrown above
    // still go through the exception filter. A result the tool had written as JSON text goes out as it is.
    if (outcome.resultJson === undefined) sendJson(response, 200, { result: outcome.result });
    else sendJsonResult(response, outcome.resultJson);
  }

  /** A 403 insufficient_scope carries the RFC 6750 challenge naming the scope, so an OAuth client can step up. */
  private withScopeChallenge(error: unknown): unknown {
    if (!(error instanceof AppException) || error.code !== ErrorCode.InsufficientScope) return error;
    const scope = (error.details as { required_scope?: string } | undefined)?.required_scope;
    const challenge = `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${protectedResourceMetadataUrl(this.config)}"`;
    return new AppException(error.code, error.message, error.details, {
      ...error.headers,
      'WWW-Authenticate': challenge,
    });
  }
}
