import { Controller, Delete, Get, Headers, Post, Req, Res, UseGuards, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { JsonRpcErrorSchema, JsonRpcMessageSchema, JsonRpcResponseSchema } from './mcp.schemas.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import type { Request, Response } from 'express';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { JSON_RPC_SERVER_ERROR } from '../../common/errors/json-rpc-error-body.js';
import { ApiKeyAuthGuard, setUsageStatus, setUsageTool } from '../api-keys/api-key-auth.guard.js';
import { KeyRateLimitGuard } from '../api-keys/key-rate-limit.guard.js';
import { Caller, OwnerInterceptor, type KeyCaller } from '../api-keys/owner.interceptor.js';
import { McpOriginGuard } from './mcp-origin.guard.js';
import { McpServerFactory } from './mcp-server.factory.js';
import { AnyKeyScope, ScopeGuard } from './scope.guard.js';

/**
 * Area A, second door: MCP Streamable HTTP (stateless, JSON responses) on the same registry. Each POST
 * gets its own Server + transport, so concurrent requests share nothing but ToolsService. Guards run
 * Origin (403) → key (401) → any-scope; the per-key limit counts every POST (one message: batches are
 * refused) like the JSON door, and is
 * answered in-band for tools/call (an `isError` result with rate_limited) and as HTTP 429 otherwise.
 * Transport-level errors are JSON-RPC error objects (see renderJsonRpcError).
 */
@ApiTags('tool API (Area A)')
@Controller('api/v1/public/mcp')
export class McpController {
  constructor(
    private readonly servers: McpServerFactory,
    private readonly keyLimit: KeyRateLimitGuard,
  ) {}

  @Post()
  @UseGuards(McpOriginGuard, ApiKeyAuthGuard, ScopeGuard)
  @AnyKeyScope('mcp')
  @UseInterceptors(OwnerInterceptor)
  @ApiOperation({
    summary: 'MCP Streamable HTTP: JSON-RPC 2.0 (initialize, ping, tools/list, tools/call)',
    description:
      'One JSON-RPC message per POST (stateless; Accept: application/json, text/event-stream). Tool failures are tools/call results with isError: true carrying the Area A error code; refusals before the call are JSON-RPC errors whose data is the Area A error body.',
  })
  @ApiBody({ schema: { $ref: JsonRpcMessageSchema.$ref } })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Write tools: as on POST /call' })
  @ApiResponse({ status: 200, description: 'The JSON-RPC response', schema: { $ref: JsonRpcResponseSchema.$ref } })
  @ApiResponse({ status: 202, description: 'A notification or response was accepted (no body)' })
  @ApiResponse({ status: 400, description: 'Not JSON (-32700), not a single JSON-RPC message (-32600), or a bad request for the protocol revision', schema: { $ref: JsonRpcErrorSchema.$ref } })
  @ApiResponse({
    status: 401,
    description: 'No credential or a bad one',
    headers: { 'WWW-Authenticate': { required: true, description: 'Bearer challenge with resource_metadata (OAuth discovery)', schema: { type: 'string' } } },
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({ status: 403, description: 'An Origin not in MCP_ALLOWED_ORIGINS', schema: { $ref: JsonRpcErrorSchema.$ref } })
  @ApiResponse({ status: 406, description: 'Accept does not allow application/json and text/event-stream', schema: { $ref: JsonRpcErrorSchema.$ref } })
  @ApiResponse({ status: 413, description: 'Body too large', schema: { $ref: JsonRpcErrorSchema.$ref } })
  @ApiResponse({ status: 415, description: 'Content-Type is not application/json', schema: { $ref: JsonRpcErrorSchema.$ref } })
  @ApiResponse({
    status: 429,
    description: 'Rate limited (a tools/call is answered in-band instead, as an isError result)',
    headers: { 'Retry-After': { required: true, description: 'Seconds to wait', schema: { type: 'integer', minimum: 1 } } },
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({ status: 500, description: 'Unexpected failure', schema: { $ref: JsonRpcErrorSchema.$ref } })
  @ApiResponse({ status: 503, description: 'The database or Redis is unavailable (the credential cannot be checked)', schema: { $ref: JsonRpcErrorSchema.$ref } })
  async post(
    @Caller() caller: KeyCaller,
    @Req() request: Request,
    @Res() response: Response,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
  ): Promise<void> {
    const body: unknown = request.body;
    const toolCall = body === undefined ? undefined : inspectBody(body);
    if (toolCall?.label) setUsageTool(request, toolCall.label);

    let rateLimited: AppException | undefined;
    try {
      await this.keyLimit.enforce(caller.keyId);
    } catch (error) {
      if (!(error instanceof AppException) || !toolCall?.isSingleToolCall) throw error;
      rateLimited = error;
    }

    const context = {
      caller,
      rateLimited,
      idempotencyKey,
      onToolCall: (tool: string, status: number) => {
        setUsageTool(request, tool);
        setUsageStatus(request, status);
      },
    };
    // Revision 2026-07-28 (a per-request `_meta` envelope claim) goes to the v2 SDK entry, as that SDK
    // classifies it; everything else is 2025-era traffic for the v1 transport below.
    if (body !== undefined) {
      const webRequest = toWebRequest(request, body);
      if (!(await isLegacyRequest(webRequest, body))) {
        await sendWebResponse(response, await this.servers.serveModern(webRequest, body, context));
        return;
      }
    }
    const server = this.servers.create(context);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    // The global JSON parser already read the body; an absent one (non-JSON Content-Type) is the transport's 415.
    await transport.handleRequest(request, response, body);
  }

  @Get()
  @ApiOperation({ summary: 'Not offered: the server is stateless and opens no SSE stream (405)' })
  @ApiResponse({ status: 405, description: 'Allow: POST', schema: { $ref: JsonRpcErrorSchema.$ref } })
  get(@Res() response: Response): void {
    methodNotAllowed(response);
  }

  @Delete()
  @ApiOperation({ summary: 'Not offered: the server is stateless and has no sessions to end (405)' })
  @ApiResponse({ status: 405, description: 'Allow: POST', schema: { $ref: JsonRpcErrorSchema.$ref } })
  remove(@Res() response: Response): void {
    methodNotAllowed(response);
  }
}

interface BodyInfo {
  /** Usage-log label: the JSON-RPC method, or the tool name of a tools/call. */
  label?: string;
  isSingleToolCall: boolean;
}

/**
 * Valid JSON that is not a JSON-RPC message is -32600 Invalid Request (the SDK would call it a parse
 * error). Invalid JSON never gets here: the body parser fails first and renders -32700.
 */
function inspectBody(body: unknown): BodyInfo {
  // Batches are not part of the MCP revisions spoken here, and one POST must be one message so that the
  // per-key limit counts work, not envelopes (API.md, "Rate limits count work").
  if (Array.isArray(body)) {
    throw new AppException(ErrorCode.InvalidRequest, 'Invalid Request: JSON-RPC batches (arrays) are not supported; send one message per POST');
  }
  if (!JSONRPCMessageSchema.safeParse(body).success) {
    throw new AppException(ErrorCode.InvalidRequest, 'Invalid Request: the body is not a JSON-RPC 2.0 message');
  }
  const message = body as { method?: unknown; params?: { name?: unknown } };
  if (typeof message.method !== 'string') return { isSingleToolCall: false };
  if (message.method === 'tools/call' && typeof message.params?.name === 'string') {
    return { label: message.params.name.slice(0, 100), isSingleToolCall: true };
  }
  return { label: message.method.slice(0, 100), isSingleToolCall: false };
}

/** The parsed Express request as a web Request (the v2 SDK's face); the body is the parsed JSON again. */
function toWebRequest(request: Request, body: unknown): globalThis.Request {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (name === 'content-length') continue;
    if (typeof value === 'string') headers[name] = value;
    else if (Array.isArray(value)) headers[name] = value.join(', ');
  }
  const url = new URL(request.originalUrl, `${request.protocol}://${request.headers.host ?? 'localhost'}`);
  return new globalThis.Request(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

async function sendWebResponse(response: Response, answer: globalThis.Response): Promise<void> {
  response.status(answer.status);
  answer.headers.forEach((value, name) => response.setHeader(name, value));
  response.end(Buffer.from(await answer.arrayBuffer()));
}

function methodNotAllowed(response: Response): void {
  response
    .status(405)
    .setHeader('Allow', 'POST')
    .json({ jsonrpc: '2.0', id: null, error: { code: JSON_RPC_SERVER_ERROR, message: 'Method not allowed: this MCP server is stateless; send JSON-RPC with POST' } });
}
