import type { Request, RequestHandler, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pinoHttp } from 'pino-http';
import { RequestContext } from '../request-context/request-context.js';
import type { JsonLogger } from './json-logger.js';

/** The caller as far as authentication got: the principal's tracker id is "<kind>:<id>" (never a secret). */
function credentialOf(req: Request): { kind: string; id: string } | null {
  const trackerId = (req.user as { trackerId?: string } | undefined)?.trackerId;
  if (!trackerId) return null;
  const colon = trackerId.indexOf(':');
  return { kind: trackerId.slice(0, colon), id: trackerId.slice(colon + 1) };
}

/**
 * One access line per request (pino-http), written when the response finishes or the client goes
 * away: method, route pattern (not the raw URL, which may carry ids and query strings), status,
 * durationMs, requestId and the credential's kind and id. Headers and bodies are never logged.
 */
export function accessLogMiddleware(logger: JsonLogger): RequestHandler {
  const fields = (req: IncomingMessage, res: ServerResponse, durationMs: number) => {
    const request = req as Request;
    return {
      context: 'Access',
      method: request.method,
      // Express's matched route; requests that matched none (404s, static files) show no pattern.
      route: (request.route as { path?: string } | undefined)?.path ?? null,
      status: res.statusCode,
      durationMs,
      // 'close' before 'finish': the client went away before the answer was complete.
      aborted: !res.writableFinished,
      credential: credentialOf(request),
    };
  };
  return pinoHttp({
    logger: logger.pino,
    // Fixed by requestContextMiddleware just before (the X-Request-Id the caller sees).
    genReqId: (_req, res) => RequestContext.requestId() ?? String(res.getHeader('X-Request-Id') ?? ''),
    customAttributeKeys: { reqId: 'requestId' },
    quietReqLogger: true,
    quietResLogger: true,
    customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : 'info'),
    customSuccessMessage: () => 'request',
    customErrorMessage: () => 'request',
    customSuccessObject: (req, res, value: { responseTime: number }) => fields(req, res, value.responseTime),
    customErrorObject: (req, res, _error, value: { responseTime: number }) => fields(req, res, value.responseTime),
  }) as unknown as RequestHandler;
}
