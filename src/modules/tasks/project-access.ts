import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { isProjectAllowed } from '../../common/access/access-rules.js';
import { type Actor } from '../../common/auth/actor.js';
import { ProjectsService } from '../projects/projects.service.js';

/**
 * The tasks module's one question about projects: "may this actor put a task into this project?"
 * (API.md: the owner must be a member). Answered by ProjectsService.roleOf, looked up at start-up
 * without importing the projects module, so tasks do not depend on how projects are wired. If no
 * ProjectsService is registered, no project exists for anyone and the answer is always no.
 */
@Injectable()
export class ProjectAccess implements OnApplicationBootstrap {
  private readonly logger = new Logger('ProjectAccess');
  private projects: Pick<ProjectsService, 'roleOf'> | null = null;

  constructor(private readonly moduleRef: ModuleRef) {}

  onApplicationBootstrap(): void {
    try {
      this.projects = this.moduleRef.get(ProjectsService, { strict: false });
    } catch {
      this.logger.warn({ msg: 'ProjectsService is not registered; tasks reject every project_id with not_found' });
    }
  }

  async isMember(actor: Actor, projectId: string): Promise<boolean> {
    if (!isProjectAllowed(actor, projectId) || !this.projects) return false;
    return (await this.projects.roleOf(actor, projectId)) !== null;
  }
}
