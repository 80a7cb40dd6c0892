import { Logger } from '@nestjs/common';
import type { Request, RequestHandler, Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MetricsConfig } from '../../config/app-config.js';
import { sendError } from '../errors/all-exceptions.filter.js';
import { AppException } from '../errors/app.exception.js';
import { ErrorCode } from '../errors/error-code.js';
import { metricsRegistry } from './metrics.registry.js';

export const METRICS_PATH = '/metrics';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * GET /metrics in the Prometheus text format, wherever it is served (the main port, METRICS_PORT, a worker's
 * WORKER_HTTP_PORT). With METRICS_TOKEN set, a scraper must send it as a bearer token (401 otherwise); the token
 * is compared as a digest in constant time and never logged.
 */
export function metricsHandler(config: Pick<MetricsConfig, 'token'>): RequestHandler {
  const logger = new Logger('Metrics');
  const expected = config.token === undefined ? undefined : digest(config.token);
  return (req: Request, res: Response) => {
    if (expected) {
      const given = BEARER.exec(req.headers.authorization ?? '')?.[1];
      if (given === undefined)
        return sendError(
          new AppException(ErrorCode.AuthRequired, 'GET /metrics needs the METRICS_TOKEN as a bearer token'),
          req,
          res,
          logger,
        );
      if (!timingSafeEqual(digest(given), expected))
        return sendError(new AppException(ErrorCode.AuthInvalid, 'The metrics token is not valid'), req, res, logger);
    }
    metricsRegistry.metrics().then(
      (text) => {
        res.setHeader('Content-Type', metricsRegistry.contentType);
        res.setHeader('Cache-Control', 'no-store');
        res.end(text);
      },
      (error: unknown) => sendError(error, req, res, logger),
    );
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
