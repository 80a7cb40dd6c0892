import { actorFor, CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Get, Query, Res, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AppException } from '../../common/errors/app.exception.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { page } from '../../common/openapi/openapi-schema.js';
import { AdminOnly } from '../auth/guards/admin-only.guard.js';
import type { AuditFilter } from './audit-log.repository.js';
import { AuditEntrySchema } from './audit.schemas.js';
import { AuditService } from './audit.service.js';
import { AdminAuditQueryDto, AuditQueryDto } from './dto/audit-query.dto.js';
import { BackendController } from '../../common/http/backend-controller.js';

/** GET /api/audit: what the caller's own credentials did. */
@ApiTags('audit')
@BackendController('api/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({ summary: "The caller's own audit entries, newest first (filters: action, from, to)" })
  @ApiData(200, page(AuditEntrySchema), 'A page of entries')
  list(@Query() query: AuditQueryDto, @CurrentCaller() caller: Caller) {
    return this.audit.page({ ...filterOf(query), visibleTo: actorFor(caller) }, query);
  }
}

/** The admin's view: everyone's entries, and the NDJSON export for a SIEM. */
@ApiTags('admin: audit')
@UseGuards(AdminOnly("read everyone's audit entries"))
@BackendController('api/admin/audit')
export class AdminAuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({ summary: "Everyone's audit entries, newest first (filters: action, from, to, userId, credentialId)" })
  @ApiData(200, page(AuditEntrySchema), 'A page of entries')
  @ApiErrors(403)
  list(@Query() query: AdminAuditQueryDto) {
    return this.audit.page(adminFilterOf(query), query);
  }

  @Get('export')
  @ApiOperation({
    summary:
      'Every matching entry as NDJSON, newest first, streamed one entry per line (the list filters; limit and cursor are ignored)',
  })
  @ApiResponse({
    status: 200,
    description: 'application/x-ndjson: one AuditEntry per line',
    content: { 'application/x-ndjson': { schema: { type: 'string' } } },
  })
  @ApiErrors(403)
  async export(@Query() query: AdminAuditQueryDto, @Res() response: Response): Promise<void> {
    const filter = adminFilterOf(query);
    response.status(200);
    response.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
    response.setHeader('Cache-Control', 'no-store');
    response.flushHeaders();
    let closed = false;
    const onClose = () => (closed = true);
    response.once('close', onClose);
    try {
      // One keyset page in memory at a time; a full socket buffer pauses the reading; a gone client stops it.
      for await (const entry of this.audit.export(filter)) {
        if (closed) break;
        if (!response.write(`${JSON.stringify(entry)}\n`)) await drainedOrClosed(response);
      }
    } finally {
      response.off('close', onClose);
      if (!closed) response.end();
    }
  }
}

/** Resolves when the socket takes more data or the client is gone; leaves no listener behind. */
function drainedOrClosed(response: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.on('drain', done);
    response.on('close', done);
  });
}

function filterOf(query: AuditQueryDto): AuditFilter {
  const from = instant(query.from, 'from');
  const to = instant(query.to, 'to');
  return { ...(query.action ? { action: query.action } : {}), ...(from ? { from } : {}), ...(to ? { to } : {}) };
}

function adminFilterOf(query: AdminAuditQueryDto): AuditFilter {
  return {
    ...filterOf(query),
    ...(query.userId ? { userId: query.userId.toLowerCase() } : {}),
    ...(query.credentialId ? { credentialId: query.credentialId.toLowerCase() } : {}),
  };
}

/** An ISO-8601 instant PostgreSQL and Date both hold (years 1-9999), else 400. */
function instant(value: string | undefined, field: string): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  const year = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || year < 1 || year > 9999) {
    throw AppException.validation(`${field} must be an ISO-8601 date-time between years 1 and 9999`, [
      { field, message: 'invalid date-time' },
    ]);
  }
  return date;
}
