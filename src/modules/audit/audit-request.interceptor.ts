import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import { Observable } from 'rxjs';
import { auditRequestStorage } from './audit-context.js';

/**
 * Global: runs each HTTP route handler with its request in `auditRequestStorage`, so the services it calls can name
 * the acting credential in their audit entries without every signature carrying it. The handler is subscribed to
 * inside the store, so everything it awaits sees it.
 */
@Injectable()
export class AuditRequestInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<Request>();
    return new Observable((subscriber) => auditRequestStorage.run(request, () => next.handle().subscribe(subscriber)));
  }
}
