import { Module } from '@nestjs/common';
import { IdempotencyService } from './idempotency.service.js';

/** Import it in any module whose write routes honour Idempotency-Key. */
@Module({ providers: [IdempotencyService], exports: [IdempotencyService] })
export class IdempotencyModule {}
