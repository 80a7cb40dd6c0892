import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-custom';
import { bearerToken } from '../guards/backend-auth.guard.js';
import type { ProjectTokenPrincipal } from '../principal.js';
import { PROJECT_TOKEN_PREFIX, ProjectSessionTokensService } from '../project-session-tokens.service.js';

/** `Authorization: Bearer atp_…`: a project session token. Which routes accept it is the guard's decision. */
@Injectable()
export class ProjectTokenStrategy extends PassportStrategy(Strategy, 'project-token') {
  constructor(private readonly tokens: ProjectSessionTokensService) {
    super();
  }

  async validate(request: Request): Promise<ProjectTokenPrincipal | false> {
    const token = bearerToken(request);
    if (!token?.startsWith(PROJECT_TOKEN_PREFIX)) return false;
    const row = await this.tokens.verify(token);
    if (!row) return false;
    return {
      kind: 'project-token',
      userId: row.createdBy,
      role: 'member',
      projectId: row.projectId,
      tokenId: row.id,
      tokenRole: row.role,
      trackerId: `project-token:${row.id}`,
    };
  }
}
