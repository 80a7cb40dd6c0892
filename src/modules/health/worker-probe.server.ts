import { Logger, type INestApplicationContext } from '@nestjs/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Server } from 'node:http';
import { sendError } from '../../common/errors/all-exceptions.filter.js';
import { METRICS_PATH, metricsHandler } from '../../common/metrics/metrics-endpoint.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { requestContextMiddleware } from '../../common/request-context/request-context.middleware.js';
import { RequestContext } from '../../common/request-context/request-context.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { HealthController } from './health.controller.js';

/**
 * APP_ROLE=worker serves no API, but an orchestrator still needs to know whether it is alive and
 * ready: this listener answers only GET /api/health and /api/ready on WORKER_HTTP_PORT, through the
 * same HealthController (same checks, same envelope, same 503 while draining) as the API process, and the
 * worker's GET /metrics (unless METRICS_ENABLED=false).
 */
export class WorkerProbeServer {
  private server: Server | undefined;

  constructor(private readonly app: INestApplicationContext) {}

  async listen(port: number, host: string): Promise<number> {
    const health = this.app.get(HealthController);
    const { metrics } = this.app.get<AppConfig>(APP_CONFIG);
    const logger = new Logger('WorkerProbe');
    const probe = express();
    probe.set('x-powered-by', false);
    probe.use(requestContextMiddleware);
    const answer = (handler: () => Promise<unknown>) => (req: Request, res: Response, next: NextFunction) => {
      handler().then(
        (data) => res.json({ success: true, data, error: null, traceId: RequestContext.requestId() ?? '' }),
        next,
      );
    };
    probe.get(
      '/api/health',
      answer(() => health.health()),
    );
    probe.get(
      '/api/ready',
      answer(() => health.ready()),
    );
    if (metrics.enabled) probe.get(METRICS_PATH, metricsHandler(metrics));
    probe.use((req: Request, res: Response, next: NextFunction) =>
      next(
        new AppException(ErrorCode.NotFound, `A worker answers only GET /api/health, /api/ready and ${METRICS_PATH}`),
      ),
    );
    probe.use((error: unknown, req: Request, res: Response, _next: NextFunction) => sendError(error, req, res, logger));
    const server = probe.listen(port, host);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    const address = server.address();
    return typeof address === 'object' && address ? address.port : port;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
  }
}
