import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { effectiveRole, isProjectAllowed } from '../../common/access/access-rules.js';
import { type Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { toPage, type Page, type PageQuery } from '../../common/pagination/cursor-page.js';
import { isUuid } from '../../common/validation/uuid.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import { AuditService } from '../audit/audit.service.js';
import {
  ProjectSessionTokensService,
  type MintedProjectToken,
  type ProjectSessionTokenView,
} from '../auth/project-session-tokens.service.js';
import { UsersService } from '../auth/users.service.js';
import type { AddMemberDto } from './dto/add-member.dto.js';
import type { CreateProjectDto } from './dto/create-project.dto.js';
import type { CreateSessionTokenDto } from './dto/create-session-token.dto.js';
import type { UpdateProjectDto } from './dto/update-project.dto.js';
import { roleAtLeast, type ProjectRole } from './project-role.js';
import { ProjectsRepository, type ProjectRecord } from './projects.repository.js';

export interface ProjectView {
  id: string;
  name: string;
  description: string;
  ownerId: string;
  role: ProjectRole;
  createdAt: string;
  updatedAt: string;
  documentCount: number;
  memberCount: number;
}

export interface ProjectMemberView {
  projectId: string;
  userId: string;
  role: ProjectRole;
  createdAt: string;
  updatedAt: string;
}

/**
 * Projects and membership. `requireRole` is the one membership check every module uses: a project the
 * actor is not a member of (or is pinned away from) does not exist for it. No SQL here: ProjectsRepository.
 */
@Injectable()
export class ProjectsService {
  constructor(
    @InjectDb() private readonly db: Db,
    private readonly projects: ProjectsRepository,
    private readonly users: UsersService,
    private readonly sessionTokens: ProjectSessionTokensService,
    private readonly audit: AuditService,
  ) {}

  /**
   * The actor's effective role in the project (capped by a project token's role), or
   * not_found (not a member, pinned elsewhere, no such project) / forbidden (role below `minimumRole`).
   */
  async requireRole(
    actor: Actor,
    projectId: string,
    minimumRole: ProjectRole,
    executor?: DbExecutor,
  ): Promise<ProjectRole> {
    const role = await this.roleOf(actor, projectId, executor);
    if (role === null) throw AppException.notFound('Project');
    if (!roleAtLeast(role, minimumRole)) {
      throw AppException.forbidden(
        `This needs the ${minimumRole} role in the project; you are ${role === 'viewer' ? 'a viewer' : `an ${role}`}`,
      );
    }
    return role;
  }

  /**
   * The actor's effective role, or null when the project does not exist for the actor. Never throws for
   * access. `executor`: read inside that transaction (after its locks).
   */
  async roleOf(actor: Actor, projectId: string, executor?: DbExecutor): Promise<ProjectRole | null> {
    if (!isUuid(projectId) || !isProjectAllowed(actor, projectId)) return null;
    const role = await this.projects.memberRole(projectId, actor.userId, executor);
    return role === null ? null : effectiveRole(actor, role);
  }

  /** Another user's member role in a project (no cap applies: it is not the caller's), or null when not a member. */
  async memberRoleOf(projectId: string, userId: string): Promise<ProjectRole | null> {
    if (!isUuid(projectId) || !isUuid(userId)) return null;
    return this.projects.memberRole(projectId, userId);
  }

  async create(actor: Actor, input: CreateProjectDto): Promise<ProjectView> {
    const id = randomUUID();
    const project = { id, name: input.name, description: input.description ?? '', ownerId: actor.userId };
    await this.db.transaction().execute(async (trx) => {
      await this.projects.insertWithOwner(project, trx);
      await this.audit.recordChange(trx, {
        action: 'project.create',
        target: { type: 'project', id },
        details: { name: project.name },
        onBehalfOf: actor.userId,
      });
    });
    return this.get(actor, id);
  }

  async list(actor: Actor, query: PageQuery): Promise<Page<ProjectView>> {
    return toPage(await this.projects.pageVisible(actor, query), query.limit, (record) => toView(record, actor));
  }

  async get(actor: Actor, projectId: string): Promise<ProjectView> {
    const record = isUuid(projectId) ? await this.projects.findVisible(actor, projectId) : undefined;
    if (!record) throw AppException.notFound('Project');
    return toView(record, actor);
  }

  async update(actor: Actor, projectId: string, input: UpdateProjectDto): Promise<ProjectView> {
    await this.requireRole(actor, projectId, 'editor');
    await this.db.transaction().execute(async (trx) => {
      await this.projects.update(projectId, { name: input.name, description: input.description }, trx);
      await this.audit.recordChange(trx, {
        action: 'project.update',
        target: { type: 'project', id: projectId },
        details: { changed: Object.keys(input).filter((key) => input[key as keyof UpdateProjectDto] !== undefined) },
        onBehalfOf: actor.userId,
      });
    });
    return this.get(actor, projectId);
  }

  /** Adds a member or changes a member's role (owners only). The project's creator always stays an owner. */
  async setMember(actor: Actor, projectId: string, input: AddMemberDto): Promise<ProjectMemberView> {
    await this.requireRole(actor, projectId, 'owner');
    const user = await this.users.findById(input.userId);
    if (!user) {
      throw AppException.validation('No user has this id', [{ field: 'userId', message: 'no user with this id' }]);
    }
    if ((await this.projects.ownerId(projectId)) === input.userId && input.role !== 'owner') {
      throw new AppException(ErrorCode.StateConflict, "The project's creator keeps the owner role");
    }
    await this.db.transaction().execute(async (trx) => {
      // Membership changes of one project take turns (the project row is their lock), and the caller's
      // owner role is checked again after the lock: two owners demoting each other at the same moment
      // cannot both succeed, as they could not one after the other.
      await this.projects.lockForMembershipChange(projectId, trx);
      await this.requireRole(actor, projectId, 'owner', trx);
      await this.projects.upsertMember(projectId, input.userId, input.role, trx);
      await this.audit.recordChange(trx, {
        action: 'project.member.set',
        target: { type: 'project', id: projectId },
        details: { userId: input.userId, role: input.role },
        onBehalfOf: actor.userId,
      });
    });
    const member = await this.projects.member(projectId, input.userId);
    if (!member) throw AppException.notFound('Project');
    return {
      projectId,
      userId: member.userId,
      role: member.role,
      createdAt: member.createdAt.toISOString(),
      updatedAt: member.updatedAt.toISOString(),
    };
  }

  /** A project session token acting as the caller; owners and editors may mint one. */
  async mintSessionToken(actor: Actor, projectId: string, input: CreateSessionTokenDto): Promise<MintedProjectToken> {
    await this.requireRole(actor, projectId, 'editor');
    return this.db.transaction().execute(async (trx) => {
      const minted = await this.sessionTokens.mint(
        {
          projectId,
          createdBy: actor.userId,
          name: input.name,
          role: input.role,
          expiresInMinutes: input.expiresInMinutes,
        },
        trx,
      );
      await this.audit.recordChange(trx, {
        action: 'project.token.create',
        target: { type: 'project', id: projectId },
        details: { tokenId: minted.id, name: input.name, role: input.role, expiresAt: minted.expiresAt },
        onBehalfOf: actor.userId,
      });
      return minted;
    });
  }

  /** The project's live session tokens, without secrets (owners and editors). */
  async listSessionTokens(actor: Actor, projectId: string, query: PageQuery): Promise<Page<ProjectSessionTokenView>> {
    await this.requireRole(actor, projectId, 'editor');
    return this.sessionTokens.list(projectId, query);
  }

  /** Revokes one of the project's tokens (owners and editors); another project's or an unknown id is not found. */
  async revokeSessionToken(actor: Actor, projectId: string, tokenId: string): Promise<{ id: string; revoked: true }> {
    await this.requireRole(actor, projectId, 'editor');
    const revoked = await this.db.transaction().execute(async (trx) => {
      const token = await this.sessionTokens.revoke(projectId, tokenId, trx);
      if (token) {
        await this.audit.recordChange(trx, {
          action: 'project.token.revoke',
          target: { type: 'project', id: projectId },
          details: { tokenId: token.id, name: token.name, role: token.role },
          onBehalfOf: actor.userId,
        });
      }
      return token;
    });
    if (!revoked) throw AppException.notFound('Session token');
    return { id: revoked.id, revoked: true };
  }
}

function toView(record: ProjectRecord, actor: Actor): ProjectView {
  return {
    id: record.id,
    name: record.name,
    description: record.description,
    ownerId: record.ownerId,
    role: effectiveRole(actor, record.memberRole),
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
    documentCount: record.documentCount,
    memberCount: record.memberCount,
  };
}
