import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import type { Request } from 'express';
import { callerOf } from '../auth/caller.js';
import { apiAreaOf } from '../http/api-area.js';
import { rateLimited } from './rate-limiter.service.js';

type ThrottlerLimitDetail = Parameters<ThrottlerGuard['throwThrottlingException']>[1];

/**
 * Area B limit per caller (user or project token), else per IP for anonymous routes. Area A keys have
 * their own per-key limit in the tool gateway; probes (/api/health, /api/ready) are never limited.
 */
@Injectable()
export class BackendThrottlerGuard extends ThrottlerGuard {
  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const request = context.switchToHttp().getRequest<Request>();
    return apiAreaOf(request) === 'tool-api' || request.path === '/api/health' || request.path === '/api/ready';
  }

  /**
   * One budget per caller across every Area B route. The throttler's own key also names the controller
   * and handler, which gave each caller the whole limit on every route separately.
   */
  protected override generateKey(_context: ExecutionContext, tracker: string, throttlerName: string): string {
    return `${throttlerName}:${tracker}`;
  }

  /** The budget the caller's credential kind names (a project token spends its user's), else the IP's. */
  protected override async getTracker(req: Record<string, any>): Promise<string> {
    return callerOf(req as Request)?.budgetKey ?? `ip:${req.ip}`;
  }

  protected override async throwThrottlingException(
    _context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw rateLimited(
      'backend',
      'Request limit exceeded; retry later',
      Math.max(1, detail.timeToBlockExpire || detail.timeToExpire),
    );
  }
}
