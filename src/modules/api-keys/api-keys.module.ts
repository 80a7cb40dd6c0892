import { Module } from '@nestjs/common';
import { AdminPolicyModule } from '../admin-policy/admin-policy.module.js';
import { ApiKeyAuthGuard } from './api-key-auth.guard.js';
import { ApiKeyCallCounterService } from './api-key-call-counter.service.js';
import { ApiKeyCredential } from './api-key.credential.js';
import { ApiKeyUsageRecorder } from './api-key-usage.recorder.js';
import { AdminApiKeysController, ApiKeysController } from './api-keys.controller.js';
import { ApiKeysRepository } from './api-keys.repository.js';
import { ApiKeysService } from './api-keys.service.js';
import { ToolCredentialsModule } from './tool-credentials.module.js';
import { KeyCallLimiterService } from './key-call-limiter.service.js';
import { VerifiedKeyCache } from './verified-key-cache.js';

@Module({
  imports: [ToolCredentialsModule, AdminPolicyModule],
  controllers: [ApiKeysController, AdminApiKeysController],
  providers: [
    ApiKeysRepository,
    ApiKeysService,
    ApiKeyCallCounterService,
    ApiKeyUsageRecorder,
    ApiKeyCredential,
    ApiKeyAuthGuard,
    KeyCallLimiterService,
    VerifiedKeyCache,
  ],
  exports: [ApiKeysService, ApiKeyCallCounterService, ApiKeyUsageRecorder, ApiKeyAuthGuard, KeyCallLimiterService],
})
export class ApiKeysModule {}
