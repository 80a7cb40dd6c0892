import type { NextFunction, Request, Response } from 'express';
import { activeTraceId } from '../tracing/tracing-state.js';
import { RequestContext, resolveRequestId } from './request-context.js';

/** First middleware of the app: fixes the request id before body parsing can fail. */
export function requestContextMiddleware(req: Request, res: Response, next: NextFunction): void {
  const requestId = resolveRequestId(req.headers, activeTraceId);
  res.setHeader('X-Request-Id', requestId);
  RequestContext.run({ requestId }, next);
}
