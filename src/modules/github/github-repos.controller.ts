import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { PageQueryDto } from '../../common/pagination/page-query.dto.js';
import { CurrentPrincipal } from '../auth/guards/current-principal.decorator.js';
import type { Principal } from '../auth/principal.js';
import { RegisterRepoDto } from './dto/register-repo.dto.js';
import { GithubReposService } from './github-repos.service.js';
import { AdminOnlyGuard } from './guards/admin-only.guard.js';

@ApiTags('admin: github')
@ApiBearerAuth()
@UseGuards(AdminOnlyGuard)
@Controller('api/admin/github/repos')
export class GithubReposController {
  constructor(private readonly repos: GithubReposService) {}

  @Post()
  @ApiOperation({ summary: 'Register a shared repository (checked with GitHub first; the token is stored encrypted)' })
  register(@Body() body: RegisterRepoDto, @CurrentPrincipal() principal: Principal) {
    return this.repos.register(body, principal.userId);
  }

  @Get()
  @ApiOperation({ summary: 'Registered repositories, newest first' })
  list(@Query() query: PageQueryDto) {
    return this.repos.list(query);
  }

  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Unregister a repository; the GitHub tools stop reaching it at once' })
  remove(@Param('id', new ParseUUIDPipe({ version: '4' })) id: string) {
    return this.repos.remove(id);
  }
}
