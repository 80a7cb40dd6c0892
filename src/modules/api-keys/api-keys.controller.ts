import { accountHolder, CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Body, Delete, Get, Param, Post, Query, UseGuards } from '@nestjs/common';
import { AdminOnly } from '../auth/guards/admin-only.guard.js';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { PageQueryDto } from '../../common/pagination/page-query.dto.js';
import { ApiKeysService } from './api-keys.service.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import { CreateApiKeyDto, RollApiKeyDto } from './dto/create-api-key.dto.js';
import { CarriesSecret } from '../../common/http/carries-secret.decorator.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { page } from '../../common/openapi/openapi-schema.js';
import {
  ApiKeyDetailSchema,
  ApiKeySchema,
  CreatedApiKeySchema,
  OutOfPolicyKeySchema,
  RevokedApiKeySchema,
  RolledApiKeySchema,
  ScopeCatalogSchema,
} from './api-keys.schemas.js';
import { BackendController } from '../../common/http/backend-controller.js';

/** The account page's key management; user access token only (the global guard enforces it). */
@ApiTags('api-keys')
@BackendController('api/api-keys')
export class ApiKeysController {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly scopeCatalog: ScopeCatalog,
  ) {}

  @CarriesSecret()
  @Post()
  @ApiOperation({
    summary:
      'Create a personal API key; the plaintext key is in this response only. 400 naming the admin policy rule it would break; 409 CONFLICT at the policy maxCredentialsPerUser active keys and OAuth grants',
  })
  @ApiData(201, CreatedApiKeySchema, 'The key with its plaintext (Cache-Control: no-store)')
  @ApiErrors(404, 409)
  create(@CurrentCaller() caller: Caller, @Body() body: CreateApiKeyDto) {
    return this.apiKeys.create(userOnly(caller), body);
  }

  @Get()
  @ApiOperation({ summary: "The caller's API keys, newest first: {items, nextCursor}" })
  @ApiData(200, page(ApiKeySchema), 'A page of keys')
  list(@CurrentCaller() caller: Caller, @Query() query: PageQueryDto) {
    return this.apiKeys.list(userOnly(caller), query);
  }

  @Get('scopes')
  @ApiOperation({
    summary: 'The scopes a key can carry, in catalog order: {items: [{name, group, access, allows, exampleTool}]}',
  })
  @ApiData(200, ScopeCatalogSchema, 'The scope catalog (what the account and consent pages show)')
  scopes(@CurrentCaller() caller: Caller) {
    userOnly(caller);
    return { items: this.scopeCatalog.list() };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One key with its last 50 calls' })
  @ApiData(200, ApiKeyDetailSchema, 'The key and its recent usage')
  @ApiErrors(404)
  get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return this.apiKeys.get(userOnly(caller), id);
  }

  @CarriesSecret()
  @Post(':id/roll')
  @ApiOperation({
    summary:
      'Roll a key: a new key with the same name, scopes, pins, settings and lifetime (plaintext in this response only); the old key works until the overlap ends, then answers 401 revoked_api_key. 409 CONFLICT for a key already rolled, revoked or expired; 400 when the new key would break the admin policy',
  })
  @ApiData(201, RolledApiKeySchema, 'The new key with its plaintext (Cache-Control: no-store)')
  @ApiErrors(404, 409)
  roll(@CurrentCaller() caller: Caller, @Param('id') id: string, @Body() body: RollApiKeyDto) {
    return this.apiKeys.roll(userOnly(caller), id, body.overlap);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Revoke a key; it answers 401 revoked_api_key from the next request on' })
  @ApiData(200, RevokedApiKeySchema, 'The key, now revoked')
  @ApiErrors(404)
  revoke(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return this.apiKeys.revoke(userOnly(caller), id);
  }
}

/** The admin's view of everyone's keys against the admin policy. */
@ApiTags('admin: policy')
@UseGuards(AdminOnly("list everyone's keys"))
@BackendController('api/admin/api-keys')
export class AdminApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Get('out-of-policy')
  @ApiOperation({
    summary:
      "Everyone's usable keys that break the admin policy, newest first, with the rules each breaks: {items, nextCursor} (a page may hold fewer items than limit; nextCursor continues)",
  })
  @ApiData(200, page(OutOfPolicyKeySchema), 'A page of keys out of policy')
  @ApiErrors(403)
  outOfPolicy(@Query() query: PageQueryDto) {
    return this.apiKeys.outOfPolicy(query);
  }
}

/** Keys belong to the account: a caller pinned to a project (a project session token) never manages them. */
function userOnly(caller: Caller): string {
  return accountHolder(caller, 'API keys');
}
