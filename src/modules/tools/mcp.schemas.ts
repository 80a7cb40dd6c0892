import { named, object, type JsonSchema } from '../../common/openapi/openapi-schema.js';

const id: JsonSchema = { type: ['string', 'integer'] };

export const JsonRpcMessageSchema = named('JsonRpcMessage', {
  type: 'object',
  description:
    'One JSON-RPC 2.0 message (batches are refused): a request (initialize, ping, tools/list, tools/call, server/discover) or a notification (no id, e.g. notifications/initialized).',
  required: ['jsonrpc', 'method'],
  properties: {
    jsonrpc: { const: '2.0' },
    id,
    method: { type: 'string', examples: ['tools/list'] },
    params: { type: 'object' },
  },
  examples: [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_tasks', arguments: { limit: 5 } } }],
});

export const JsonRpcErrorSchema = named(
  'JsonRpcError',
  object({
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer', 'null'] },
    error: object(
      {
        code: {
          type: 'integer',
          description:
            '-32700 parse error, -32600 invalid request, -32000 server error (auth, origin, rate limit), -32601 method not found, -32602 invalid params',
        },
        message: { type: 'string' },
        data: {
          description: 'For Atrium’s own refusals: the Area A error body ({error: {code, message, details}, traceId})',
        },
      },
      ['data'],
    ),
  }),
);

export const JsonRpcResponseSchema = named('JsonRpcResponse', {
  description:
    'The answer to a request: a result (tools/call results carry content, structuredContent and isError) or a JSON-RPC error.',
  anyOf: [object({ jsonrpc: { const: '2.0' }, id, result: { type: 'object' } }), { $ref: JsonRpcErrorSchema.$ref }],
});
