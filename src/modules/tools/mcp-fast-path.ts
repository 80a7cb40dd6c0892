import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  classifyInboundRequest,
  isJsonContentType,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/server';
import type { IncomingHttpHeaders } from 'node:http';

/** The one modern revision the door speaks (the v2 SDK's entry answers anything else). */
const MODERN_REVISION = '2026-07-28';
const MESSAGE_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);
const LIST_PARAM_KEYS: ReadonlySet<string> = new Set(['_meta']);
const CALL_PARAM_KEYS: ReadonlySet<string> = new Set(['name', 'arguments', '_meta']);
const MODERN_META_KEYS: ReadonlySet<string> = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
]);

/** A request the MCP door may answer without building an SDK server for it (see fastMcpCall). */
export type FastMcpCall = { era: 'legacy' | 'modern'; id: string | number } & (
  { method: 'tools/list' } | { method: 'tools/call'; name: string; args: Record<string, unknown> | undefined }
);

type PlainObject = Record<string, unknown>;

function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

function onlyKeys(object: PlainObject, allowed: ReadonlySet<string>): boolean {
  for (const key in object) if (!allowed.has(key)) return false;
  return true;
}

/**
 * The MCP door's common case: a single, well-formed `tools/list` or `tools/call` that either SDK would accept and
 * answer as one JSON body, on 2025-era revisions (no envelope claim) or on 2026-07-28 (a complete `_meta` envelope that
 * agrees with the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers). Anything else — another method, a cursor, a
 * progress token, other `_meta`, a header the transports would refuse, a shape the SDK's own classifier does not route
 * plainly — is undefined and goes to the SDK, which owns every refusal and every stream. The classifier is the SDK's
 * (`classifyInboundRequest`), so the fast path cannot take a request the SDK would route elsewhere.
 */
export function fastMcpCall(headers: IncomingHttpHeaders, body: unknown): FastMcpCall | undefined {
  if (!isPlainObject(body) || body.jsonrpc !== '2.0' || !onlyKeys(body, MESSAGE_KEYS)) return undefined;
  const { id, method, params = {} } = body;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  if (method !== 'tools/list' && method !== 'tools/call') return undefined;
  if (!isPlainObject(params) || !onlyKeys(params, method === 'tools/list' ? LIST_PARAM_KEYS : CALL_PARAM_KEYS))
    return undefined;
  // Both transports refuse a POST that does not accept both answers (406) or is not JSON (415).
  const accept = header(headers, 'accept');
  if (
    !accept?.includes('application/json') ||
    !accept.includes('text/event-stream') ||
    !isJsonContentType(header(headers, 'content-type') ?? null)
  )
    return undefined;
  const era = eraOf(headers, body, method, params);
  if (!era) return undefined;
  if (method === 'tools/list') return { era, id: id as string | number, method };
  const { name, arguments: args } = params;
  if (typeof name !== 'string' || (args !== undefined && !isPlainObject(args))) return undefined;
  return { era, id: id as string | number, method, name, args };
}

function eraOf(
  headers: IncomingHttpHeaders,
  body: PlainObject,
  method: string,
  params: PlainObject,
): FastMcpCall['era'] | undefined {
  const protocolVersionHeader = header(headers, 'mcp-protocol-version');
  const mcpMethodHeader = header(headers, 'mcp-method');
  const mcpNameHeader = header(headers, 'mcp-name');
  const meta = params._meta;
  if (meta !== undefined && !isPlainObject(meta)) return undefined;
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader,
    mcpMethodHeader,
    mcpNameHeader,
    body,
  });
  if (outcome.kind === 'legacy') {
    if (outcome.reason !== 'no-claim' || (meta !== undefined && Object.keys(meta).length > 0)) return undefined;
    // The v1 transport refuses an unsupported MCP-Protocol-Version (400); an absent one means the default revision.
    if (protocolVersionHeader !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(protocolVersionHeader))
      return undefined;
    if (headers['mcp-protocol-version'] !== undefined && protocolVersionHeader === undefined) return undefined;
    return 'legacy';
  }
  if (outcome.kind !== 'modern' || outcome.messageKind !== 'request' || !meta || !onlyKeys(meta, MODERN_META_KEYS))
    return undefined;
  const clientInfo = meta[CLIENT_INFO_META_KEY];
  if (
    meta[PROTOCOL_VERSION_META_KEY] !== MODERN_REVISION ||
    protocolVersionHeader !== MODERN_REVISION ||
    mcpMethodHeader !== method
  )
    return undefined;
  if (
    !isPlainObject(clientInfo) ||
    typeof clientInfo.name !== 'string' ||
    typeof clientInfo.version !== 'string' ||
    !isPlainObject(meta[CLIENT_CAPABILITIES_META_KEY])
  )
    return undefined;
  if (method === 'tools/call' && mcpNameHeader !== params.name) return undefined;
  return 'modern';
}
