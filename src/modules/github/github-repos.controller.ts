import { CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Body, Delete, Get, HttpCode, Param, ParseUUIDPipe, Post, Query, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { PageQueryDto } from '../../common/pagination/page-query.dto.js';
import { RegisterRepoDto } from './dto/register-repo.dto.js';
import { GithubReposService } from './github-repos.service.js';
import { AdminOnly } from '../auth/guards/admin-only.guard.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { page } from '../../common/openapi/openapi-schema.js';
import { DeletedSchema } from '../documents/documents.schemas.js';
import { RegisteredRepoSchema } from './github.schemas.js';
import { BackendController } from '../../common/http/backend-controller.js';

@ApiTags('admin: github')
@UseGuards(AdminOnly('manage the shared GitHub repositories'))
@BackendController('api/admin/github/repos')
export class GithubReposController {
  constructor(private readonly repos: GithubReposService) {}

  @Post()
  @ApiOperation({ summary: 'Register a shared repository (checked with GitHub first; the token is stored encrypted)' })
  @ApiData(201, RegisteredRepoSchema, 'The registered repository (never its token)')
  @ApiErrors(403, 409, 502)
  register(@Body() body: RegisterRepoDto, @CurrentCaller() caller: Caller) {
    return this.repos.register(body, caller.userId);
  }

  @Get()
  @ApiOperation({ summary: 'Registered repositories, newest first' })
  @ApiData(200, page(RegisteredRepoSchema), 'A page of repositories')
  @ApiErrors(403)
  list(@Query() query: PageQueryDto) {
    return this.repos.list(query);
  }

  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Unregister a repository; the GitHub tools stop reaching it at once' })
  @ApiData(200, DeletedSchema, 'Unregistered')
  @ApiErrors(403, 404)
  remove(@Param('id', new ParseUUIDPipe({ version: '4' })) id: string) {
    return this.repos.remove(id);
  }
}
