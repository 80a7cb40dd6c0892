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
      .selectFrom('projectMembers')
      .select('role')
      .where('projectId', '=', projectId)
      .where('userId', '=', userId)
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
      .values({ id: project.id, name: project.name, description: project.description, ownerId: project.ownerId })
      .execute();
    await trx
      .insertInto('projectMembers')
      .values({ projectId: project.id, userId: project.ownerId, role: 'owner' })
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
        updatedAt: sql<Date>`now()`,
      })
      .where('id', '=', projectId)
      .execute();
  }

  async ownerId(projectId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('projects').select('ownerId').where('id', '=', projectId).executeTakeFirst();
    return row?.ownerId;
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
      .insertInto('projectMembers')
      .values({ projectId, userId, role })
      .onConflict((conflict) =>
        conflict.columns(['projectId', 'userId']).doUpdateSet({ role, updatedAt: sql<Date>`now()` }),
      )
      .execute();
  }

  async member(projectId: string, userId: string): Promise<ProjectMemberRecord | undefined> {
    const row = await this.db
      .selectFrom('projectMembers')
      .selectAll()
      .where('projectId', '=', projectId)
      .where('userId', '=', userId)
      .executeTakeFirst();
    return (
      row && {
        projectId: row.projectId,
        userId: row.userId,
        role: toRole(row.role),
        createdAt: row.createdAt,
        updatedAt: row.updatedAt,
      }
    );
  }

  /** Projects the actor may see, with its member role and the counts: documents only those it may see (the access rules). */
  private selectVisible(actor: Actor) {
    return this.db
      .selectFrom('projects as p')
      .select(['p.id', 'p.name', 'p.description', 'p.ownerId', 'p.createdAt', 'p.updatedAt'])
      .select((eb) => [
        eb
          .selectFrom('projectMembers as m')
          .select('m.role')
          .whereRef('m.projectId', '=', 'p.id')
          .where('m.userId', '=', actor.userId)
          .as('role'),
        eb
          .selectFrom('projectMembers as pm')
          .select(sql<string>`count(*)`.as('n'))
          .whereRef('pm.projectId', '=', 'p.id')
          .as('memberCount'),
        eb
          .selectFrom('documents as d')
          .select(sql<string>`count(*)`.as('n'))
          .whereRef('d.projectId', '=', 'p.id')
          .where(visibleDocument(actor, 'd'))
          .as('documentCount'),
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
  ownerId: string;
  createdAt: Date;
  updatedAt: Date;
  role: string | null;
  memberCount: string | null;
  documentCount: string | null;
}): ProjectRecord {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    ownerId: row.ownerId,
    // Never null: selectVisible keeps only projects the actor is a member of.
    memberRole: toRole(row.role ?? ''),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    documentCount: Number(row.documentCount ?? 0),
    memberCount: Number(row.memberCount ?? 0),
  };
}
