import {
  CallHandler,
  ExecutionContext,
  Inject,
  Injectable,
  NestInterceptor,
  PayloadTooLargeException,
} from '@nestjs/common';
import type { Request } from 'express';
import { catchError, type Observable, throwError } from 'rxjs';
import { lingerOnClose } from '../../common/http/lingering-close.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

// Room for the multipart boundaries, part headers and the small text fields around the file.
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/**
 * Wraps the multer interceptor of an upload route: a declared Content-Length far above the limit is
 * refused before a byte of the body is read (then the connection closes lingering, see lingerOnClose), and
 * multer's own stop at `fileSize` (for chunked or lying requests) becomes the same 413 naming the limit.
 */
@Injectable()
export class UploadLimitInterceptor implements NestInterceptor {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const limit = this.config.limits.uploadMaxBytes;
    const request = context.switchToHttp().getRequest<Request>();
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit + MULTIPART_OVERHEAD_BYTES) {
      // The client may still be sending: close the connection after answering instead of draining the body, but
      // lingering, so that the client reads the 413 before the close.
      request.res?.setHeader('Connection', 'close');
      lingerOnClose(request.socket);
      throw this.tooLarge(limit);
    }
    return next
      .handle()
      .pipe(
        catchError((error: unknown) =>
          throwError(() => (error instanceof PayloadTooLargeException ? this.tooLarge(limit) : error)),
        ),
      );
  }

  private tooLarge(limit: number): AppException {
    return new AppException(ErrorCode.PayloadTooLarge, `The file is larger than the upload limit of ${limit} bytes`, {
      limitBytes: limit,
    });
  }
}
