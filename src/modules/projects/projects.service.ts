import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { actorSqlValues, insidePinsSql, isProjectAllowed, visibleDocumentSql } from '../../common/access/access-rules.js';
import { type Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { cursorCondition, decodeCursor, toPage, type Page } from '../../common/pagination/cursor-page.js';
import { ProjectSessionTokensService, type MintedProjectToken } from '../auth/project-session-tokens.service.js';
import { UsersService } from '../auth/users.service.js';
import type { AddMemberDto } from './dto/add-member.dto.js';
import type { CreateProjectDto } from './dto/create-project.dto.js';
import type { CreateSessionTokenDto } from './dto/create-session-token.dto.js';
import type { UpdateProjectDto } from './dto/update-project.dto.js';
import { ProjectMember } from './project-member.entity.js';
import { cappedRole, roleAtLeast, type ProjectRole } from './project-role.js';
import { Project } from './project.entity.js';
import { isUuid } from '../../common/validation/uuid.js';

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

interface ProjectRow {
  id: string;
  name: string;
  description: string;
  owner_id: string;
  role: ProjectRole;
  created_at: Date;
  updated_at: Date;
  document_count: string | number;
  member_count: string | number;
}

/**
 * Projects and membership. `requireRole` is the one membership check every module uses: a project the
 * actor is not a member of (or is pinned away from) does not exist for it.
 */
@Injectable()
export class ProjectsService {
  constructor(
    @InjectRepository(Project) private readonly projects: Repository<Project>,
    @InjectRepository(ProjectMember) private readonly members: Repository<ProjectMember>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly users: UsersService,
    private readonly sessionTokens: ProjectSessionTokensService,
  ) {}

  /**
   * The actor's effective role in the project (capped by a project token's role), or
   * not_found (not a member, pinned elsewhere, no such project) / forbidden (role below `minimumRole`).
   */
  async requireRole(actor: Actor, projectId: string, minimumRole: ProjectRole, manager?: EntityManager): Promise<ProjectRole> {
    const role = await this.roleOf(actor, projectId, manager);
    if (role === null) throw AppException.notFound('Project');
    if (!roleAtLeast(role, minimumRole)) {
      throw AppException.forbidden(`This needs the ${minimumRole} role in the project; you are ${role === 'viewer' ? 'a viewer' : `an ${role}`}`);
    }
    return role;
  }

  /**
   * The actor's effective role, or null when the project does not exist for the actor. Never throws for
   * access. `manager`: read inside that transaction (after its locks).
   */
  async roleOf(actor: Actor, projectId: string, manager?: EntityManager): Promise<ProjectRole | null> {
    if (!isUuid(projectId) || !isProjectAllowed(actor, projectId)) return null;
    const members = manager ? manager.getRepository(ProjectMember) : this.members;
    const member = await members.findOneBy({ projectId, userId: actor.userId });
    return member ? cappedRole(member.role, actor.projectRoleCap) : null;
  }

  async create(actor: Actor, input: CreateProjectDto): Promise<ProjectView> {
    const id = randomUUID();
    await this.dataSource.transaction(async (manager) => {
      await manager.getRepository(Project).insert({ id, name: input.name, description: input.description ?? '', ownerId: actor.userId });
      await manager.getRepository(ProjectMember).insert({ projectId: id, userId: actor.userId, role: 'owner' });
    });
    return this.get(actor, id);
  }

  async list(actor: Actor, query: { limit: number; cursor?: string }): Promise<Page<ProjectView>> {
    const cursor = cursorCondition('p', decodeCursor(query.cursor));
    const [userId, pins] = actorSqlValues(actor);
    const [sql, values] = this.dataSource.driver.escapeQueryWithParameters(
      `${this.selectProjects()}
       WHERE ${insidePinsSql('p.id', ':pins')} AND ${cursor.sql}
       ORDER BY p.created_at DESC, p.id DESC
       LIMIT ${query.limit + 1}`,
      { userId, pins, ...cursor.params },
    );
    const rows = (await this.dataSource.query(sql, values)) as ProjectRow[];
    return toPage(
      rows.map((row) => ({ ...row, createdAt: row.created_at })),
      query.limit,
      (row) => this.toView(row, actor),
    );
  }

  async get(actor: Actor, projectId: string): Promise<ProjectView> {
    if ((await this.roleOf(actor, projectId)) === null) throw AppException.notFound('Project');
    const [userId, pins] = actorSqlValues(actor);
    const [sql, values] = this.dataSource.driver.escapeQueryWithParameters(`${this.selectProjects()} WHERE p.id = :projectId`, { userId, pins, projectId });
    const rows = (await this.dataSource.query(sql, values)) as ProjectRow[];
    if (rows.length === 0) throw AppException.notFound('Project');
    return this.toView(rows[0], actor);
  }

  async update(actor: Actor, projectId: string, input: UpdateProjectDto): Promise<ProjectView> {
    await this.requireRole(actor, projectId, 'editor');
    const changes: Partial<Project> = {};
    if (input.name !== undefined) changes.name = input.name;
    if (input.description !== undefined) changes.description = input.description;
    if (Object.keys(changes).length > 0) {
      await this.projects.update({ id: projectId }, { ...changes, updatedAt: new Date() });
    }
    return this.get(actor, projectId);
  }

  /** Adds a member or changes a member's role (owners only). The project's creator always stays an owner. */
  async setMember(actor: Actor, projectId: string, input: AddMemberDto): Promise<ProjectMemberView> {
    await this.requireRole(actor, projectId, 'owner');
    const user = await this.users.findById(input.userId);
    if (!user) {
      throw AppException.validation('No user has this id', [{ field: 'userId', message: 'no user with this id' }]);
    }
    const project = await this.projects.findOneByOrFail({ id: projectId });
    if (project.ownerId === input.userId && input.role !== 'owner') {
      throw new AppException(ErrorCode.StateConflict, "The project's creator keeps the owner role");
    }
    await this.dataSource.transaction(async (manager) => {
      // Membership changes of one project take turns (the project row is their lock), and the caller's
      // owner role is checked again after the lock: two owners demoting each other at the same moment
      // cannot both succeed, as they could not one after the other.
      await manager.query(`SELECT 1 FROM projects WHERE id = $1 FOR UPDATE`, [projectId]);
      await this.requireRole(actor, projectId, 'owner', manager);
      await manager.query(
        `INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (project_id, user_id) DO UPDATE SET role = EXCLUDED.role, updated_at = now()`,
        [projectId, input.userId, input.role],
      );
    });
    const member = await this.members.findOneByOrFail({ projectId, userId: input.userId });
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
    return this.sessionTokens.mint({
      projectId,
      createdBy: actor.userId,
      name: input.name,
      role: input.role,
      expiresInMinutes: input.expiresInMinutes,
    });
  }

  /** Counts only documents the caller may see (the access rules): a private document of another member stays invisible. */
  private selectProjects(): string {
    return `SELECT p.id, p.name, p.description, p.owner_id, p.created_at, p.updated_at, m.role,
              (SELECT count(*) FROM project_members pm WHERE pm.project_id = p.id) AS member_count,
              (SELECT count(*) FROM documents d WHERE d.project_id = p.id AND ${visibleDocumentSql('d', { user: ':userId', pins: ':pins' })}) AS document_count
            FROM projects p
            JOIN project_members m ON m.project_id = p.id AND m.user_id = :userId`;
  }

  private toView(row: ProjectRow, actor: Actor): ProjectView {
    return {
      id: row.id,
      name: row.name,
      description: row.description,
      ownerId: row.owner_id,
      role: cappedRole(row.role, actor.projectRoleCap),
      createdAt: new Date(row.created_at).toISOString(),
      updatedAt: new Date(row.updated_at).toISOString(),
      documentCount: Number(row.document_count),
      memberCount: Number(row.member_count),
    };
  }
}

