import { actorFor, CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Body, Delete, Get, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CarriesSecret } from '../../common/http/carries-secret.decorator.js';
import { PageQueryDto } from '../../common/pagination/page-query.dto.js';
import { AllowProjectToken } from '../auth/guards/allow-project-token.decorator.js';
import { AddMemberDto } from './dto/add-member.dto.js';
import { CreateProjectDto } from './dto/create-project.dto.js';
import { CreateSessionTokenDto } from './dto/create-session-token.dto.js';
import { UpdateProjectDto } from './dto/update-project.dto.js';
import { ProjectsService } from './projects.service.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { page } from '../../common/openapi/openapi-schema.js';
import {
  ProjectMemberSchema,
  ProjectSchema,
  ProjectSessionTokenListItemSchema,
  ProjectSessionTokenSchema,
  RevokedSessionTokenSchema,
} from './projects.schemas.js';
import { BackendController } from '../../common/http/backend-controller.js';

const projectId = new ParseUUIDPipe();

@ApiTags('projects')
@BackendController('api/projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  @Get()
  @ApiOperation({ summary: 'Projects the caller is a member of, newest first' })
  @ApiData(200, page(ProjectSchema), 'A page of projects')
  list(@CurrentCaller() caller: Caller, @Query() query: PageQueryDto) {
    return this.projects.list(actorFor(caller), query);
  }

  @Post()
  @ApiOperation({ summary: 'Create a project; the caller becomes its owner' })
  @ApiData(201, ProjectSchema, 'The new project (role owner)')
  create(@CurrentCaller() caller: Caller, @Body() body: CreateProjectDto) {
    return this.projects.create(actorFor(caller), body);
  }

  @Get(':id')
  @AllowProjectToken()
  @ApiOperation({ summary: 'One project with the caller’s role and counts (members only)' })
  @ApiData(200, ProjectSchema, 'The project')
  @ApiErrors(404)
  get(@CurrentCaller() caller: Caller, @Param('id', projectId) id: string) {
    return this.projects.get(actorFor(caller, id), id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Rename or describe a project (owner or editor)' })
  @ApiData(200, ProjectSchema, 'The updated project')
  @ApiErrors(403, 404)
  update(@CurrentCaller() caller: Caller, @Param('id', projectId) id: string, @Body() body: UpdateProjectDto) {
    return this.projects.update(actorFor(caller, id), id, body);
  }

  @Post(':id/members')
  @ApiOperation({ summary: 'Add a member or change a member’s role (owner only)' })
  @ApiData(201, ProjectMemberSchema, 'The membership')
  @ApiErrors(403, 404, 409)
  addMember(@CurrentCaller() caller: Caller, @Param('id', projectId) id: string, @Body() body: AddMemberDto) {
    return this.projects.setMember(actorFor(caller, id), id, body);
  }

  @Post(':id/session-tokens')
  @CarriesSecret()
  @ApiOperation({ summary: 'Mint a project session token (atp_…), shown once (owner or editor)' })
  @ApiData(201, ProjectSessionTokenSchema, 'The token, shown this once (Cache-Control: no-store)')
  @ApiErrors(403, 404)
  mintSessionToken(
    @CurrentCaller() caller: Caller,
    @Param('id', projectId) id: string,
    @Body() body: CreateSessionTokenDto,
  ) {
    return this.projects.mintSessionToken(actorFor(caller, id), id, body);
  }

  @Get(':id/session-tokens')
  @ApiOperation({ summary: 'The project’s live session tokens, newest first, without secrets (owner or editor)' })
  @ApiData(
    200,
    page(ProjectSessionTokenListItemSchema),
    'A page of tokens: id, name, role, display prefix, dates, creator',
  )
  @ApiErrors(403, 404)
  listSessionTokens(@CurrentCaller() caller: Caller, @Param('id', projectId) id: string, @Query() query: PageQueryDto) {
    return this.projects.listSessionTokens(actorFor(caller, id), id, query);
  }

  @Delete(':id/session-tokens/:tokenId')
  @ApiOperation({
    summary:
      'Revoke a project session token at once, on every instance (owner or editor; audited project.token.revoke)',
  })
  @ApiData(200, RevokedSessionTokenSchema, 'The token is revoked: it answers 401 from now on')
  @ApiErrors(403, 404)
  revokeSessionToken(
    @CurrentCaller() caller: Caller,
    @Param('id', projectId) id: string,
    @Param('tokenId', new ParseUUIDPipe()) token: string,
  ) {
    return this.projects.revokeSessionToken(actorFor(caller, id), id, token);
  }
}
