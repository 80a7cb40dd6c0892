import { AppException } from './app.exception.js';
import { ErrorCode } from './error-code.js';
import { renderJsonRpcError } from './json-rpc-error-body.js';

describe('renderJsonRpcError', () => {
  it('turns a body-parser failure into -32700 with id null', () => {
    const raw = Object.assign(new Error('Unexpected end'), { type: 'entity.parse.failed', status: 400 });
    const rendered = renderJsonRpcError(
      raw,
      new AppException(ErrorCode.InvalidRequest, 'Request body is not valid JSON'),
      undefined,
      't1',
    );
    expect(rendered.status).toBe(400);
    expect(rendered.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
  });

  it('maps an invalid request to -32600 and echoes the request id', () => {
    const rendered = renderJsonRpcError(undefined, new AppException(ErrorCode.InvalidRequest, 'bad'), { id: 7 }, 't2');
    expect(rendered.body).toMatchObject({
      id: 7,
      error: { code: -32600, data: { error: { code: 'invalid_request' }, traceId: 't2' } },
    });
    // An id that is no JSON-RPC id for MCP (a fraction, an unsafe integer, an object) cannot be detected: null.
    for (const id of [1.5, 2 ** 60, { nested: 1 }, true]) {
      expect(
        renderJsonRpcError(undefined, new AppException(ErrorCode.InvalidRequest, 'bad'), { id }, 't2').body.id,
      ).toBeNull();
    }
  });

  it('keeps the HTTP status and headers of auth and rate-limit failures, with the Area A body as data', () => {
    const auth = renderJsonRpcError(undefined, new AppException(ErrorCode.InvalidApiKey, 'nope'), { id: 'a' }, 't3');
    expect(auth.status).toBe(401);
    expect(auth.headers['WWW-Authenticate']).toBe('Bearer');
    expect(auth.body).toMatchObject({
      id: 'a',
      error: { code: -32000, message: 'nope', data: { error: { code: 'invalid_api_key' } } },
    });
    const limited = renderJsonRpcError(
      undefined,
      new AppException(ErrorCode.RateLimited, 'slow', { retry_after_seconds: 3 }, { 'Retry-After': '3' }),
      [{ id: 1 }],
      't4',
    );
    expect(limited).toMatchObject({
      status: 429,
      headers: { 'Retry-After': '3' },
      body: { id: null, error: { data: { error: { details: { retry_after_seconds: 3 } } } } },
    });
  });
});
