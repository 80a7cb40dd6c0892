import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Request } from 'express';

export interface RequestContextStore {
  requestId: string;
  /**
   * The HTTP request this flow serves (absent in queued jobs), so that an audit entry can name the credential that
   * acted (AuditService) without every service signature carrying it.
   */
  request?: Request;
}

const storage = new AsyncLocalStorage<RequestContextStore>();

/**
 * The request id travels with the async flow of one request (and of queued jobs, which carry it in
 * their data), so every log line can name the request that caused it.
 */
export const RequestContext = {
  run<T>(store: RequestContextStore, fn: () => T): T {
    return storage.run(store, fn);
  },
  current(): RequestContextStore | undefined {
    return storage.getStore();
  },
  requestId(): string | undefined {
    return storage.getStore()?.requestId;
  },
  request(): Request | undefined {
    return storage.getStore()?.request;
  },
};

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Honours a safe incoming X-Request-Id, else the trace id of a W3C traceparent, else `fallback` (with tracing on, the
 * trace id of the request's span, so log lines and traces share one id), else a new UUID.
 */
export function resolveRequestId(
  headers: Record<string, string | string[] | undefined>,
  fallback?: () => string | undefined,
): string {
  const incoming = headers['x-request-id'];
  if (typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming)) return incoming;
  const traceparent = headers['traceparent'];
  if (typeof traceparent === 'string') {
    const match = TRACEPARENT.exec(traceparent.trim());
    if (match && !/^0+$/.test(match[1])) return match[1];
  }
  return fallback?.() ?? randomUUID();
}
