import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { Request } from 'express';
import { map, Observable } from 'rxjs';
import { RequestContext } from '../request-context/request-context.js';
import { apiAreaOf } from './api-area.js';

/**
 * Wraps every Area B success as `{success, data, error: null, traceId}`. It never inspects the data:
 * Area A and raw responses (files, MCP streams) are recognised by path or type, nothing else.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<Request>();
    if (apiAreaOf(request) === 'tool-api' || !request.path.startsWith('/api/')) return next.handle();
    return next.handle().pipe(
      map((data: unknown) =>
        data instanceof StreamableFile
          ? data
          : { success: true, data: data ?? null, error: null, traceId: RequestContext.requestId() ?? '' },
      ),
    );
  }
}
