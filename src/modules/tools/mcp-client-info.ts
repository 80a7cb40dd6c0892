import type { Request } from 'express';
import { attachCallerClient } from '../../common/auth/caller.js';

/** The MCP client behind a request, as it named itself in `initialize` (clientInfo): for attribution (usage, audit). */
export interface McpClientInfo {
  name: string;
  version: string;
}

const MCP_CLIENT = Symbol('atrium:mcp-client');
type ClientRequest = Request & { [MCP_CLIENT]?: McpClientInfo };

/** Longest name or version kept: a client chooses these strings, they are labels, not data. */
const MAX_LABEL = 200;

/**
 * The client of this MCP request, when the door knows it: from the session (2025-era requests with an
 * `Mcp-Session-Id`, which every initialize naming its client opens), from the `initialize` itself, or from a
 * 2026-07-28 request's `_meta` clientInfo. Undefined for 2025-era requests that never initialized and off the MCP door.
 */
export function mcpClientOf(request: Request): McpClientInfo | undefined {
  return (request as ClientRequest)[MCP_CLIENT];
}

/** Also names the client on the request's caller, which is where the audit log reads it. */
export function setMcpClient(request: Request, client: McpClientInfo | undefined): void {
  if (!client) return;
  (request as ClientRequest)[MCP_CLIENT] = client;
  attachCallerClient(request, client);
}

/** A clientInfo object as sent (untrusted): name and version as bounded strings, or undefined if there is no name. */
export function toMcpClientInfo(raw: unknown): McpClientInfo | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { name, version } = raw as { name?: unknown; version?: unknown };
  if (typeof name !== 'string' || name.length === 0) return undefined;
  return { name: name.slice(0, MAX_LABEL), version: typeof version === 'string' ? version.slice(0, MAX_LABEL) : '' };
}
