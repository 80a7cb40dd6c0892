import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  LOG_LEVEL_META_KEY,
  SERVER_INFO_META_KEY,
  Server as ModernServer,
  type InputRequiredResult,
  type McpHttpHandler,
  type ServerContext as ModernContext,
} from '@modelcontextprotocol/server';
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode as JsonRpcErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type ElicitRequestFormParams,
  type ServerCapabilities,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AppException } from '../../common/errors/app.exception.js';
import { renderError } from '../../common/errors/error-body.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { OPEN_RESULT } from '../../common/http/send-json.js';
import { toAppException } from '../../common/errors/to-app-exception.js';
import { RequestContext } from '../../common/request-context/request-context.js';
import { redactValue } from '../../common/secrets/secret-redactor.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import type { KeyCaller } from '../api-keys/key-caller.js';
import type { RegisteredTool } from '../tool-kit/tool-definition.js';
import type { JsonSchema } from '../tool-kit/tool-parameters.js';
import { portableSchema } from '../tool-kit/portable-schema.js';
import type { McpClientInfo } from './mcp-client-info.js';
import {
  MCP_RESOURCE_NOT_FOUND,
  McpExtensions,
  type McpExtension,
  type McpExtensionRequest,
  type McpToolAnswer,
} from './server-extensions.js';
import { McpSessionsRepository } from './mcp-sessions.repository.js';
import { McpWriteConfirmations, type ElicitOutcome, type McpSession } from './mcp-sessions.service.js';
import type { FastMcpCall } from './mcp-fast-path.js';
import {
  ToolCallPipeline,
  type ConfirmationStep,
  type LimitOutcome,
  type PreparedToolCall,
  type ResolvedTool,
  type ToolCallOutcome,
} from './tool-call-pipeline.js';
import { ToolsService, type ToolAccess } from './tools.service.js';
import { pinsKey, restrictionKey, toolAllowed, toolsetAllowed } from '../tool-kit/tool-restriction.js';

/** What one HTTP request brings to the MCP server built for it. */
export interface McpRequestContext {
  /** Named with its client once the door knows it (the audit log names what the pipeline is handed). */
  caller: KeyCaller;
  /** The limit step, run once for the whole POST by the door: a spent budget is a tools/call's `isError` result. */
  limited?: LimitOutcome;
  /** The tool of this request's tools/call, as the door resolved it to choose its path (resolved once per call). */
  resolved?: ResolvedTool;
  /** `Idempotency-Key` header of the HTTP request (write tools replay their first result, as on the JSON door). */
  idempotencyKey?: string;
  /** Told the outcome of a tools/call (tool name, Area A-equivalent HTTP status) for the usage log. */
  onToolCall?: (tool: string, status: number) => void;
  /** The 2025-era session the request presented (checked: live, this credential's). */
  session?: McpSession;
  /** The MCP client, for attribution (see mcpClientOf). */
  client?: McpClientInfo;
  /** Aborted when the HTTP exchange closes: a call waiting for the user stops waiting. */
  signal?: AbortSignal;
}

/** `structuredContent` of an `isError` result: the Area A error body. */
const TOOL_ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
      required: ['code', 'message'],
    },
    traceId: { type: 'string' },
  },
  required: ['error'],
};

const SERVER_INFO = { name: 'atrium', title: 'Atrium' } as const;
/** The key of the write confirmation in an `input_required` result and in the retried call's `inputResponses`. */
const CONFIRM_WRITE = 'atrium_confirm_write';
/** How long a 2026-07-28 requestState (a confirmation question, a fixture's round) stays answerable. */
const REQUEST_STATE_TTL_SECONDS = 600;

/**
 * How a tools/call can confirm a write with the user, one way per protocol era:
 * - 2026-07-28 (`input-required`): the multi-round-trip result carries the elicitation in the answer and the client
 *   retries with the user's answer, which works on a stateless server;
 * - 2025-06-18/2025-11-25 with a session whose client declared `elicitation` (`elicit`): `elicitation/create` is sent
 *   mid-call on the POST's SSE stream and the answer comes back in a separate POST (McpWriteConfirmations).
 * Without either (no elicitation, 2025-03-26, a sessionless 2025-era request) the call cannot ask: confirmation_required.
 */
type WriteConfirmation =
  | {
      kind: 'input-required';
      /** The client declared `elicitation` in this request's capabilities. */
      canAsk: boolean;
      /** `inputResponses` of a retried call (untrusted client input). */
      responses?: Record<string, unknown>;
      /** The payload of the `requestState` echoed by a retried call (verified by the codec: MAC, expiry, binding). */
      state?: unknown;
      /** Seals a payload into a requestState. */
      mint: (payload: ConfirmState) => Promise<string>;
    }
  | { kind: 'elicit'; ask: (params: ElicitRequestFormParams) => Promise<ElicitOutcome> };

/**
 * 2026-07-28 cache hints (SEP-2549). Lists depend on the credential (its scopes, its documents), so they are private to
 * it; the tool list changes only with a deploy, resource lists and contents whenever someone writes, so those are short.
 */
const CACHE_HINTS = {
  list: { ttlMs: 60_000, cacheScope: 'private' },
  read: { ttlMs: 10_000, cacheScope: 'private' },
} as const;

/** Where the per-request context rides through the modern handler (its authInfo pass-through). */
const ATRIUM_CONTEXT = 'atrium:mcp-context';

/**
 * Builds one low-level MCP server per HTTP request, bound to the caller, for both protocol eras:
 * 2025-era requests (2025-03-26, 2025-06-18, 2025-11-25) get a v1 SDK `Server` on the Streamable HTTP
 * transport run stateless (sessions, when there is one, are checked by the controller against PostgreSQL); 2026-07-28 requests (sessionless, `server/discover`, version in each
 * request's `_meta`) go through the v2 SDK's `createMcpHandler`, whose factory builds a v2 `Server`.
 * Both register the same two handlers below, so the registry, order, schemas and results cannot drift
 * apart. The low-level servers are used because tool schemas come from the one parameter definition
 * (`ToolsService.schemaView`), not from a second zod definition. Nothing about a tool is decided here:
 * scope checks, validation and dispatch are `ToolsService`'s, exactly as for the JSON door.
 */
@Injectable()
export class McpServerFactory implements OnApplicationShutdown {
  private readonly logger = new Logger('Mcp');
  private readonly listing = new Map<string, Tool>();
  /** The registry's part of tools/list, by what shapes it (see openToolList). */
  private readonly toolLists = new Map<string, RegistryToolList>();
  /** What the 2026-07-28 SDK server adds to every result (`resultType`, its serverInfo), closing the result object. */
  private readonly modernResultTail: string;
  /** HMAC key of 2026-07-28 requestState (derived from the pepper, so every instance verifies every other's). */
  private readonly requestStateKey: Buffer;
  /** The 2026-07-28 entry: strict (2025 traffic never reaches it), JSON answers, one per process. */
  readonly modern: McpHttpHandler;

  constructor(
    private readonly tools: ToolsService,
    private readonly pipeline: ToolCallPipeline,
    private readonly confirmations: McpWriteConfirmations,
    private readonly extensions: McpExtensions,
    private readonly sessionsRepository: McpSessionsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.modernResultTail = `"resultType":"complete","_meta":${JSON.stringify({ [SERVER_INFO_META_KEY]: { ...SERVER_INFO, version: config.version } })}}`;
    this.requestStateKey = createHmac('sha256', config.secrets.tokenPepper).update('atrium:mcp-request-state').digest();
    this.modern = createMcpHandler(
      (ctx) =>
        this.createModern((ctx.authInfo?.extra as Record<string, McpRequestContext> | undefined)?.[ATRIUM_CONTEXT]),
      // 'auto' answers one JSON body, as no tool emits messages before its result; 'json' would say the same with a
      // console.warn at every start, a line that is not JSON in the logs.
      {
        legacy: 'reject',
        responseMode: 'auto',
        onerror: (error) => this.logger.debug({ msg: 'MCP request refused', error: error.message }),
      },
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.modern.close();
  }

  /** A 2025-era server (v1 SDK) for one request. */
  create(context: McpRequestContext): Server {
    const capabilities = this.capabilitiesFor(context);
    const server = new Server(
      { ...SERVER_INFO, version: this.config.version },
      { capabilities, instructions: this.tools.instructionsFor(context.caller) },
    );
    const requestOf = (
      params: { _meta?: Record<string, unknown> } | undefined,
      extra: { signal: AbortSignal; requestId: string | number; sendNotification: (n: never) => Promise<void> },
    ): McpExtensionRequest => {
      const session = context.session;
      const signal = context.signal ? AbortSignal.any([extra.signal, context.signal]) : extra.signal;
      return {
        caller: context.caller,
        era: 'legacy',
        clientCapabilities: server.getClientCapabilities(),
        meta: params?._meta,
        notify: (notification) => extra.sendNotification(notification as never),
        askClient: session?.stored
          ? async (method, askParams) => {
              const send = (message: Parameters<NonNullable<Server['transport']>['send']>[0]) =>
                server.transport?.send(message, { relatedRequestId: extra.requestId }) ??
                Promise.reject(new Error('closed'));
              const outcome = await this.confirmations.askClient(session, method, askParams, send, signal);
              if ('result' in outcome) return outcome.result;
              throw new McpError(
                JsonRpcErrorCode.InternalError,
                outcome.failed === 'client-error'
                  ? `The client answered ${method} with an error (${outcome.detail})`
                  : `The client did not answer ${method} (${outcome.failed})`,
              );
            }
          : undefined,
        signal,
      };
    };
    server.setRequestHandler(ListToolsRequestSchema, () => this.listTools(context));
    const legacySchemas: Record<string, unknown> = {
      'resources/list': ListResourcesRequestSchema,
      'resources/templates/list': ListResourceTemplatesRequestSchema,
      'resources/read': ReadResourceRequestSchema,
      'resources/subscribe': SubscribeRequestSchema,
      'resources/unsubscribe': UnsubscribeRequestSchema,
      'prompts/list': ListPromptsRequestSchema,
      'prompts/get': GetPromptRequestSchema,
      'completion/complete': CompleteRequestSchema,
      'logging/setLevel': SetLevelRequestSchema,
    };
    this.registerExtensionMethods(capabilities, (method, handler) =>
      server.setRequestHandler(
        legacySchemas[method] as typeof ListToolsRequestSchema,
        (request, extra) =>
          handler(
            (request.params ?? {}) as Record<string, unknown>,
            requestOf(request.params as never, extra as never),
          ) as never,
      ),
    );
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const resolved = this.resolvedFor(context, request.params.name);
      const owner = this.extensionOfTool(resolved);
      if (owner)
        return this.callExtensionTool(
          owner,
          request.params.name,
          request.params.arguments,
          requestOf(request.params, extra),
          context,
        );
      const session = context.session;
      const confirmation: WriteConfirmation | undefined = session?.canElicit
        ? {
            kind: 'elicit',
            ask: (params) =>
              this.confirmations.ask(
                session,
                params,
                // On the SSE stream of this very POST (the transport maps relatedRequestId to it).
                (message) =>
                  server.transport?.send(message, { relatedRequestId: extra.requestId }) ??
                  Promise.reject(new Error('closed')),
                context.signal ? AbortSignal.any([extra.signal, context.signal]) : extra.signal,
              ),
          }
        : undefined;
      return this.callTool(
        resolved,
        request.params.arguments,
        context,
        confirmation,
        progressOf(request.params._meta, (n) => extra.sendNotification(n)),
      );
    });
    return server;
  }

  /**
   * Whether a 2025-era tools/call of this tool may ask the user mid-call, so its POST must be answered as an SSE
   * stream (the question goes out before the result). Every other request keeps its JSON answer.
   */
  mayAskMidCall(context: McpRequestContext, hasProgressToken = false): boolean {
    const resolved = context.resolved;
    if (resolved === undefined) return false;
    if (this.extensionOfTool(resolved)?.streamsTool?.(resolved.name)) return true;
    const tool = resolved.tool;
    // Progress notifications go out before the result, on the POST's SSE stream.
    if (hasProgressToken && tool !== undefined) return true;
    if (!context.session?.canElicit || tool === undefined) return false;
    return this.pipeline.needsConfirmation(context.caller, tool);
  }

  /** The tool of a tools/call: the one the door resolved for this request, else resolved now. */
  private resolvedFor(context: McpRequestContext, name: string): ResolvedTool {
    return context.resolved?.name === name ? context.resolved : this.pipeline.resolve(name);
  }

  /** Serves one 2026-07-28 request for this caller through the v2 SDK entry. */
  serveModern(request: Request, body: unknown, context: McpRequestContext): Promise<Response> {
    return this.modern.fetch(request, {
      parsedBody: body,
      authInfo: {
        token: '',
        clientId: context.caller.keyId,
        scopes: [...context.caller.scopes],
        extra: { [ATRIUM_CONTEXT]: context },
      },
    });
  }

  /** A 2026-07-28 server (v2 SDK) for one request: the same two handlers. */
  private createModern(context: McpRequestContext | undefined): ModernServer {
    // Only serveModern calls the entry, always with a context: fail closed if that ever changes.
    if (!context) throw new Error('MCP modern request without a caller');
    const capabilities = this.capabilitiesFor(context);
    // Signed, expiring and bound to this credential and the method: a tampered, stale or foreign requestState is
    // refused by the SDK (-32602) before any handler runs. Single use is the handler's (confirmWrite).
    const codec = createRequestStateCodec({
      key: this.requestStateKey,
      ttlSeconds: REQUEST_STATE_TTL_SECONDS,
      bind: (ctx) => `${ctx.mcpReq.method}\0${context.caller.keyId}`,
    });
    const server = new ModernServer(
      { ...SERVER_INFO, version: this.config.version },
      {
        capabilities: capabilities as never,
        instructions: this.tools.instructionsFor(context.caller),
        requestState: { verify: (state, scope) => codec.verify(state, scope) },
      },
    );
    const requestOf = (ctx: ModernContext): McpExtensionRequest => ({
      caller: context.caller,
      era: 'modern',
      clientCapabilities: server.getClientCapabilities(),
      meta: ctx.mcpReq._meta,
      inputResponses: ctx.mcpReq.inputResponses,
      requestState: ctx.mcpReq.requestState(),
      mintState: (payload) => codec.mint(payload, ctx),
      logLevel: ctx.mcpReq.envelope?.[LOG_LEVEL_META_KEY as keyof typeof ctx.mcpReq.envelope],
      notify: (notification) => ctx.mcpReq.notify(notification),
      signal: ctx.mcpReq.signal,
    });
    server.setRequestHandler('tools/list', () => ({ ...this.listTools(context), ...CACHE_HINTS.list }) as never);
    this.registerExtensionMethods(capabilities, (method, handler) =>
      server.setRequestHandler(
        method as 'resources/list',
        (request, ctx) => handler((request.params ?? {}) as Record<string, unknown>, requestOf(ctx)) as never,
      ),
    );
    server.setRequestHandler('tools/call', (request, ctx) => {
      const resolved = this.resolvedFor(context, request.params.name);
      const owner = this.extensionOfTool(resolved);
      if (owner)
        return this.callExtensionTool(owner, request.params.name, request.params.arguments, requestOf(ctx), context);
      const confirmation: WriteConfirmation = {
        kind: 'input-required',
        canAsk: server.getClientCapabilities()?.elicitation !== undefined,
        responses: ctx.mcpReq.inputResponses,
        state: ctx.mcpReq.requestState(),
        mint: (payload) => codec.mint(payload, ctx),
      };
      return this.callTool(
        resolved,
        request.params.arguments,
        context,
        confirmation,
        progressOf(ctx.mcpReq._meta, (n) => ctx.mcpReq.notify(n)),
      );
    });
    return server;
  }

  private listTools(context: McpRequestContext): { tools: Tool[] } {
    const own = this.tools.toolsFor(context.caller).map((tool) => this.mcpTool(tool, context.caller));
    return { tools: [...own, ...this.extensionTools(context)] };
  }

  /** What the extensions add, within the caller's restriction (an extension's tool is in no toolset). */
  private extensionTools(context: McpRequestContext): Tool[] {
    const { restriction } = context.caller;
    return this.extensions.all
      .flatMap((extension) => extension.tools?.(context.caller) ?? [])
      .filter(
        (tool) =>
          !restriction ||
          toolAllowed(
            { name: tool.name, readOnly: tool.annotations?.readOnlyHint === true, toolset: null },
            restriction,
          ),
      );
  }

  /**
   * `{"result":` and the tools/list result, open (without its closing brace: serveFast closes it as the revision does).
   * The registry's part depends only on what shapes it (scopes, restriction, the parameters pins drop) and the
   * registry, which is fixed after start-up, so it is written once per such shape, with both revisions' answers as
   * Buffers sent as they are; what extensions add is written per request.
   */
  private openToolList(context: McpRequestContext, modern: boolean): Buffer {
    const { caller } = context;
    const shapeKey = `${caller.scopes.join(' ')}|${restrictionKey(caller.restriction)}|${pinsKey(caller.actor)}`;
    let registry = this.toolLists.get(shapeKey);
    if (registry === undefined) {
      const json = this.tools
        .toolsFor(caller)
        .map((tool) => JSON.stringify(this.mcpTool(tool, caller)))
        .join(',');
      registry = { json, legacy: openToolListResult(json, false), modern: openToolListResult(json, true) };
      // Scopes, toolsets and pins come from small sets, and allowlists are few per installation; the bound is a safety net.
      if (this.toolLists.size >= 256) this.toolLists.clear();
      this.toolLists.set(shapeKey, registry);
    }
    const added = this.extensionTools(context).map((tool) => JSON.stringify(tool));
    if (added.length === 0) return modern ? registry.modern : registry.legacy;
    const tools = [registry.json, ...added].filter((part) => part.length > 0).join(',');
    return openToolListResult(tools, modern);
  }

  /** The server's capabilities for this caller: its tools, plus what the extensions serve it. */
  private capabilitiesFor(context: McpRequestContext): ServerCapabilities {
    return { ...this.extensions.capabilitiesFor(context.caller), tools: { listChanged: false } };
  }

  /** Whether an extension wants a 2025-era session for a client declaring these capabilities. */
  extensionWantsSession(capabilities: Record<string, unknown>): boolean {
    return this.extensions.all.some((extension) => extension.wantsSession?.(capabilities) === true);
  }

  private extensionOfTool(resolved: ResolvedTool): McpExtension | undefined {
    if (resolved.tool) return undefined;
    return this.extensions.all.find((extension) => extension.ownsTool?.(resolved.name));
  }

  private async callExtensionTool(
    owner: McpExtension,
    name: string,
    args: Record<string, unknown> | undefined,
    request: McpExtensionRequest,
    context: McpRequestContext,
  ): Promise<McpToolAnswer> {
    // The per-credential limit holds for every tool, as for the registry's (an in-band rate_limited result).
    const limited = context.limited ?? (await this.pipeline.limit(context.caller));
    if (limited.refused) return errorResult(limited.refused).result;
    if (context.caller.restriction && !this.extensionTools(context).some((tool) => tool.name === name)) {
      // Outside the caller's restriction (an extension's tool is in no toolset): the same refusal as a registry tool's.
      const refused = new AppException(ErrorCode.ToolNotAllowed, `${name} is not allowed here`, { tool: name });
      const failure = errorResult(refused);
      context.onToolCall?.(name, failure.status);
      return failure.result;
    }
    context.onToolCall?.(name, 200);
    const answer = owner.callTool?.(name, args, request);
    if (!answer) throw new McpError(JsonRpcErrorCode.InvalidParams, `Unknown tool: ${name}`);
    return answer;
  }

  /**
   * The extension methods of this server's capabilities (resources, prompts, completions, logging), one handler per
   * method for both SDKs: each asks the extensions in turn and takes the first answer.
   */
  private registerExtensionMethods(
    capabilities: ServerCapabilities,
    register: (
      method: string,
      handler: (params: Record<string, unknown>, request: McpExtensionRequest) => Promise<unknown>,
    ) => void,
  ): void {
    // The extensions inside the request's toolsets: a narrowed request sees only its toolsets' resources and completions.
    const extensionsFor = (request: McpExtensionRequest) =>
      this.extensions.all.filter((extension) => toolsetAllowed(extension.toolset ?? null, request.caller.restriction));
    const modern = (request: McpExtensionRequest, hints: Record<string, unknown>): Record<string, unknown> =>
      request.era === 'modern' ? hints : {};
    if (capabilities.resources) {
      register('resources/list', async (_params, request) => {
        const lists = await Promise.all(
          extensionsFor(request).map((extension) => extension.listResources?.(request) ?? Promise.resolve([])),
        );
        return { resources: lists.flat(), ...modern(request, CACHE_HINTS.list) };
      });
      register('resources/templates/list', async (_params, request) => ({
        resourceTemplates: extensionsFor(request).flatMap(
          (extension) => extension.listResourceTemplates?.(request) ?? [],
        ),
        ...modern(request, CACHE_HINTS.list),
      }));
      register('resources/read', async (params, request) => {
        const uri = typeof params.uri === 'string' ? params.uri : '';
        for (const extension of extensionsFor(request)) {
          const result = await extension.readResource?.(uri, request);
          // A resource's text leaves like a tool result: credential shapes in it are redacted here, for every provider.
          if (result) return { ...redactValue(result, 'resource_read'), ...modern(request, CACHE_HINTS.read) };
        }
        throw new McpError(MCP_RESOURCE_NOT_FOUND, `Resource not found: ${uri.slice(0, 200)}`, { uri });
      });
      if (capabilities.resources.subscribe) {
        for (const [method, subscribed] of [
          ['resources/subscribe', true],
          ['resources/unsubscribe', false],
        ] as const) {
          register(method, async (params, request) => {
            const uri = typeof params.uri === 'string' ? params.uri : '';
            for (const extension of extensionsFor(request)) await extension.subscribe?.(uri, subscribed, request);
            return {};
          });
        }
      }
    }
    if (capabilities.prompts) {
      register('prompts/list', async (_params, request) => ({
        prompts: extensionsFor(request).flatMap((extension) => extension.prompts?.(request) ?? []),
        ...modern(request, CACHE_HINTS.list),
      }));
      register('prompts/get', async (params, request) => {
        const name = typeof params.name === 'string' ? params.name : '';
        for (const extension of extensionsFor(request)) {
          const result = extension.getPrompt?.(name, params.arguments as Record<string, string> | undefined, request);
          if (result) return result;
        }
        throw new McpError(JsonRpcErrorCode.InvalidParams, `Unknown prompt: ${name.slice(0, 200)}`);
      });
    }
    if (capabilities.completions) {
      register('completion/complete', async (params, request) => {
        for (const extension of extensionsFor(request)) {
          const result = await extension.complete?.(params as never, request);
          if (result) return result;
        }
        return { completion: { values: [], total: 0, hasMore: false } };
      });
    }
    if (capabilities.logging) {
      register('logging/setLevel', async (params, request) => {
        for (const extension of this.extensions.all) await extension.setLogLevel?.(String(params.level), request);
        return {};
      });
    }
  }

  /** A tools/call of either revision through an SDK server: ToolCallPipeline's call, its answer as an MCP result. */
  private async callTool(
    resolved: ResolvedTool,
    args: Record<string, unknown> | undefined,
    context: McpRequestContext,
    confirmation?: WriteConfirmation,
    progress?: ProgressReporter,
  ): Promise<CallToolResult | InputRequiredResult> {
    const answer = await this.runToolCall(resolved, args, context, confirmation, progress);
    return 'outcome' in answer ? successResult(answer.outcome) : answer.result;
  }

  /**
   * The MCP door's common case without an SDK server: a plain tools/list or tools/call of a registry tool, as
   * `fastMcpCall` recognised it (nothing the SDK would refuse, nothing that needs a stream or a question to the user).
   * The result is written as JSON text, a list tool's rows spliced in as the tool wrote them, with exactly the fields
   * the SDK server of that revision answers.
   */
  async serveFast(call: FastMcpCall, context: McpRequestContext): Promise<[Buffer, ...(Buffer | string)[]]> {
    const modern = call.era === 'modern';
    // What follows an open result: the 2026-07-28 server's own fields, then the JSON-RPC envelope's.
    const closing = Buffer.from(
      `${modern ? `,${this.modernResultTail}` : '}'},"jsonrpc":"2.0","id":${JSON.stringify(call.id)}}`,
    );
    if (call.method === 'tools/list') return [this.openToolList(context, modern), closing];
    const answer = await this.runToolCall(this.resolvedFor(context, call.name), call.args, context);
    if ('outcome' in answer && answer.outcome.resultJson !== undefined)
      return [...openListResultChunks(answer.outcome.resultJson, answer.outcome.truncated), closing];
    const body = 'outcome' in answer ? successJson(answer.outcome) : JSON.stringify(answer.result);
    return [OPEN_RESULT, body.slice(0, -1), closing];
  }

  /**
   * Whether the fast path may answer this tools/call (whose tool the door resolved on the context): a registry tool
   * that asks the user nothing on this request.
   */
  servesFast(call: FastMcpCall, context: McpRequestContext): boolean {
    if (call.method === 'tools/list') return true;
    const tool = context.resolved?.tool;
    if (!tool) return false;
    if (call.era === 'legacy') return !this.mayAskMidCall(context, false);
    // 2026-07-28: a write of a "confirm writes" credential answers input_required, which the SDK's codec mints.
    return !this.pipeline.needsConfirmation(context.caller, tool);
  }

  /**
   * One registry tools/call through ToolCallPipeline; a failure becomes an `isError` result carrying the Area A error,
   * an unknown name a protocol error (the client asked for something not offered).
   */
  private async runToolCall(
    resolved: ResolvedTool,
    args: Record<string, unknown> | undefined,
    context: McpRequestContext,
    confirmation?: WriteConfirmation,
    progress?: ProgressReporter,
  ): Promise<ToolCallAnswer> {
    const { caller } = context;
    try {
      const ran = await this.pipeline.run<InputRequiredResult>({
        door: 'mcp',
        caller,
        tool: resolved,
        args,
        idempotencyKey: context.idempotencyKey,
        limited: context.limited,
        confirm: (prepared) => this.confirmWrite(prepared, caller.keyId, confirmation),
        progress,
      });
      if (ran.kind === 'answered') return { result: ran.answer };
      context.onToolCall?.(resolved.name, 200);
      return { outcome: ran.outcome };
    } catch (error) {
      let exception = toAppException(error);
      if (exception?.code === ErrorCode.UnknownTool)
        throw new McpError(JsonRpcErrorCode.InvalidParams, `Unknown tool: ${resolved.name}`);
      if (!exception) {
        this.logger.error({ msg: 'Tool failed', tool: resolved.name }, error instanceof Error ? error : undefined);
        exception = new AppException(ErrorCode.Internal, 'Internal server error; quote the traceId when reporting it');
      }
      const failure = errorResult(exception);
      context.onToolCall?.(resolved.name, failure.status);
      return { result: failure.result };
    }
  }

  /**
   * A write of a "confirm writes" credential. 2026-07-28: first call → ask the user (elicitation inside an
   * `input_required` result, with a requestState binding the question to this credential, tool and arguments);
   * retried call with the user's answer → 'confirmed', or a `declined` error. 2025-era session: ask mid-call and
   * wait for the answer → 'confirmed', `declined`, or confirmation_required when nobody answered in time. A client
   * that cannot be asked answers 'cannot-ask': the pipeline refuses with confirmation_required.
   */
  private async confirmWrite(
    prepared: PreparedToolCall,
    keyId: string,
    confirmation: WriteConfirmation | undefined,
  ): Promise<ConfirmationStep<InputRequiredResult>> {
    const name = prepared.tool.definition.name;
    if (confirmation?.kind === 'elicit') {
      const outcome = await confirmation.ask(confirmationQuestion(prepared));
      if ('action' in outcome) {
        if (outcome.action === 'accept') return 'confirmed';
        throw declined(name);
      }
      const why =
        outcome.failed === 'timeout'
          ? `nobody answered the confirmation within ${Math.round(this.config.mcp.confirmTimeoutMs / 1000)} s`
          : outcome.failed === 'client-error'
            ? `the client answered the confirmation with an error (${outcome.detail})`
            : 'the client left before the confirmation was answered';
      throw new AppException(ErrorCode.ConfirmationRequired, `${name} was not confirmed: ${why}; nothing was run`);
    }
    if (!confirmation?.canAsk) return 'cannot-ask';
    const digest = argumentDigest(prepared, keyId);
    const answer = confirmation.responses?.[CONFIRM_WRITE] as { action?: unknown } | undefined;
    const state = confirmation.state as Partial<ConfirmState> | undefined;
    if (
      answer !== undefined &&
      state?.kind === CONFIRM_WRITE &&
      state.tool === name &&
      typeof state.digest === 'string' &&
      sameText(state.digest, digest) &&
      typeof state.nonce === 'string'
    ) {
      // Single use: the first answer carrying this state decides; a replay (even one sent at the same moment) runs nothing.
      if (!(await this.sessionsRepository.useRequestState(state.nonce, (REQUEST_STATE_TTL_SECONDS + 60) * 1000))) {
        throw new AppException(
          ErrorCode.ConfirmationRequired,
          `This confirmation of ${name} was already used; nothing was run again. Call the tool again to be asked anew`,
        );
      }
      if (answer.action === 'accept') return 'confirmed';
      throw declined(name);
    }
    return {
      answer: inputRequired({
        inputRequests: { [CONFIRM_WRITE]: inputRequired.elicit(confirmationQuestion(prepared)) },
        requestState: await confirmation.mint({ kind: CONFIRM_WRITE, tool: name, digest, nonce: randomUUID() }),
      }),
    };
  }

  /** The MCP view of a tool, built once per tool and pinned parameters (the registry is immutable after start-up). */
  private mcpTool(tool: RegisteredTool, access: ToolAccess): Tool {
    const key = `${tool.definition.name}|${pinsKey(access.actor)}`;
    let view = this.listing.get(key);
    if (!view) {
      view = toMcpTool(this.tools, tool, access);
      this.listing.set(key, view);
    }
    return view;
  }
}

function toMcpTool(tools: ToolsService, tool: RegisteredTool, access: ToolAccess): Tool {
  const view = tools.schemaView(tool, access);
  const readOnly = view.annotations.readOnlyHint;
  return {
    name: view.name,
    title: view.title,
    description: view.description,
    inputSchema: portableSchema(view.inputSchema) as Tool['inputSchema'],
    // A failure's structuredContent is the Area A error body; the schema admits it so clients that
    // validate structuredContent (the official SDK does, even for isError results) accept it.
    outputSchema: portableSchema({ type: 'object', anyOf: [view.outputSchema, TOOL_ERROR_SCHEMA] }),
    // Spelled out: MCP's defaults (destructive, open world) are the opposite of most of our tools.
    annotations: {
      title: view.title,
      readOnlyHint: readOnly,
      destructiveHint: readOnly ? false : (view.annotations.destructiveHint ?? false),
      idempotentHint: readOnly ? true : (view.annotations.idempotentHint ?? false),
      openWorldHint: view.annotations.openWorldHint ?? false,
    },
    _meta: { 'atrium/scope': view.scope },
  };
}

/** A tool failure as an MCP result: `isError`, with the Area A error body as text and as structuredContent. */
function errorResult(exception: AppException): { result: CallToolResult; status: number } {
  const rendered = renderError(exception, 'tool-api', RequestContext.requestId() ?? '');
  return {
    result: {
      content: [{ type: 'text', text: JSON.stringify(rendered.body) }],
      structuredContent: rendered.body,
      isError: true,
    },
    status: rendered.status,
  };
}

/** What a registry tools/call came to: the tool's outcome, or a result already shaped (an error, an elicitation). */
type ToolCallAnswer = { outcome: ToolCallOutcome } | { result: CallToolResult | InputRequiredResult };

/** The registry's part of tools/list for one shape of caller: its tools as JSON text, and each revision's open answer. */
interface RegistryToolList {
  json: string;
  legacy: Buffer;
  modern: Buffer;
}

/** `{"result":` and a tools/list result of these tools (JSON text), open (see serveFast). */
function openToolListResult(tools: string, modern: boolean): Buffer {
  const hints = modern ? `,"ttlMs":${CACHE_HINTS.list.ttlMs},"cacheScope":"${CACHE_HINTS.list.cacheScope}"` : '';
  return Buffer.from(`{"result":{"tools":[${tools}]${hints}`);
}

/** successResult as JSON text. */
function successJson(outcome: ToolCallOutcome): string {
  const structured = JSON.stringify(structuredContentOf(outcome));
  return `{"content":[{"type":"text","text":${JSON.stringify(structured)}}],"structuredContent":${structured}}`;
}

const OPEN_LIST_RESULT = Buffer.from('{"result":{"content":[{"type":"text","text":"{\\"items\\":');
const TEXT_TRUNCATED = Buffer.from(',\\"truncated\\":true');
const OPEN_LIST_STRUCTURED = Buffer.from('}"}],"structuredContent":{"items":');
const TRUNCATED = Buffer.from(',"truncated":true');
const CLOSE_BRACE = Buffer.from('}');

/**
 * `{"result":` and successResult of a list the tool wrote as JSON text, open (see serveFast), as pieces for one socket
 * write (see sendJsonChunks): the list goes out as the tool wrote it and, escaped, as the text content.
 */
function openListResultChunks(resultJson: string, truncated: boolean | undefined): [Buffer, ...(Buffer | string)[]] {
  // The text content is `{"items":<list>}` as a JSON string; JSON escapes character by character, so the list's
  // escaped form is its quoted form without the quotes (a slice, not a copy).
  const quoted = JSON.stringify(resultJson);
  return [
    OPEN_LIST_RESULT,
    quoted.slice(1, -1),
    ...(truncated ? [TEXT_TRUNCATED] : []),
    OPEN_LIST_STRUCTURED,
    resultJson,
    ...(truncated ? [TRUNCATED] : []),
    CLOSE_BRACE,
  ];
}

/** A result as `structuredContent`: an object as it is, a list wrapped as `{items}` (with `truncated` when it stopped at its limit). */
function structuredContentOf(outcome: ToolCallOutcome): Record<string, unknown> {
  return Array.isArray(outcome.result)
    ? { items: outcome.result, ...(outcome.truncated ? { truncated: true } : {}) }
    : (outcome.result as Record<string, unknown>);
}

function successResult(outcome: ToolCallOutcome): CallToolResult {
  const structured = structuredContentOf(outcome);
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

/** The one question both eras ask: the tool and the arguments it would run with, and nothing to fill in. */
function confirmationQuestion(prepared: PreparedToolCall): ElicitRequestFormParams {
  return {
    message: `Allow ${prepared.tool.definition.name} to run with ${truncate(JSON.stringify(prepared.args), 1500)}?`,
    requestedSchema: { type: 'object', properties: {} },
  };
}

function declined(tool: string): AppException {
  return new AppException(ErrorCode.Declined, `The user did not confirm ${tool}; nothing was run`);
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** Reports a tool call's progress (0..1) to a caller that asked for it with a progressToken. */
type ProgressReporter = (progress: number, message: string) => Promise<void>;

/**
 * Progress notifications for a call whose `_meta` carries a progressToken (none otherwise). A lost notification never
 * fails the call: the result is what counts.
 */
function progressOf(
  meta: { progressToken?: unknown } | undefined,
  notify: (notification: { method: string; params: Record<string, unknown> }) => Promise<void>,
): ProgressReporter | undefined {
  const token = meta?.progressToken;
  if (typeof token !== 'string' && typeof token !== 'number') return undefined;
  return (progress, message) =>
    notify({ method: 'notifications/progress', params: { progressToken: token, progress, total: 1, message } }).catch(
      () => undefined,
    );
}

/** What a confirmation's requestState carries: the call the user is shown, and a nonce that makes it single-use. */
interface ConfirmState {
  kind: typeof CONFIRM_WRITE;
  tool: string;
  digest: string;
  nonce: string;
}

/** Digest of (credential, tool, arguments): a confirmation counts only for the call the user was shown. */
function argumentDigest(prepared: PreparedToolCall, keyId: string): string {
  return createHash('sha256')
    .update(JSON.stringify(['atrium:confirm-write', keyId, prepared.tool.definition.name, prepared.args]))
    .digest('base64url');
}
