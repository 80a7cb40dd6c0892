import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import express, { type Request, type Response } from 'express';
import type { Server } from 'node:http';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { sendError } from '../errors/all-exceptions.filter.js';
import { AppException } from '../errors/app.exception.js';
import { ErrorCode } from '../errors/error-code.js';
import { requestContextMiddleware } from '../request-context/request-context.middleware.js';
import { METRICS_PATH, metricsHandler } from './metrics-endpoint.js';

/**
 * METRICS_PORT: a listener of its own that serves only GET /metrics, so a firewall or a Kubernetes Service can keep
 * the series away from clients while the main port stays public (which then answers 404 for /metrics). Workers
 * (APP_ROLE=worker) serve /metrics on WORKER_HTTP_PORT beside their probes instead, so every process keeps to one
 * port of its own (api and worker containers often share one environment and one host).
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server: Server | undefined;
  /** The port this listener got (METRICS_PORT=0 asks for any free one); undefined when it does not run. */
  port: number | undefined;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async onApplicationBootstrap(): Promise<void> {
    const { metrics, role, host } = this.config;
    if (role === 'worker') return;
    if (metrics.port === undefined) {
      // API.md: without METRICS_PORT the main port serves /metrics, behind METRICS_TOKEN when it is set.
      if (metrics.token === undefined && this.config.env === 'production') {
        this.logger.warn({
          msg: 'GET /metrics is served on the main port without a token; set METRICS_TOKEN or METRICS_PORT to keep it from clients',
        });
      }
      return;
    }
    const app = express();
    app.set('x-powered-by', false);
    app.use(requestContextMiddleware);
    app.get(METRICS_PATH, metricsHandler(metrics));
    app.use((req: Request, res: Response) =>
      sendError(new AppException(ErrorCode.NotFound, 'This listener serves only GET /metrics'), req, res, this.logger),
    );
    const server = app.listen(metrics.port, host);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    const address = server.address();
    this.port = typeof address === 'object' && address ? address.port : metrics.port;
    this.logger.log({ msg: 'metrics listening', port: this.port });
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
