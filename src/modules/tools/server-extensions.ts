import { Injectable } from '@nestjs/common';
import type { InputRequiredResult } from '@modelcontextprotocol/server';
import type {
  CallToolResult,
  CompleteRequestParams,
  CompleteResult,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
  ServerCapabilities,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { KeyCaller } from '../api-keys/key-caller.js';

/** What an MCP request handler of an extension knows about the request it serves, in either protocol era. */
export interface McpExtensionRequest {
  caller: KeyCaller;
  /** `legacy`: 2025-era (v1 SDK, initialize handshake); `modern`: 2026-07-28 (v2 SDK, per-request `_meta`). */
  era: 'legacy' | 'modern';
  /** The client's declared capabilities, when the request carries them (2026-07-28) or its session does. */
  clientCapabilities?: Record<string, unknown>;
  /** The request's `_meta` (e.g. `progressToken`), with the 2026-07-28 envelope keys lifted out. */
  meta?: Record<string, unknown>;
  /** 2026-07-28 multi-round-trip: the client's answers (untrusted). */
  inputResponses?: Record<string, unknown>;
  /**
   * 2026-07-28: the payload of the echoed `requestState`, already verified (MAC, expiry, and bound to this credential
   * and method: a tampered or foreign state never reaches a handler).
   */
  requestState?: unknown;
  /** 2026-07-28: seals a payload into a `requestState` for an `input_required` answer (see requestState). */
  mintState?(payload: unknown): Promise<string>;
  /** 2026-07-28: the log level the request asked for (`io.modelcontextprotocol/logLevel`); no log messages without it. */
  logLevel?: string;
  /**
   * 2025-era request in a session: sends a request to the client on this request's stream (sampling, elicitation)
   * and waits for its answer, which may reach any instance. Rejects when the client answers with an error or not at all.
   */
  askClient?(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Sends a notification related to this request (on the request's SSE stream; dropped when it has none). */
  notify(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
  signal: AbortSignal;
}

export type McpToolAnswer = CallToolResult | InputRequiredResult;

/** MCP's "resource not found" (-32002) for a resource that does not exist or is not the caller's; on 2026-07-28 the v2 SDK answers it as -32602 (SEP-2164). */
export const MCP_RESOURCE_NOT_FOUND = -32002;

/**
 * More than the tool registry on the MCP door: resources, prompts, completions and tools served by another module.
 * Each method answers only for what it owns (undefined otherwise), so several extensions combine; every list is
 * per caller, so what a credential may not use is never advertised to it.
 */
export interface McpExtension {
  /** Whether a 2025-era client declaring these capabilities at initialize gets a session (one is kept for elicitation anyway). */
  wantsSession?(clientCapabilities: Record<string, unknown>): boolean;
  /**
   * The toolset its resources, prompts and completions belong to: a request narrowed to other toolsets
   * (X-MCP-Toolsets, /x/{toolset}) does not see them. None: only an unnarrowed request does.
   */
  readonly toolset?: string;
  /** The capabilities this extension serves to this caller (merged into the server's own). */
  capabilities(caller: KeyCaller): ServerCapabilities;
  tools?(caller: KeyCaller): Tool[];
  /** Whether a tools/call of this name is this extension's (a name of the tool registry never is). */
  ownsTool?(name: string): boolean;
  /** Whether a 2025-era call of this tool sends messages before its result (its answer is then an SSE stream). */
  streamsTool?(name: string): boolean;
  callTool?(
    name: string,
    args: Record<string, unknown> | undefined,
    request: McpExtensionRequest,
  ): Promise<McpToolAnswer> | undefined;
  listResources?(request: McpExtensionRequest): Promise<Resource[]>;
  listResourceTemplates?(request: McpExtensionRequest): ResourceTemplate[];
  readResource?(uri: string, request: McpExtensionRequest): Promise<ReadResourceResult | undefined>;
  prompts?(request: McpExtensionRequest): Prompt[];
  getPrompt?(
    name: string,
    args: Record<string, string> | undefined,
    request: McpExtensionRequest,
  ): Promise<GetPromptResult | InputRequiredResult> | undefined;
  complete?(params: CompleteRequestParams, request: McpExtensionRequest): Promise<CompleteResult | undefined>;
  /** `logging/setLevel`, `resources/subscribe` / `unsubscribe`: answered only where the capability is served. */
  setLogLevel?(level: string, request: McpExtensionRequest): Promise<void>;
  subscribe?(uri: string, subscribed: boolean, request: McpExtensionRequest): Promise<void>;
}

/** The extensions registered by other modules at start-up (each registers itself in `onModuleInit`). */
@Injectable()
export class McpExtensions {
  private readonly registered: McpExtension[] = [];

  register(extension: McpExtension): void {
    this.registered.push(extension);
  }

  get all(): readonly McpExtension[] {
    return this.registered;
  }

  /** Every extension's capabilities for this caller, merged one level deep. */
  capabilitiesFor(caller: KeyCaller): ServerCapabilities {
    const merged: Record<string, Record<string, unknown>> = {};
    for (const extension of this.registered) {
      for (const [name, value] of Object.entries(extension.capabilities(caller))) {
        if (value && typeof value === 'object')
          merged[name] = { ...merged[name], ...(value as Record<string, unknown>) };
      }
    }
    return merged;
  }
}
