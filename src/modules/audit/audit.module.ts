import { Global, Module } from '@nestjs/common';
import { AuditLogRepository } from './audit-log.repository.js';
import { AdminAuditController, AuditController } from './audit.controller.js';
import { AuditRecorder } from './audit.recorder.js';
import { AuditRetentionService } from './audit-retention.service.js';
import { AuditService } from './audit.service.js';

/** The append-only audit log (API.md "Audit log (revision 2)"). Global: every feature's writes record through AuditService. */
@Global()
@Module({
  controllers: [AuditController, AdminAuditController],
  providers: [AuditLogRepository, AuditRecorder, AuditService, AuditRetentionService],
  exports: [AuditService],
})
export class AuditModule {}
