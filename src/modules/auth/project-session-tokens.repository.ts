import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { pageOrder, type PageQuery } from '../../common/pagination/cursor-page.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import type { ProjectTokenRole } from './principal.js';

/** A live project session token (`atp_…`); the token itself is never stored, only its HMAC, which stays in this file. */
export interface ProjectSessionToken {
  id: string;
  projectId: string;
  /** The user who minted it; the token acts as this user. */
  createdBy: string;
  name: string;
  role: ProjectTokenRole;
  expiresAt: Date;
}

/** What the token list shows: never the hash. */
export interface ProjectSessionTokenRecord extends ProjectSessionToken {
  prefix: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** The `project_session_tokens` table. */
@Injectable()
export class ProjectSessionTokensRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async insert(
    token: ProjectSessionToken & { tokenHash: string; prefix: string },
    executor: DbExecutor = this.db,
  ): Promise<void> {
    await executor
      .insertInto('projectSessionTokens')
      .values({
        id: token.id,
        projectId: token.projectId,
        createdBy: token.createdBy,
        name: token.name,
        role: token.role,
        tokenHash: token.tokenHash,
        prefix: token.prefix,
        expiresAt: token.expiresAt,
      })
      .execute();
  }

  /** The unexpired, unrevoked token with this HMAC, read on every call so a revocation holds at once on every instance. */
  async findLiveByHash(tokenHash: string): Promise<(ProjectSessionToken & { lastUsedAt: Date | null }) | undefined> {
    const row = await this.db
      .selectFrom('projectSessionTokens')
      .select(['id', 'projectId', 'createdBy', 'name', 'role', 'expiresAt', 'lastUsedAt'])
      .where('tokenHash', '=', tokenHash)
      .where('expiresAt', '>', sql<Date>`now()`)
      .where('revokedAt', 'is', null)
      .executeTakeFirst();
    return (
      row && {
        id: row.id,
        projectId: row.projectId,
        createdBy: row.createdBy,
        name: row.name,
        // The column holds only the roles the service writes.
        role: row.role as ProjectTokenRole,
        expiresAt: row.expiresAt,
        lastUsedAt: row.lastUsedAt,
      }
    );
  }

  /** Records a use; callers limit how often (a write per call would serialise a busy token's calls on its row). */
  async touch(id: string): Promise<void> {
    await this.db
      .updateTable('projectSessionTokens')
      .set({ lastUsedAt: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** The project's live tokens (unexpired, unrevoked), newest first, `limit + 1` rows. */
  async pageLive(projectId: string, page: PageQuery): Promise<ProjectSessionTokenRecord[]> {
    const query = this.db
      .selectFrom('projectSessionTokens as t')
      .select([
        't.id',
        't.projectId',
        't.createdBy',
        't.name',
        't.role',
        't.prefix',
        't.createdAt',
        't.expiresAt',
        't.lastUsedAt',
      ])
      .where('t.projectId', '=', projectId)
      .where('t.expiresAt', '>', sql<Date>`now()`)
      .where('t.revokedAt', 'is', null);
    const rows = await pageOrder(query, 't', page).execute();
    return rows.map((row) => ({
      id: row.id,
      projectId: row.projectId,
      createdBy: row.createdBy,
      name: row.name,
      role: row.role as ProjectTokenRole,
      prefix: row.prefix,
      createdAt: row.createdAt,
      expiresAt: row.expiresAt,
      lastUsedAt: row.lastUsedAt,
    }));
  }

  /** Revokes a live token of this project; false when there is none (unknown, another project's, expired or revoked). */
  async revoke(
    projectId: string,
    tokenId: string,
    executor: DbExecutor = this.db,
  ): Promise<{ id: string; name: string; role: string } | undefined> {
    return executor
      .updateTable('projectSessionTokens')
      .set({ revokedAt: sql`now()` })
      .where('id', '=', tokenId)
      .where('projectId', '=', projectId)
      .where('revokedAt', 'is', null)
      .where('expiresAt', '>', sql<Date>`now()`)
      .returning(['id', 'name', 'role'])
      .executeTakeFirst();
  }
}
