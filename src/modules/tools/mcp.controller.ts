import { applyDecorators, Controller, Delete, Get, Headers, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { JsonRpcErrorSchema, JsonRpcMessageSchema, JsonRpcResponseSchema } from './mcp.schemas.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  JSONRPCMessageSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { CLIENT_INFO_META_KEY, isLegacyRequest } from '@modelcontextprotocol/server';
import type { Request, Response } from 'express';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { JSON_RPC_SERVER_ERROR } from '../../common/errors/json-rpc-error-body.js';
import { sendJsonChunks } from '../../common/http/send-json.js';
import { ApiKeyAuthGuard, setUsageStatus, setUsageTool } from '../api-keys/api-key-auth.guard.js';
import { Caller, type KeyCaller } from '../api-keys/key-caller.js';
import { setMcpClient, toMcpClientInfo, type McpClientInfo } from './mcp-client-info.js';
import { fastMcpCall, type FastMcpCall } from './mcp-fast-path.js';
import { McpOriginGuard } from './mcp-origin.guard.js';
import { McpServerFactory, type McpRequestContext } from './mcp-server.factory.js';
import { McpSessions, McpWriteConfirmations } from './mcp-sessions.service.js';
import { AnyKeyScope, ScopeGuard } from './scope.guard.js';
import { ToolCallPipeline, type LimitOutcome, type ResolvedTool } from './tool-call-pipeline.js';

/**
 * The endpoint and its narrowed URLs, one transport: `/readonly` (read-only tools), `/x/{toolset}` (one toolset's
 * tools) and `/x/{toolset}/readonly`. The narrowing is read where the caller is made (ApiKeyAuthGuard).
 */
const MCP_PATHS = ['', 'readonly', 'x/:toolset', 'x/:toolset/readonly'];

/** The per-request narrowing headers, as the OpenAPI document names them. */
function ApiNarrowing(): MethodDecorator {
  return applyDecorators(
    ApiHeader({
      name: 'X-MCP-Toolsets',
      required: false,
      description:
        'Only the tools of these toolsets, comma-separated (tasks, docs, github, …); an unknown one is 400 invalid_argument',
    }),
    ApiHeader({
      name: 'X-MCP-Readonly',
      required: false,
      description: 'true: only tools marked readOnlyHint: true (narrowing only; false never widens)',
    }),
  );
}

/**
 * Area A, second door: MCP Streamable HTTP on the same registry. Each POST gets its own Server + transport, so
 * concurrent requests share nothing but ToolsService and PostgreSQL. 2025-era clients that declared `elicitation`
 * (2025-06-18/2025-11-25) get an `Mcp-Session-Id` at initialize; the session lives in PostgreSQL (McpSessions), so
 * any instance serves it, and a write of a "confirm writes" credential is then answered as an SSE stream carrying
 * `elicitation/create` before the result. Every other request is stateless with a JSON answer, as it always was. Guards run
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
    private readonly pipeline: ToolCallPipeline,
    private readonly sessions: McpSessions,
    private readonly confirmations: McpWriteConfirmations,
  ) {}

  @Post(MCP_PATHS)
  @UseGuards(McpOriginGuard, ApiKeyAuthGuard, ScopeGuard)
  @AnyKeyScope('mcp')
  @ApiOperation({
    summary: 'MCP Streamable HTTP: JSON-RPC 2.0 (initialize, ping, tools/list, tools/call)',
    description:
      'One JSON-RPC message per POST (stateless; Accept: application/json, text/event-stream). Tool failures are tools/call results with isError: true carrying the Area A error code; refusals before the call are JSON-RPC errors whose data is the Area A error body. /readonly, /x/{toolset} and /x/{toolset}/readonly are the same transport narrowed to read-only tools, one toolset, or both (like the X-MCP-Readonly and X-MCP-Toolsets headers); an unknown toolset is 400.',
  })
  @ApiBody({ schema: { $ref: JsonRpcMessageSchema.$ref } })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Write tools: as on POST /call' })
  @ApiNarrowing()
  @ApiResponse({
    status: 200,
    description:
      'The JSON-RPC response; in a 2025-era session whose client declared elicitation, a write of a confirmWrites credential is answered as text/event-stream instead (elicitation/create, then the result)',
    schema: { $ref: JsonRpcResponseSchema.$ref },
  })
  @ApiResponse({ status: 202, description: 'A notification or response was accepted (no body)' })
  @ApiResponse({
    status: 400,
    description:
      'Not JSON (-32700), not a single JSON-RPC message (-32600), or a bad request for the protocol revision',
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({
    status: 401,
    description: 'No credential or a bad one',
    headers: {
      'WWW-Authenticate': {
        required: true,
        description: 'Bearer challenge with resource_metadata (OAuth discovery)',
        schema: { type: 'string' },
      },
    },
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({
    status: 403,
    description: 'An Origin not in MCP_ALLOWED_ORIGINS',
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({
    status: 404,
    description: 'Mcp-Session-Id names no session of this credential (unknown, ended or expired): initialize again',
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({
    status: 406,
    description: 'Accept does not allow application/json and text/event-stream',
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({ status: 413, description: 'Body too large', schema: { $ref: JsonRpcErrorSchema.$ref } })
  @ApiResponse({
    status: 415,
    description: 'Content-Type is not application/json',
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({
    status: 429,
    description: 'Rate limited (a tools/call is answered in-band instead, as an isError result)',
    headers: {
      'Retry-After': { required: true, description: 'Seconds to wait', schema: { type: 'integer', minimum: 1 } },
    },
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({ status: 500, description: 'Unexpected failure', schema: { $ref: JsonRpcErrorSchema.$ref } })
  @ApiResponse({
    status: 503,
    description: 'The database or Redis is unavailable (the credential cannot be checked)',
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  async post(
    @Caller() caller: KeyCaller,
    @Req() request: Request,
    @Res() response: Response,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
  ): Promise<void> {
    const body: unknown = request.body;
    const fast = body === undefined ? undefined : fastMcpCall(request.headers, body);
    // The resolve step, once per call: a tools/call's tool decides which path answers it, and the pipeline takes it.
    let resolved = fast?.method === 'tools/call' ? this.pipeline.resolve(fast.name) : undefined;
    // A request the fast path hands back keeps what it learnt: its 2025-era session is not looked up again.
    const learnt = fast ? await this.servedFast(fast, resolved, caller, request, response, idempotencyKey) : false;
    if (learnt === true) return;
    const toolCall = body === undefined ? undefined : inspectBody(body);
    if (toolCall?.label) setUsageTool(request, toolCall.label);
    if (toolCall?.tool !== undefined && resolved?.name !== toolCall.tool)
      resolved = this.pipeline.resolve(toolCall.tool);
    const context: McpRequestContext = {
      caller: learnt ? learnt.caller : caller,
      session: learnt ? learnt.session : undefined,
      client: learnt ? learnt.client : undefined,
      limited: await this.limit(caller, toolCall),
      resolved,
      idempotencyKey,
      onToolCall: (tool: string, status: number) => {
        setUsageTool(request, tool);
        setUsageStatus(request, status);
      },
    };
    if (body !== undefined && (await this.servedAsModern(request, response, body, context))) return;
    const session = await this.legacySession(
      request,
      response,
      body,
      context,
      learnt !== false && learnt.era === 'legacy',
    );
    if (session.answered) return;
    await this.serveLegacy(request, response, body, context, session.id, toolCall);
  }

  /**
   * The common case without an SDK server (mcp-fast-path.ts): the same session check, limit, attribution, usage and
   * tool call as below, answered as the SDK would. True when answered (or refused: an unknown session). Otherwise this
   * request needs the SDK after all (a call that may ask the user, a tool an extension serves): nothing has been counted,
   * and what was learnt (the caller, its session) is handed back.
   */
  private async servedFast(
    call: FastMcpCall,
    resolved: ResolvedTool | undefined,
    caller: KeyCaller,
    request: Request,
    response: Response,
    idempotencyKey: string | undefined,
  ): Promise<true | (McpRequestContext & { era: FastMcpCall['era'] })> {
    const context: McpRequestContext = { caller, idempotencyKey, resolved };
    let client: McpClientInfo | undefined;
    if (call.era === 'modern') {
      client = toMcpClientInfo(
        (request.body as { params: { _meta: Record<string, unknown> } }).params._meta[CLIENT_INFO_META_KEY],
      );
    } else if (!(await this.presentedSession(request, response, context))) {
      return true;
    }
    if (!this.servers.servesFast(call, context)) return { ...context, era: call.era };
    if (client) nameClient(request, context, client);
    setUsageTool(request, call.method === 'tools/call' ? call.name.slice(0, 100) : call.method);
    context.limited = await this.limit(caller, { isSingleToolCall: call.method === 'tools/call' });
    context.onToolCall = (_tool: string, status: number) => setUsageStatus(request, status);
    sendJsonChunks(response, await this.servers.serveFast(call, context), 'application/json');
    return true;
  }

  /**
   * The 2025-era session a request presents in Mcp-Session-Id, if any, put on the context with its client. False when
   * it answered the spec's 404: unknown, expired, ended, malformed or another credential's, after which a client
   * initializes again.
   */
  private async presentedSession(request: Request, response: Response, context: McpRequestContext): Promise<boolean> {
    const header = request.headers['mcp-session-id'];
    if (header === undefined) return true;
    const session = typeof header === 'string' ? await this.sessions.resolve(header, context.caller.keyId) : undefined;
    if (!session) {
      sessionNotFound(response);
      return false;
    }
    context.session = session;
    nameClient(request, context, session.client);
    return true;
  }

  /**
   * The pipeline's limit step, once per POST (every POST counts, whatever it carries). Over the limit, a single
   * tools/call is answered in-band (an isError result, so the limit reaches the model): the outcome goes to the
   * pipeline with the call; anything else is answered HTTP 429 here.
   */
  private async limit(
    caller: KeyCaller,
    toolCall: Pick<BodyInfo, 'isSingleToolCall'> | undefined,
  ): Promise<LimitOutcome> {
    const limited = await this.pipeline.limit(caller);
    if (limited.refused && !toolCall?.isSingleToolCall) throw limited.refused;
    return limited;
  }

  /**
   * Revision 2026-07-28 (a per-request `_meta` envelope claim) goes to the v2 SDK entry, as that SDK
   * classifies it; everything else is 2025-era traffic for the v1 transport. True when answered here.
   */
  private async servedAsModern(
    request: Request,
    response: Response,
    body: unknown,
    context: McpRequestContext,
  ): Promise<boolean> {
    const webRequest = toWebRequest(request, body);
    if (await isLegacyRequest(webRequest, body)) return false;
    nameClient(
      request,
      context,
      toMcpClientInfo((body as { params?: { _meta?: Record<string, unknown> } }).params?._meta?.[CLIENT_INFO_META_KEY]),
    );
    await sendWebResponse(response, await this.servers.serveModern(webRequest, body, context));
    return true;
  }

  /**
   * 2025-era sessions. An initialize may open one: it is stored before the answer names it (the client's next
   * POST may reach another instance). A later POST names it in Mcp-Session-Id; an unknown one is the spec's 404,
   * and a JSON-RPC answer in it is the answer to one of our elicitation requests (202). `answered`: nothing left to do.
   */
  private async legacySession(
    request: Request,
    response: Response,
    body: unknown,
    context: McpRequestContext,
    /** The fast path already checked the session this request presents. */
    sessionChecked = false,
  ): Promise<{ answered: true } | { answered: false; id?: string }> {
    if (isInitializeRequest(body)) {
      // A new initialize starts over: a session header on it is not looked at (the spec has none there).
      nameClient(request, context, toMcpClientInfo(body.params.clientInfo));
      const opening = this.sessions.openingFor(body.params, (capabilities) =>
        this.servers.extensionWantsSession(capabilities),
      );
      if (!opening) return { answered: false };
      if (!opening.stored) return { answered: false, id: this.sessions.labelSession(context.caller.keyId, opening) };
      const id = this.sessions.newId();
      await this.sessions.open(id, context.caller.keyId, opening);
      return { answered: false, id };
    }
    if (!sessionChecked && !(await this.presentedSession(request, response, context))) return { answered: true };
    const session = context.session;
    if (session && (isJSONRPCResultResponse(body) || isJSONRPCErrorResponse(body))) {
      // The call waiting for this answer may be on another instance.
      await this.confirmations.answer(session, body);
      response.status(202).end();
      return { answered: true };
    }
    return { answered: false };
  }

  /** A v1 SDK Server + transport for this one POST; JSON answers, or SSE when the call may ask the user mid-call. */
  private async serveLegacy(
    request: Request,
    response: Response,
    body: unknown,
    context: McpRequestContext,
    sessionId: string | undefined,
    toolCall: BodyInfo | undefined,
  ): Promise<void> {
    const closed = new AbortController();
    context.signal = closed.signal;
    const server = this.servers.create(context);
    const transport = new StreamableHTTPServerTransport({
      // Sessions are checked against PostgreSQL (legacySession); the transport's own check is in-memory, one instance only.
      sessionIdGenerator: sessionId === undefined ? undefined : () => sessionId,
      enableJsonResponse: !this.servers.mayAskMidCall(context, toolCall?.hasProgressToken),
    });
    response.on('close', () => {
      closed.abort();
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    // The global JSON parser already read the body; an absent one (non-JSON Content-Type) is the transport's 415.
    await transport.handleRequest(request, response, body);
  }

  @Get(MCP_PATHS)
  @ApiOperation({
    summary: 'Not offered: the server sends nothing unasked, so it opens no standalone SSE stream (405)',
  })
  @ApiResponse({ status: 405, description: 'Allow: POST, DELETE', schema: { $ref: JsonRpcErrorSchema.$ref } })
  get(@Res() response: Response): void {
    methodNotAllowed(
      response,
      'POST, DELETE',
      'Method not allowed: this MCP server opens no standalone SSE stream; send JSON-RPC with POST',
    );
  }

  @Delete(MCP_PATHS)
  @UseGuards(McpOriginGuard, ApiKeyAuthGuard, ScopeGuard)
  @AnyKeyScope('mcp')
  @ApiOperation({
    summary:
      'Ends the MCP session named by Mcp-Session-Id (204; 404 if unknown; 405 without the header or for a label session, which holds nothing to end)',
  })
  @ApiResponse({ status: 204, description: 'The session is ended' })
  @ApiResponse({
    status: 404,
    description: 'No such session for this credential',
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  @ApiResponse({
    status: 405,
    description:
      'No Mcp-Session-Id header (Allow: POST, DELETE), or a label session, which a client cannot end (Allow: POST)',
    schema: { $ref: JsonRpcErrorSchema.$ref },
  })
  async remove(@Caller() caller: KeyCaller, @Req() request: Request, @Res() response: Response): Promise<void> {
    const header = request.headers['mcp-session-id'];
    if (header === undefined) {
      methodNotAllowed(
        response,
        'POST, DELETE',
        'Method not allowed: DELETE ends a session; send it with the Mcp-Session-Id header',
      );
      return;
    }
    const ended = typeof header === 'string' ? await this.sessions.end(header, caller.keyId) : 'unknown';
    if (ended === 'unknown') return sessionNotFound(response);
    if (ended === 'not-endable') {
      methodNotAllowed(
        response,
        'POST',
        'Method not allowed: this session only names the client; it holds nothing to end and lasts as long as the credential',
      );
      return;
    }
    response.status(204).end();
  }
}

interface BodyInfo {
  /** Usage-log label: the JSON-RPC method, or the tool name of a tools/call. */
  label?: string;
  /** The tool name of a tools/call, as sent. */
  tool?: string;
  isSingleToolCall: boolean;
  /** The tools/call asked for progress notifications (`_meta.progressToken`). */
  hasProgressToken?: boolean;
}

/**
 * Valid JSON that is not a JSON-RPC message is -32600 Invalid Request (the SDK would call it a parse
 * error). Invalid JSON never gets here: the body parser fails first and renders -32700.
 */
function inspectBody(body: unknown): BodyInfo {
  // Batches are not part of the MCP revisions spoken here, and one POST must be one message so that the
  // per-key limit counts work, not envelopes (API.md, "Rate limits count work").
  if (Array.isArray(body)) {
    throw new AppException(
      ErrorCode.InvalidRequest,
      'Invalid Request: JSON-RPC batches (arrays) are not supported; send one message per POST',
    );
  }
  if (!JSONRPCMessageSchema.safeParse(body).success) {
    throw new AppException(ErrorCode.InvalidRequest, 'Invalid Request: the body is not a JSON-RPC 2.0 message');
  }
  const message = body as { method?: unknown; params?: { name?: unknown; _meta?: { progressToken?: unknown } } };
  if (typeof message.method !== 'string') return { isSingleToolCall: false };
  if (message.method === 'tools/call' && typeof message.params?.name === 'string') {
    const token = message.params._meta?.progressToken;
    return {
      label: message.params.name.slice(0, 100),
      tool: message.params.name,
      isSingleToolCall: true,
      hasProgressToken: typeof token === 'string' || typeof token === 'number',
    };
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

function methodNotAllowed(response: Response, allow: string, message: string): void {
  response
    .status(405)
    .setHeader('Allow', allow)
    .json({ jsonrpc: '2.0', id: null, error: { code: JSON_RPC_SERVER_ERROR, message } });
}

/**
 * The client of this request, once known: on the request (usage log) and on the caller the pipeline is handed (audit
 * log), so both name it.
 */
function nameClient(request: Request, context: McpRequestContext, client: McpClientInfo | undefined): void {
  if (!client) return;
  context.client = client;
  context.caller = Object.freeze({ ...context.caller, client });
  setMcpClient(request, client);
}

/** The SDK's own answer for a session it does not know (-32001), so clients recognise it and initialize again. */
function sessionNotFound(response: Response): void {
  response
    .status(404)
    .json({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found: initialize again' } });
}
