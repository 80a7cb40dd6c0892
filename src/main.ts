// First: tracing must start before the modules it instruments are loaded (see the file).
import './common/tracing/tracing.preload.js';
import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHttpApp, createWorkerContext } from './app.factory.js';
import { exitWithError, installProcessLogger } from './common/logging/process-logger.js';
import { shutdownTracing } from './common/tracing/tracing-state.js';
import { loadConfig, type AppConfig } from './config/app-config.js';
import { ConfigError } from './config/config-error.js';
import { DataDirLockedError } from './database/data-dir-lock.js';
import { EmbeddedPostgres } from './database/embedded-postgres.js';
import { ShutdownState } from './modules/health/shutdown-state.js';
import { WorkerProbeServer } from './modules/health/worker-probe.server.js';
import { WorkerDrain } from './queue/worker-drain.js';

/**
 * Entry point. APP_ROLE=all (default) serves HTTP and runs workers; api serves HTTP only; worker
 * runs queue processors only (plus its probes on WORKER_HTTP_PORT). Without DATABASE_URL the embedded
 * PostgreSQL starts in this process.
 */
export async function start(overrides: Partial<Pick<AppConfig, 'role'>> = {}): Promise<void> {
  // Every Logger, also those created before Nest starts (the embedded engine's), writes JSON lines from here on.
  const logger = installProcessLogger();
  let config: AppConfig;
  try {
    config = { ...loadConfig(), ...overrides };
  } catch (error) {
    if (error instanceof ConfigError) {
      logger.error({ msg: error.message, variable: error.variable }, 'Config');
      process.exit(78);
    }
    throw error;
  }
  logger.setLevel(config.logLevel);
  let embedded: EmbeddedPostgres | undefined;
  if (!config.database.url) {
    try {
      embedded = await EmbeddedPostgres.start(config.dataDir);
    } catch (error) {
      if (error instanceof DataDirLockedError) {
        logger.error({ msg: error.message, dataDir: config.dataDir }, 'Main');
        process.exit(75); // EX_TEMPFAIL: retry once the other process is gone
      }
      throw error;
    }
  }
  const databaseUrl = config.database.url ?? embedded!.url;

  let app: INestApplicationContext;
  let httpApp: NestExpressApplication | undefined;
  let probe: WorkerProbeServer | undefined;
  if (config.role === 'worker') {
    app = await createWorkerContext({ config, databaseUrl, logger });
    probe = new WorkerProbeServer(app);
    const port = await probe.listen(config.workerHttpPort, config.host);
    logger.log({ msg: 'worker started', role: config.role, port }, 'Main');
  } else {
    httpApp = await createHttpApp({ config, databaseUrl, logger });
    await httpApp.listen(config.port, config.host);
    const address = httpApp.getHttpServer().address();
    logger.log(
      {
        msg: 'listening',
        role: config.role,
        port: typeof address === 'object' ? address?.port : config.port,
        embeddedDatabase: !!embedded,
      },
      'Main',
    );
    app = httpApp;
  }

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    // Readiness fails first; the load balancer (Kubernetes endpoints, compose health) stops sending
    // new requests within its probe period while this process still answers them.
    app.get(ShutdownState).startDraining();
    const drainMs = httpApp ? config.shutdownDrainDelayMs : 0;
    logger.log({ msg: 'shutting down', signal, drainMs }, 'Main');
    // Queue workers stop fetching at once and hand back what they hold (see WorkerDrain), during the HTTP drain.
    const workersDrained = app.get(WorkerDrain).start();
    await sleep(drainMs);
    const forceExit = setTimeout(() => {
      logger.error({ msg: 'shutdown timed out; exiting' }, 'Main');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    forceExit.unref();
    try {
      await workersDrained;
      // Closes the listener (in-flight requests finish), then workers, queues and pools.
      await app.close();
      await probe?.close();
      await embedded?.stop();
      await shutdownTracing(); // the spans of the last requests and jobs
      logger.log({ msg: 'stopped cleanly' }, 'Main');
      process.exit(0);
    } catch (error) {
      exitWithError(logger, 'error during shutdown', error, 1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

if (require.main === module) {
  start().catch((error: unknown) => exitWithError(installProcessLogger(), 'Start-up failed', error, 1));
}
