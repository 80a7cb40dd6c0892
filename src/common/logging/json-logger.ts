import type { LoggerService } from '@nestjs/common';
import pino, { type Logger as PinoLogger } from 'pino';
import type { LogLevel } from '../../config/app-config.js';
import { RequestContext } from '../request-context/request-context.js';

/**
 * Nest's start-up chatter (module wiring, one line per mapped route) is for debugging, not for the
 * operator's info stream.
 */
const DEBUG_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
  'NestApplication',
]);

/** pino writing one JSON object per line to stdout, synchronously (nothing is lost on process.exit). */
export function createPino(level: LogLevel): PinoLogger {
  return pino({
    level,
    base: undefined,
    messageKey: 'msg',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}

/**
 * Structured logs for Nest and the app: every line is JSON (pino), with the request id of the current
 * request or job. Callers must never pass secrets; error causes are logged as name + message + stack only.
 */
export class JsonLogger implements LoggerService {
  readonly pino: PinoLogger;

  constructor(level: LogLevel = 'info') {
    this.pino = createPino(level);
  }

  setLevel(level: LogLevel): void {
    this.pino.level = level;
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }

  private write(requested: LogLevel, message: unknown, rest: unknown[]): void {
    // Nest passes the context name as the last string argument.
    const context = typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const level = requested === 'info' && context && DEBUG_CONTEXTS.has(context) ? 'debug' : requested;
    if (!this.pino.isLevelEnabled(level)) return;
    const entry: Record<string, unknown> = { context };
    const requestId = RequestContext.requestId();
    if (requestId) entry.requestId = requestId;
    if (message instanceof Error) {
      entry.msg = message.message;
      entry.error = describeError(message);
    } else if (typeof message === 'object' && message !== null) {
      Object.assign(entry, message);
    } else {
      entry.msg = String(message);
    }
    for (const extra of rest) {
      if (extra instanceof Error) entry.error = describeError(extra);
      else if (typeof extra === 'string' && level === 'error') entry.stack = extra;
      else if (typeof extra === 'object' && extra !== null) Object.assign(entry, extra);
    }
    this.pino[level](entry);
  }
}

function describeError(error: Error): Record<string, unknown> {
  return { name: error.name, message: error.message, stack: error.stack };
}
