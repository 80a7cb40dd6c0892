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
 * plainly — is undefined and goes to the SDK, which owns every refusal and every stream. A 2026-07-28 envelope is
 * classified by the SDK's own `classifyInboundRequest` (once per distinct envelope), so the fast path cannot take a
 * request the SDK would route elsewhere; a request without a claim is 2025-era by the classifier's own rule (no claim,
 * no modern MCP-Protocol-Version), checked here without it.
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

/**
 * `_meta` envelopes (as JSON text) the SDK's classifier has accepted as a valid 2026-07-28 claim. A client sends the
 * same envelope on every request, and the classifier's verdict on a request that passed the checks in eraOf depends
 * on nothing else (the headers are required to equal fixed values or the body's own fields, the body's JSON-RPC shape
 * is checked above), so it runs once per envelope instead of once per request (its zod parses of the whole body cost
 * more than the rest of the fast path's checks).
 */
const acceptedEnvelopes = new Set<string>();
const ACCEPTED_ENVELOPES_MAX = 256;

function eraOf(
  headers: IncomingHttpHeaders,
  body: PlainObject,
  method: string,
  params: PlainObject,
): FastMcpCall['era'] | undefined {
  const protocolVersionHeader = header(headers, 'mcp-protocol-version');
  const meta = params._meta;
  if (meta !== undefined && !isPlainObject(meta)) return undefined;
  if (meta === undefined || isEmpty(meta)) {
    // No envelope claim: the classifier routes it to the 2025 era unless the header names a modern revision (which it
    // refuses); the v1 transport refuses an unsupported MCP-Protocol-Version (400), and an absent one means the default.
    if (headers['mcp-protocol-version'] === undefined) return 'legacy';
    return protocolVersionHeader !== undefined &&
      protocolVersionHeader < MODERN_REVISION &&
      SUPPORTED_PROTOCOL_VERSIONS.includes(protocolVersionHeader)
      ? 'legacy'
      : undefined;
  }
  const mcpMethodHeader = header(headers, 'mcp-method');
  const mcpNameHeader = header(headers, 'mcp-name');
  if (
    !onlyKeys(meta, MODERN_META_KEYS) ||
    meta[PROTOCOL_VERSION_META_KEY] !== MODERN_REVISION ||
    protocolVersionHeader !== MODERN_REVISION ||
    mcpMethodHeader !== method
  )
    return undefined;
  const clientInfo = meta[CLIENT_INFO_META_KEY];
  if (
    !isPlainObject(clientInfo) ||
    typeof clientInfo.name !== 'string' ||
    typeof clientInfo.version !== 'string' ||
    !isPlainObject(meta[CLIENT_CAPABILITIES_META_KEY])
  )
    return undefined;
  if (method === 'tools/call' && mcpNameHeader !== params.name) return undefined;
  const envelope = JSON.stringify(meta);
  if (acceptedEnvelopes.has(envelope)) return 'modern';
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader,
    mcpMethodHeader,
    mcpNameHeader,
    body,
  });
  if (outcome.kind !== 'modern' || outcome.messageKind !== 'request') return undefined;
  // Client infos are few per installation; the bound is a safety net against a client that varies its envelope.
  if (acceptedEnvelopes.size >= ACCEPTED_ENVELOPES_MAX) acceptedEnvelopes.clear();
  acceptedEnvelopes.add(envelope);
  return 'modern';
}

function isEmpty(object: PlainObject): boolean {
  for (const _key in object) return false;
  return true;
}
