import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OAuthModule } from '../oauth/oauth.module.js';
import { ApiKeyAuthGuard } from './api-key-auth.guard.js';
import { ApiKeyCallCounter } from './api-key-call-counter.js';
import { ApiKey } from './api-key.entity.js';
import { ApiKeyStrategy } from './api-key.strategy.js';
import { ApiKeyUsageRecorder } from './api-key-usage.recorder.js';
import { ApiKeysController } from './api-keys.controller.js';
import { ApiKeysService } from './api-keys.service.js';
import { KeyRateLimitGuard } from './key-rate-limit.guard.js';
import { OwnerInterceptor } from './owner.interceptor.js';

@Module({
  imports: [TypeOrmModule.forFeature([ApiKey]), PassportModule, OAuthModule],
  controllers: [ApiKeysController],
  providers: [ApiKeysService, ApiKeyCallCounter, ApiKeyUsageRecorder, ApiKeyStrategy, ApiKeyAuthGuard, KeyRateLimitGuard, OwnerInterceptor],
  exports: [ApiKeysService, ApiKeyUsageRecorder, ApiKeyAuthGuard, KeyRateLimitGuard, OwnerInterceptor],
})
export class ApiKeysModule {}
