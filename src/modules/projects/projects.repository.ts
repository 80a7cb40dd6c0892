import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { visibleDocument, visibleProject } from '../../common/access/access-rules.js';
import { isProjectRole, type ProjectRole } from '../../common/access/project-roles.js';
import type { Actor } from '../../common/auth/actor.js';
import { pageOrder, type PageQuery } from '../../common/pagination/cursor-page.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';

/** A project as an actor sees it: its member role (before any token cap) and the counts visible to it. */
export interface ProjectRecord {
  id: string;
  name: string;
  description: string;
  ownerId: string;
  memberRole: ProjectRole;
  createdAt: Date;
  updatedAt: Date;
  documentCount: number;
  memberCount: number;
}

export interface ProjectMemberRecord {
  projectId: string;
  userId: string;
  role: ProjectRole;
  createdAt: Date;
  updatedAt: Date;
}

/** Projects and their members (the project_members table is part of the aggregate). */
@Injectable()
export class ProjectsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /** The user's member role in the project, or null when not a member. */
  async memberRole(projectId: string, userId: string, executor: DbExecutor = this.db): Promise<ProjectRole | null> {
    const row = await executor
      .selectFrom('project_members')
      .select('role')
      .where('project_id', '=', projectId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row ? toRole(row.role) : null;
  }

  /** A new project with its creator as owner: run it in the caller's transaction (the two rows go together). */
  async insertWithOwner(
    project: { id: string; name: string; description: string; ownerId: string },
    trx: DbExecutor,
  ): Promise<void> {
    await trx
      .insertInto('projects')
      .values({ id: project.id, name: project.name, description: project.description, owner_id: project.ownerId })
      .execute();
    await trx
      .insertInto('project_members')
      .values({ project_id: project.id, user_id: project.ownerId, role: 'owner' })
      .execute();
  }

  /** One page of the projects the actor may see (newest first; `limit + 1` rows, see pageOrder). */
  async pageVisible(actor: Actor, page: PageQuery): Promise<ProjectRecord[]> {
    const rows = await pageOrder(this.selectVisible(actor), 'p', page).execute();
    return rows.map(toRecord);
  }

  async findVisible(actor: Actor, projectId: string): Promise<ProjectRecord | undefined> {
    const row = await this.selectVisible(actor).where('p.id', '=', projectId).executeTakeFirst();
    return row && toRecord(row);
  }

  async update(
    projectId: string,
    changes: { name?: string; description?: string },
    executor: DbExecutor = this.db,
  ): Promise<void> {
    if (changes.name === undefined && changes.description === undefined) return;
    await executor
      .updateTable('projects')
      .set({
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.description !== undefined && { description: changes.description }),
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', projectId)
      .execute();
  }

  async ownerId(projectId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('projects').select('owner_id').where('id', '=', projectId).executeTakeFirst();
    return row?.owner_id;
  }

  /** Membership changes of one project take turns: the project row is their lock (inside `trx`). */
  async lockForMembershipChange(projectId: string, trx: DbExecutor): Promise<void> {
    await trx.selectFrom('projects').select('id').where('id', '=', projectId).forUpdate().execute();
  }

  async upsertMember(
    projectId: string,
    userId: string,
    role: ProjectRole,
    executor: DbExecutor = this.db,
  ): Promise<void> {
    await executor
      .insertInto('project_members')
      .values({ project_id: projectId, user_id: userId, role })
      .onConflict((conflict) =>
        conflict.columns(['project_id', 'user_id']).doUpdateSet({ role, updated_at: sql<Date>`now()` }),
      )
      .execute();
  }

  async member(projectId: string, userId: string): Promise<ProjectMemberRecord | undefined> {
    const row = await this.db
      .selectFrom('project_members')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return (
      row && {
        projectId: row.project_id,
        userId: row.user_id,
        role: toRole(row.role),
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      }
    );
  }

  /** Projects the actor may see, with its member role and the counts: documents only those it may see (the access rules). */
  private selectVisible(actor: Actor) {
    return this.db
      .selectFrom('projects as p')
      .select(['p.id', 'p.name', 'p.description', 'p.owner_id', 'p.created_at', 'p.updated_at'])
      .select((eb) => [
        eb
          .selectFrom('project_members as m')
          .select('m.role')
          .whereRef('m.project_id', '=', 'p.id')
          .where('m.user_id', '=', actor.userId)
          .as('role'),
        eb
          .selectFrom('project_members as pm')
          .select(sql<string>`count(*)`.as('n'))
          .whereRef('pm.project_id', '=', 'p.id')
          .as('member_count'),
        eb
          .selectFrom('documents as d')
          .select(sql<string>`count(*)`.as('n'))
          .whereRef('d.project_id', '=', 'p.id')
          .where(visibleDocument(actor, 'd'))
          .as('document_count'),
      ])
      .where(visibleProject(actor, 'p'));
  }
}

function toRole(role: string): ProjectRole {
  if (!isProjectRole(role)) throw new Error(`project_members.role holds an unknown role: ${role}`);
  return role;
}

function toRecord(row: {
  id: string;
  name: string;
  description: string;
  owner_id: string;
  created_at: Date;
  updated_at: Date;
  role: string | null;
  member_count: string | null;
  document_count: string | null;
}): ProjectRecord {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    ownerId: row.owner_id,
    // Never null: selectVisible keeps only projects the actor is a member of.
    memberRole: toRole(row.role ?? ''),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    documentCount: Number(row.document_count ?? 0),
    memberCount: Number(row.member_count ?? 0),
  };
}
