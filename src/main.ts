import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { createHttpApp, createWorkerContext } from './app.factory.js';
import { JsonLogger } from './common/logging/json-logger.js';
import { loadConfig, type AppConfig } from './config/app-config.js';
import { ConfigError } from './config/config-error.js';
import { EmbeddedPostgres } from './database/embedded-postgres.js';
import { ShutdownState } from './modules/health/shutdown-state.js';

/**
 * Entry point. APP_ROLE=all (default) serves HTTP and runs workers; api serves HTTP only; worker
 * runs queue processors only. Without DATABASE_URL the embedded PostgreSQL starts in this process.
 */
export async function start(overrides: Partial<Pick<AppConfig, 'role'>> = {}): Promise<void> {
  let config: AppConfig;
  try {
    config = { ...loadConfig(), ...overrides };
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  const logger = new JsonLogger(config.logLevel);
  const embedded = config.database.url ? undefined : await EmbeddedPostgres.start(config.dataDir);
  const databaseUrl = config.database.url ?? embedded!.url;

  let app: INestApplicationContext;
  if (config.role === 'worker') {
    app = await createWorkerContext({ config, databaseUrl, logger });
    logger.log({ msg: 'worker started', role: config.role }, 'Main');
  } else {
    const httpApp = await createHttpApp({ config, databaseUrl, logger });
    await httpApp.listen(config.port, config.host);
    const address = httpApp.getHttpServer().address();
    logger.log({ msg: 'listening', role: config.role, port: typeof address === 'object' ? address?.port : config.port, embeddedDatabase: !!embedded }, 'Main');
    app = httpApp;
  }

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.log({ msg: 'shutting down', signal }, 'Main');
    const forceExit = setTimeout(() => {
      logger.error({ msg: 'shutdown timed out; exiting' }, 'Main');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    forceExit.unref();
    try {
      app.get(ShutdownState).startDraining();
      // Closes the HTTP server (in-flight requests finish), workers, queues and pools.
      await app.close();
      await embedded?.stop();
      logger.log({ msg: 'stopped cleanly' }, 'Main');
      process.exit(0);
    } catch (error) {
      logger.error({ msg: 'error during shutdown' }, error instanceof Error ? error : undefined, 'Main');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

if (require.main === module) {
  start().catch((error: unknown) => {
    process.stderr.write(`Start-up failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
