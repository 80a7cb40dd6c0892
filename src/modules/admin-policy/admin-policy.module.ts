import { Module } from '@nestjs/common';
import { AdminPolicyController } from './admin-policy.controller.js';
import { AdminPolicyRepository } from './admin-policy.repository.js';
import { AdminPolicyService } from './admin-policy.service.js';

/** The admin policy (API.md "Grants and admin policy"): stored once, read by key creation, the credential kinds and OAuth. */
@Module({
  controllers: [AdminPolicyController],
  providers: [AdminPolicyRepository, AdminPolicyService],
  exports: [AdminPolicyService],
})
export class AdminPolicyModule {}
