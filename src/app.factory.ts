import { Logger, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import { join } from 'node:path';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { sendError } from './common/errors/all-exceptions.filter.js';
import { accessLogMiddleware } from './common/logging/access-log.middleware.js';
import { JsonLogger } from './common/logging/json-logger.js';
import { httpMetricsMiddleware } from './common/metrics/http-metrics.middleware.js';
import { METRICS_PATH, metricsHandler } from './common/metrics/metrics-endpoint.js';
import { requestContextMiddleware } from './common/request-context/request-context.middleware.js';
import { httpActivity, httpActivityMiddleware } from './common/http/http-activity.js';
import { jsonBodyGuard } from './common/http/json-body-guard.js';
import { securityHeaders } from './common/http/security-headers.js';
import type { AppConfig } from './config/app-config.js';
import { ShutdownState } from './modules/health/shutdown-state.js';
import { buildOpenApiDocument } from './openapi/openapi-document.js';
import { assertBackendRoutesEnveloped } from './common/http/backend-controller.js';

const openApiDocuments = new WeakMap<NestExpressApplication, () => OpenAPIObject>();

export interface CreateAppOptions {
  config: AppConfig;
  databaseUrl: string;
  logger?: JsonLogger;
  /** See AppModuleOptions.extraModules. */
  extraModules?: AppModuleOptions['extraModules'];
}

/** Builds the HTTP application exactly as production runs it; tests call this too. */
export async function createHttpApp({
  config,
  databaseUrl,
  logger,
  extraModules,
}: CreateAppOptions): Promise<NestExpressApplication> {
  const jsonLogger = logger ?? new JsonLogger(config.logLevel);
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot({ config, databaseUrl, extraModules }),
    {
      logger: jsonLogger,
      bodyParser: false,
      abortOnError: false,
    },
  );
  configureHttp(app, config, jsonLogger);
  await app.init();
  assertBackendRoutesEnveloped(app);
  openApiDocuments.get(app)!();
  return app;
}

/** APP_ROLE=worker: queue processors only, no HTTP server. */
export async function createWorkerContext({
  config,
  databaseUrl,
  logger,
}: CreateAppOptions): Promise<INestApplicationContext> {
  return NestFactory.createApplicationContext(AppModule.forRoot({ config, databaseUrl }), {
    logger: logger ?? new JsonLogger(config.logLevel),
    abortOnError: false,
  });
}

function configureHttp(app: NestExpressApplication, config: AppConfig, logger: JsonLogger): void {
  // X-Forwarded-For only from the proxies an operator named (TRUST_PROXY); by default nobody can pick the
  // address that per-IP limits (login, anonymous routes) count.
  app.set('trust proxy', config.trustProxy);
  app.set('x-powered-by', false);
  // The request id is fixed before anything can fail, so even a body-parse error carries it.
  app.use(requestContextMiddleware);
  // Background work in this process paces itself by how busy serving is (IndexingPacer).
  httpActivity.serving = true;
  app.use(httpActivityMiddleware);
  if (config.metrics.enabled) app.use(httpMetricsMiddleware);
  app.use(accessLogMiddleware(logger));
  // While draining, answers ask keep-alive clients to reconnect, which reaches a process that stays.
  const shutdown = app.get(ShutdownState);
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (shutdown.draining) res.setHeader('Connection', 'close');
    next();
  });
  app.use(securityHeaders(config.publicUrl));
  // On the main port unless METRICS_PORT gives it a listener of its own (src/common/metrics/metrics.server.ts).
  if (config.metrics.enabled && config.metrics.port === undefined)
    app.getHttpAdapter().getInstance().get(METRICS_PATH, metricsHandler(config.metrics));
  app.useBodyParser('json', { limit: config.limits.jsonBodyBytes, type: ['application/json', 'application/*+json'] });
  // Deep nesting overflows the (recursive) validators into a 500; NUL cannot be stored: refuse both at the door.
  app.use(jsonBodyGuard);
  app.enableCors({ origin: false });
  app.useStaticAssets(join(__dirname, '..', 'public'), { index: 'index.html' });

  // Built after init (the tool registry is sealed then); createHttpApp builds it once at start-up so a
  // route without a documented answer fails the boot, not the first request for the document.
  let document: OpenAPIObject | undefined;
  openApiDocuments.set(app, () => (document ??= buildOpenApiDocument(app, config)));
  SwaggerModule.setup('api/docs', app, openApiDocuments.get(app)!, {
    jsonDocumentUrl: 'api/docs/openapi.json',
    customfavIcon: '/favicon.ico',
  });

  // Errors thrown by Express middleware (body parser, multer) never reach Nest's filter.
  const errorLogger = new Logger('Errors');
  app.use((error: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    sendError(error, req, res, errorLogger);
  });
}
