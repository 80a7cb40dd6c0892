import type { LoggerService } from '@nestjs/common';
import type { LogLevel } from '../../config/app-config.js';
import { RequestContext } from '../request-context/request-context.js';

const SEVERITY: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

/**
 * Structured logs: one JSON object per line on stdout, with the request id of the current request or
 * job. Callers must never pass secrets; error causes are logged as name + message + stack only.
 */
export class JsonLogger implements LoggerService {
  constructor(private level: LogLevel = 'info') {}

  setLevel(level: LogLevel): void {
    this.level = level;
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

  private write(level: LogLevel, message: unknown, rest: unknown[]): void {
    if (SEVERITY[level] > SEVERITY[this.level]) return;
    // Nest passes the context name as the last string argument.
    const context = typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level, context };
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
    process.stdout.write(`${JSON.stringify(entry)}\n`);
  }
}

function describeError(error: Error): Record<string, unknown> {
  return { name: error.name, message: error.message, stack: error.stack };
}
