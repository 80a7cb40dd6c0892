import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import { map, Observable } from 'rxjs';
import { RequestContext } from '../request-context/request-context.js';

/**
 * Wraps every Area B success as `{success, data, error: null, traceId}`. It never inspects the data. Applied by
 * @BackendController to the Area B controllers only (never to Area A's, whose bodies are bare); raw responses
 * (files, streams) are recognised by type.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    return next
      .handle()
      .pipe(
        map((data: unknown) =>
          data instanceof StreamableFile
            ? data
            : { success: true, data: data ?? null, error: null, traceId: RequestContext.requestId() ?? '' },
        ),
      );
  }
}
