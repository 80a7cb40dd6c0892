import { Body, Get, Put, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { BackendController } from '../../common/http/backend-controller.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { AdminOnly } from '../auth/guards/admin-only.guard.js';
import { CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { AdminPolicySchema } from './admin-policy.schemas.js';
import { AdminPolicyService } from './admin-policy.service.js';
import { UpdateAdminPolicyDto } from './dto/update-admin-policy.dto.js';

/** The organisation's credential policy; admins only. */
@ApiTags('admin: policy')
@UseGuards(AdminOnly('read or change the admin policy'))
@BackendController('api/admin/policy')
export class AdminPolicyController {
  constructor(private readonly policy: AdminPolicyService) {}

  @Get()
  @ApiOperation({ summary: 'The policy in force (the defaults until an admin saves one)' })
  @ApiData(200, AdminPolicySchema, 'The policy')
  @ApiErrors(403)
  get() {
    return this.policy.view();
  }

  @Put()
  @ApiOperation({
    summary:
      'Replace the policy (every field required); audited policy.update with the changed fields. In force at once on this instance, within a second on every other',
  })
  @ApiData(200, AdminPolicySchema, 'The policy as saved')
  @ApiErrors(403)
  put(@CurrentCaller() caller: Caller, @Body() body: UpdateAdminPolicyDto) {
    // AdminOnly let only a signed-in admin user through.
    return this.policy.update(caller.userId, body);
  }
}
