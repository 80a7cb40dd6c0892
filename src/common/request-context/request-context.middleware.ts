import type { NextFunction, Request, Response } from 'express';
import { activeTraceId } from '../tracing/tracing-state.js';
import { RequestContext, resolveRequestId } from './request-context.js';

/**
 * First middleware of the app: fixes the request id before body parsing can fail, and keeps the request itself in
 * the flow for the audit log (one AsyncLocalStorage for both: a second one, run around each route handler by a global
 * interceptor, wrapped every call in RxJS observables).
 */
export function requestContextMiddleware(req: Request, res: Response, next: NextFunction): void {
  const requestId = resolveRequestId(req.headers, activeTraceId);
  res.setHeader('X-Request-Id', requestId);
  RequestContext.run({ requestId, request: req }, next);
}
