import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { AuditLogRepository } from './audit-log.repository.js';

const PRUNE_EVERY_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Retention by age only: entries older than AUDIT_RETENTION_DAYS are deleted, hourly, by every instance (two racing
 * prunes delete the same rows once). The table's trigger refuses any other DELETE.
 */
@Injectable()
export class AuditRetentionService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('AuditRetention');
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly repository: AuditLogRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Deletes the entries older than the retention; returns how many. */
  async prune(now = new Date()): Promise<number> {
    try {
      const pruned = await this.repository.pruneOlderThan(
        new Date(now.getTime() - this.config.audit.retentionDays * DAY_MS),
      );
      if (pruned > 0)
        this.logger.log({
          msg: 'audit entries past their retention pruned',
          pruned,
          retentionDays: this.config.audit.retentionDays,
        });
      return pruned;
    } catch (error) {
      this.logger.warn({
        msg: 'audit retention prune failed',
        error: error instanceof Error ? error.message : String(error),
      });
      return 0;
    }
  }
}
