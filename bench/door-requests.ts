import { SCENARIOS, type Scenario } from './bench-env.js';

/**
 * How each door of one gateway is asked the same thing, so bench:gateway can put the MCP door beside the JSON door in
 * the same alternating rounds. `tools_list` is the tool list (GET /tools on the JSON door); the other scenarios are
 * tool calls.
 */
export type Door = 'json' | 'mcp-2025' | 'mcp-2026';
export type DoorScenario = Scenario | 'tools_list';

export const MCP_PATH = '/api/v1/public/mcp';
const ACCEPT = 'application/json, text/event-stream';
const CLIENT_INFO = { name: 'bench-gateway', version: '1.0.0' };

export interface DoorRequest {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

function rpc(method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
}

/** The request a door answers for a scenario (per-key headers are added per request: Authorization, Mcp-Session-Id). */
export function doorRequest(door: Door, scenario: DoorScenario): DoorRequest {
  const call = scenario === 'tools_list' ? undefined : { name: scenario, arguments: SCENARIOS[scenario] };
  if (door === 'json') {
    if (!call) return { path: `${MCP_PATH}/tools`, method: 'GET', headers: {} };
    return {
      path: `${MCP_PATH}/call`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call),
    };
  }
  const method = call ? 'tools/call' : 'tools/list';
  const params: Record<string, unknown> = call ? { ...call } : {};
  if (door === 'mcp-2025') {
    return {
      path: MCP_PATH,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT, 'mcp-protocol-version': '2025-11-25' },
      body: rpc(method, params),
    };
  }
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  return {
    path: MCP_PATH,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(call ? { 'mcp-name': call.name } : {}),
    },
    body: rpc(method, { ...params, _meta: meta }),
  };
}

/**
 * What a 2025-11-25 client does once per connection before calling: initialize, keeping the Mcp-Session-Id the server
 * may return (a client then sends it on every request), then notifications/initialized.
 */
export async function initializeLegacy(baseUrl: string, key: string): Promise<string | undefined> {
  const headers = { 'content-type': 'application/json', accept: ACCEPT, authorization: `Bearer ${key}` };
  const res = await fetch(`${baseUrl}${MCP_PATH}`, {
    method: 'POST',
    headers,
    body: rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: CLIENT_INFO }),
  });
  if (res.status !== 200) throw new Error(`initialize answered ${res.status}: ${await res.text()}`);
  await res.text();
  const session = res.headers.get('mcp-session-id') ?? undefined;
  const initialized = await fetch(`${baseUrl}${MCP_PATH}`, {
    method: 'POST',
    headers: { ...headers, 'mcp-protocol-version': '2025-11-25', ...(session ? { 'mcp-session-id': session } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await initialized.text();
  return session;
}

/** The items a door's answer carries (a list_tasks result or the tool list), to check every door answers alike. */
export function answeredItems(door: Door, scenario: DoorScenario, body: string): number {
  const parsed = JSON.parse(
    body.startsWith('event:') || body.startsWith('data:')
      ? body
          .split('\n')
          .find((l) => l.startsWith('data:'))!
          .slice(5)
      : body,
  ) as Record<string, any>;
  if (door === 'json')
    return scenario === 'tools_list'
      ? (parsed.tools as unknown[]).length
      : Array.isArray(parsed.result)
        ? parsed.result.length
        : 1;
  if (parsed.error) throw new Error(`${door} answered a JSON-RPC error: ${JSON.stringify(parsed.error)}`);
  const result = parsed.result as Record<string, any>;
  if (scenario === 'tools_list') return (result.tools as unknown[]).length;
  if (result.isError)
    throw new Error(`${door} answered an isError result: ${JSON.stringify(result.structuredContent)}`);
  const structured = result.structuredContent as Record<string, any>;
  return Array.isArray(structured.items) ? structured.items.length : 1;
}
