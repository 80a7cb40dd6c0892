import type { Request } from 'express';

/** Area A (the tool API) lives under this prefix; everything else under /api is Area B. */
export const TOOL_API_PREFIX = '/api/v1/public/';

export type ApiArea = 'tool-api' | 'backend';

/** The MCP Streamable HTTP endpoint: its transport-level errors are JSON-RPC error objects. */
export const MCP_ENDPOINT_PATH = '/api/v1/public/mcp';

/** The endpoint and its narrowed URLs (`/readonly`, `/x/{toolset}`, `/x/{toolset}/readonly`): the same transport. */
const MCP_ENDPOINT = /^\/api\/v1\/public\/mcp(?:\/readonly|\/x\/[^/]+(?:\/readonly)?)?\/?$/;

export function isMcpEndpoint(request: Pick<Request, 'path'>): boolean {
  return MCP_ENDPOINT.test(request.path ?? '');
}

/**
 * Decided from the path alone, so errors raised before any handler runs (unknown route, unparsable
 * body) get the same body shape as errors raised inside one.
 */
export function apiAreaOf(request: Pick<Request, 'path'>): ApiArea {
  const path = request.path ?? '';
  return path.startsWith(TOOL_API_PREFIX) || path === TOOL_API_PREFIX.slice(0, -1) ? 'tool-api' : 'backend';
}

/** Atrium's OAuth authorization server (and its metadata): errors there are RFC 6749 bodies. */
export function isOAuthEndpoint(request: Pick<Request, 'path'>): boolean {
  const path = request.path ?? '';
  return path.startsWith('/oauth/') || path.startsWith('/.well-known/oauth-');
}
