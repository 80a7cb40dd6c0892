import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
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

/** The `project_session_tokens` table. */
@Injectable()
export class ProjectSessionTokensRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async insert(token: ProjectSessionToken & { tokenHash: string }, executor: DbExecutor = this.db): Promise<void> {
    await executor
      .insertInto('project_session_tokens')
      .values({
        id: token.id,
        project_id: token.projectId,
        created_by: token.createdBy,
        name: token.name,
        role: token.role,
        token_hash: token.tokenHash,
        expires_at: token.expiresAt,
      })
      .execute();
  }

  /** The unexpired token with this HMAC. */
  async findLiveByHash(tokenHash: string): Promise<ProjectSessionToken | undefined> {
    const row = await this.db
      .selectFrom('project_session_tokens')
      .select(['id', 'project_id', 'created_by', 'name', 'role', 'expires_at'])
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', sql<Date>`now()`)
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
      }
    );
  }
}
