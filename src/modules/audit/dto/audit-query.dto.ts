import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsOptional, IsUUID } from 'class-validator';
import { PageQueryDto } from '../../../common/pagination/page-query.dto.js';
import { AUDIT_ACTIONS, type AuditAction } from '../audit-entry.js';

/** GET /api/audit: the caller's own entries. */
export class AuditQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: AUDIT_ACTIONS })
  @IsOptional()
  @IsIn(AUDIT_ACTIONS)
  action?: AuditAction;

  @ApiPropertyOptional({ format: 'date-time', description: 'Entries at or after this instant (ISO 8601)' })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Entries before this instant (ISO 8601)' })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  to?: string;
}

/** GET /api/admin/audit and its export: everyone's entries, also by user and by credential. */
export class AdminAuditQueryDto extends AuditQueryDto {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  userId?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'An API key, OAuth grant or project session token id' })
  @IsOptional()
  @IsUUID()
  credentialId?: string;
}
