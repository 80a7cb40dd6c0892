import { Module } from '@nestjs/common';
import { IdempotencyRepository } from './idempotency.repository.js';
import { IdempotencyService } from './idempotency.service.js';

/** Import it in any module whose write routes honour Idempotency-Key. */
@Module({ providers: [IdempotencyRepository, IdempotencyService], exports: [IdempotencyService] })
export class IdempotencyModule {}
