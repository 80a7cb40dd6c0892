import { accountHolder, CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Body, Delete, Get, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { PageQueryDto } from '../../common/pagination/page-query.dto.js';
import { ApiKeysService } from './api-keys.service.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import { CreateApiKeyDto } from './dto/create-api-key.dto.js';
import { CarriesSecret } from '../../common/http/carries-secret.decorator.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { page } from '../../common/openapi/openapi-schema.js';
import {
  ApiKeyDetailSchema,
  ApiKeySchema,
  CreatedApiKeySchema,
  RevokedApiKeySchema,
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
      'Create a personal API key; the plaintext key is in this response only. 409 CONFLICT at MAX_CREDENTIALS_PER_USER active keys and OAuth grants',
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

  @Delete(':id')
  @ApiOperation({ summary: 'Revoke a key; it answers 401 revoked_api_key from the next request on' })
  @ApiData(200, RevokedApiKeySchema, 'The key, now revoked')
  @ApiErrors(404)
  revoke(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return this.apiKeys.revoke(userOnly(caller), id);
  }
}

/** Keys belong to the account: a caller pinned to a project (a project session token) never manages them. */
function userOnly(caller: Caller): string {
  return accountHolder(caller, 'API keys');
}
