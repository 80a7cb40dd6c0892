import type { NextFunction, Request, Response } from 'express';
import { performance } from 'node:perf_hooks';
import { UNMATCHED_ROUTE, httpRequestDuration, httpRequestsTotal } from './metrics.registry.js';

/** Methods that get a label of their own; anything else is counted as OTHER, so a client cannot invent series. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * http_requests_total and http_request_duration_seconds for every request, labelled with the Express route
 * pattern it matched (`/api/tasks/:id`, never the raw path with its ids; `unmatched` when none did). Runs on
 * the hot path of every call: one timestamp now, one listener, and two label lookups when the answer is done.
 */
export function httpMetricsMiddleware(req: Request, res: Response, next: NextFunction): void {
  const started = performance.now();
  // 'close' fires once for every request, answered or abandoned by the client.
  res.once('close', () => {
    const route = (req.route as { path?: unknown } | undefined)?.path;
    const labels = {
      method: KNOWN_METHODS.has(req.method) ? req.method : 'OTHER',
      route: typeof route === 'string' ? route : UNMATCHED_ROUTE,
      status: String(res.statusCode),
    };
    httpRequestsTotal.inc(labels);
    httpRequestDuration.observe(labels, (performance.now() - started) / 1000);
  });
  next();
}
