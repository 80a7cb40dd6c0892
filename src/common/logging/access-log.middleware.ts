import type { Request, RequestHandler, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { pinoHttp } from 'pino-http';
import { callerOf } from '../auth/caller.js';
import { RequestContext } from '../request-context/request-context.js';
import type { JsonLogger } from './json-logger.js';

/** A readiness 503 while the process drains (marked by sendError): expected, logged at info like a success. */
function plannedDrain(res: ServerResponse): boolean {
  return (res as Response).locals?.plannedDrain === true;
}

/** The caller as far as authentication got: its credential kind and the credential's id (its user's without one). */
function credentialOf(req: Request): { kind: string; id: string } | null {
  const caller = callerOf(req);
  return caller ? { kind: caller.kind, id: caller.credentialId ?? caller.userId } : null;
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
  const full = pinoHttp({
    logger: logger.pino,
    // Fixed by requestContextMiddleware just before (the X-Request-Id the caller sees).
    genReqId: (_req, res) => RequestContext.requestId() ?? String(res.getHeader('X-Request-Id') ?? ''),
    customAttributeKeys: { reqId: 'requestId' },
    quietReqLogger: true,
    quietResLogger: true,
    customLogLevel: (_req, res, error) => (error || (res.statusCode >= 500 && !plannedDrain(res)) ? 'error' : 'info'),
    customSuccessMessage: () => 'request',
    customErrorMessage: () => 'request',
    customSuccessObject: (req, res, value: { responseTime: number }) => fields(req, res, value.responseTime),
    customErrorObject: (req, res, _error, value: { responseTime: number }) => fields(req, res, value.responseTime),
  }) as unknown as RequestHandler;
  // Below info (LOG_LEVEL=warn/error) only failed requests are written: they need no per-request child
  // logger, only a look at the status when the answer is done (pino-http's per-request set-up is not free).
  const failuresOnly: RequestHandler = (req, res, next) => {
    const started = performance.now();
    const done = () => {
      res.removeListener('finish', done);
      res.removeListener('close', done);
      if ((res.statusCode < 500 || plannedDrain(res)) && res.writableFinished) return;
      // As pino-http rates them: a 5xx or an answer the client did not wait for is an error line.
      if (logger.pino.isLevelEnabled('error'))
        logger.pino.error(
          {
            requestId: String(res.getHeader('X-Request-Id') ?? ''),
            ...fields(req, res, Math.round(performance.now() - started)),
          },
          'request',
        );
    };
    res.on('finish', done);
    res.on('close', done);
    next();
  };
  return (req, res, next) => (logger.pino.isLevelEnabled('info') ? full(req, res, next) : failuresOnly(req, res, next));
}
