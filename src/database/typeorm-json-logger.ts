import { Logger as NestLogger } from '@nestjs/common';
import type { Logger as TypeOrmLogger } from 'typeorm';

/**
 * TypeORM's own messages (migrations applied or failed, schema notes) as JSON lines through Nest's
 * logger, instead of its plain console output. Queries are never logged: their parameters can hold
 * secrets (password hashes, token hashes); failing queries surface as the errors callers handle.
 */
export class TypeOrmJsonLogger implements TypeOrmLogger {
  private readonly logger = new NestLogger('TypeORM');

  logQuery(): void {}
  logQueryError(): void {}
  logQuerySlow(time: number): void {
    this.logger.warn({ msg: 'slow query', durationMs: time });
  }
  logSchemaBuild(message: string): void {
    this.logger.debug(message);
  }
  logMigration(message: string): void {
    this.logger.log(message);
  }
  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
    else this.logger.debug(String(message));
  }
}
