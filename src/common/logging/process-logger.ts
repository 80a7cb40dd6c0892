import { Logger } from '@nestjs/common';
import { LOG_LEVELS, type LogLevel } from '../../config/app-config.js';
import { JsonLogger } from './json-logger.js';

let installed: JsonLogger | undefined;

/**
 * The logger of an entry point (main, worker, migrate), installed before anything else can print: every Nest
 * `Logger`, Node's process warnings and an error nothing caught all become JSON lines, so an operator's log pipeline
 * never meets a plain-text line. LOG_LEVEL is read raw here (info when unset or invalid, which the config then
 * reports as a JSON line too).
 */
export function installProcessLogger(env: NodeJS.ProcessEnv = process.env): JsonLogger {
  if (installed) return installed;
  const requested = env.LOG_LEVEL as LogLevel | undefined;
  const logger = new JsonLogger(requested && LOG_LEVELS.includes(requested) ? requested : 'info');
  installed = logger;
  Logger.overrideLogger(logger);
  // Node prints warnings (deprecations, experimental features) as text on stderr by default.
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) =>
    logger.warn({ msg: warning.message, warning: warning.name, code: warning.code }, 'Process'),
  );
  // Also what an unhandled promise rejection becomes (Node's default --unhandled-rejections=throw).
  process.on('uncaughtException', (error: unknown) => exitWithError(logger, 'uncaught exception', error, 1));
  return logger;
}

/** Logs why the process stops (as one JSON line, with the error's name, message and stack) and exits with `code`. */
export function exitWithError(
  logger: JsonLogger,
  msg: string,
  error: unknown,
  code: number,
  fields: Record<string, unknown> = {},
): never {
  logger.error(
    { msg: error instanceof Error ? `${msg}: ${error.message}` : `${msg}: ${String(error)}`, ...fields },
    error instanceof Error ? error : undefined,
    'Main',
  );
  process.exit(code);
}
