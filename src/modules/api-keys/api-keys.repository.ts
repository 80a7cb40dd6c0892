import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { pageOrder } from '../../common/pagination/cursor-page.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import {
  AUTHORISATION_COLUMNS,
  TOOL_CREDENTIAL_COLUMNS,
  toAuthorisation,
  toToolCredential,
  type ToolCredential,
  type ToolCredentialAccess,
  type ToolCredentialAuthorisation,
} from './tool-credentials.repository.js';

/** A personal API key as stored (never the key itself: only its HMAC, which stays in this file). */
export interface ApiKey extends ToolCredential {
  name: string;
  /** First 8 chars after `atr_`, for display only. */
  prefix: string;
  /** The key that replaced it by a roll (its revocation time is then the overlap's end). */
  rolledTo: string | null;
}

export interface NewApiKey extends ToolCredentialAccess {
  allowedIps: string[] | null;
  id: string;
  userId: string;
  name: string;
  prefix: string;
  keyHash: Buffer;
  expiresAt: Date | null;
  createdAt: Date;
}

/** The `api_keys` table. What it shares with OAuth grants (counts, usage, revocation, pages) is ToolCredentialsRepository's. */
@Injectable()
export class ApiKeysRepository {
  /** The hot-path lookup, built and compiled once: each call only swaps in the hash. */
  private readonly byHash;

  constructor(@InjectDb() private readonly db: Db) {
    this.byHash = this.db
      .selectFrom('api_keys')
      .select([...AUTHORISATION_COLUMNS, 'key_hash'])
      .where('key_hash', '=', Buffer.alloc(0))
      .compile();
  }

  async insert(key: NewApiKey, executor: DbExecutor = this.db): Promise<void> {
    await executor
      .insertInto('api_keys')
      .values({
        id: key.id,
        user_id: key.userId,
        name: key.name,
        scopes: key.scopes,
        prefix: key.prefix,
        key_hash: key.keyHash,
        project_ids: key.projectIds,
        repos: key.repos,
        confirm_writes: key.confirmWrites,
        tools: key.tools,
        read_only: key.readOnly,
        expires_at: key.expiresAt,
        allowed_ips: key.allowedIps,
        created_at: key.createdAt,
      })
      .execute();
  }

  async findOwned(userId: string, id: string): Promise<ApiKey | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .select([...TOOL_CREDENTIAL_COLUMNS, 'name', 'prefix', 'rolled_to'])
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row && { ...toToolCredential(row), name: row.name, prefix: row.prefix, rolledTo: row.rolled_to };
  }

  /** Everyone's usable keys (neither revoked nor expired), newest first: a page of the admin's scan. */
  async pageUsable(page: { limit: number; cursor?: string }): Promise<(ApiKey & { userEmail: string })[]> {
    const rows = await pageOrder(
      this.db
        .selectFrom('api_keys as k')
        .innerJoin('users as u', 'u.id', 'k.user_id')
        .select([
          ...TOOL_CREDENTIAL_COLUMNS.map((column) => `k.${column}` as const),
          'k.name',
          'k.prefix',
          'k.rolled_to',
          'u.email',
        ])
        .where((eb) => eb.or([eb('k.revoked_at', 'is', null), eb('k.revoked_at', '>', sql<Date>`now()`)]))
        .where((eb) => eb.or([eb('k.expires_at', 'is', null), eb('k.expires_at', '>', sql<Date>`now()`)])),
      'k',
      page,
    ).execute();
    return rows.map((row) => ({
      ...toToolCredential(row),
      name: row.name,
      prefix: row.prefix,
      rolledTo: row.rolled_to,
      userEmail: row.email,
    }));
  }

  /**
   * Marks the user's key as rolled to its successor, working until `retiresAt`; false when it is not the user's or
   * was revoked or rolled meanwhile.
   */
  async markRolled(
    userId: string,
    id: string,
    successorId: string,
    retiresAt: Date,
    executor: DbExecutor = this.db,
  ): Promise<boolean> {
    const row = await executor
      .updateTable('api_keys')
      .set({ rolled_to: successorId, revoked_at: retiresAt })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .where('rolled_to', 'is', null)
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * The hot path of every Area A call with a key: one indexed lookup by HMAC, returning the stored hash
   * for the caller's constant-time comparison. Constant SQL text, compiled once (no query building per call).
   */
  async findByHash(
    keyHash: Buffer,
  ): Promise<{ authorisation: ToolCredentialAuthorisation; keyHash: Buffer } | undefined> {
    const query: typeof this.byHash = { ...this.byHash, parameters: [keyHash] };
    const [row] = (await this.db.executeQuery(query)).rows;
    return row && { authorisation: toAuthorisation(row), keyHash: row.key_hash };
  }
}
