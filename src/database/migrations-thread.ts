/*
 * Entry of the thread migrateIfPendingInThread applies pending migrations in (run from dist/ only). Its log lines
 * go to the starting process, which writes them with its own logger; a failure is left unhandled, which ends the
 * thread with that error as the 'error' the starting process fails with.
 */
import { Logger, type LoggerService } from '@nestjs/common';
import { parentPort, workerData } from 'node:worker_threads';
import { applyMigrations } from './migrations-runner.js';

/** A log call of the thread, as Nest's static Logger method of that name takes it. */
export interface ThreadLogLine {
  level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  message: unknown;
  params: unknown[];
}

const forward =
  (level: ThreadLogLine['level']) =>
  (message: unknown, ...params: unknown[]): void =>
    parentPort!.postMessage({ level, message, params } satisfies ThreadLogLine);

const toStartingProcess: LoggerService = {
  log: forward('log'),
  error: forward('error'),
  warn: forward('warn'),
  debug: forward('debug'),
  verbose: forward('verbose'),
  fatal: forward('fatal'),
};
Logger.overrideLogger(toStartingProcess);

void applyMigrations((workerData as { databaseUrl: string }).databaseUrl);
