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
      .insertInto('project_session_tokens')
      .values({
        id: token.id,
        project_id: token.projectId,
        created_by: token.createdBy,
        name: token.name,
        role: token.role,
        token_hash: token.tokenHash,
        prefix: token.prefix,
        expires_at: token.expiresAt,
      })
      .execute();
  }

  /** The unexpired, unrevoked token with this HMAC, read on every call so a revocation holds at once on every instance. */
  async findLiveByHash(tokenHash: string): Promise<(ProjectSessionToken & { lastUsedAt: Date | null }) | undefined> {
    const row = await this.db
      .selectFrom('project_session_tokens')
      .select(['id', 'project_id', 'created_by', 'name', 'role', 'expires_at', 'last_used_at'])
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', sql<Date>`now()`)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return (
      row && {
        id: row.id,
        projectId: row.project_id,
        createdBy: row.created_by,
        name: row.name,
        // The column holds only the roles the service writes.
        role: row.role as ProjectTokenRole,
        expiresAt: row.expires_at,
        lastUsedAt: row.last_used_at,
      }
    );
  }

  /** Records a use; callers limit how often (a write per call would serialise a busy token's calls on its row). */
  async touch(id: string): Promise<void> {
    await this.db
      .updateTable('project_session_tokens')
      .set({ last_used_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** The project's live tokens (unexpired, unrevoked), newest first, `limit + 1` rows. */
  async pageLive(projectId: string, page: PageQuery): Promise<ProjectSessionTokenRecord[]> {
    const query = this.db
      .selectFrom('project_session_tokens as t')
      .select([
        't.id',
        't.project_id',
        't.created_by',
        't.name',
        't.role',
        't.prefix',
        't.created_at',
        't.expires_at',
        't.last_used_at',
      ])
      .where('t.project_id', '=', projectId)
      .where('t.expires_at', '>', sql<Date>`now()`)
      .where('t.revoked_at', 'is', null);
    const rows = await pageOrder(query, 't', page).execute();
    return rows.map((row) => ({
      id: row.id,
      projectId: row.project_id,
      createdBy: row.created_by,
      name: row.name,
      role: row.role as ProjectTokenRole,
      prefix: row.prefix,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      lastUsedAt: row.last_used_at,
    }));
  }

  /** Revokes a live token of this project; false when there is none (unknown, another project's, expired or revoked). */
  async revoke(
    projectId: string,
    tokenId: string,
    executor: DbExecutor = this.db,
  ): Promise<{ id: string; name: string; role: string } | undefined> {
    return executor
      .updateTable('project_session_tokens')
      .set({ revoked_at: sql`now()` })
      .where('id', '=', tokenId)
      .where('project_id', '=', projectId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', sql<Date>`now()`)
      .returning(['id', 'name', 'role'])
      .executeTakeFirst();
  }
}
