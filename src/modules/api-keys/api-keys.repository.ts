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
      .selectFrom('apiKeys')
      .select([...AUTHORISATION_COLUMNS, 'keyHash'])
      .where('keyHash', '=', Buffer.alloc(0))
      .compile();
  }

  async insert(key: NewApiKey, executor: DbExecutor = this.db): Promise<void> {
    await executor
      .insertInto('apiKeys')
      .values({
        id: key.id,
        userId: key.userId,
        name: key.name,
        scopes: key.scopes,
        prefix: key.prefix,
        keyHash: key.keyHash,
        projectIds: key.projectIds,
        repos: key.repos,
        confirmWrites: key.confirmWrites,
        tools: key.tools,
        readOnly: key.readOnly,
        expiresAt: key.expiresAt,
        allowedIps: key.allowedIps,
        createdAt: key.createdAt,
      })
      .execute();
  }

  async findOwned(userId: string, id: string): Promise<ApiKey | undefined> {
    const row = await this.db
      .selectFrom('apiKeys')
      .select([...TOOL_CREDENTIAL_COLUMNS, 'name', 'prefix', 'rolledTo'])
      .where('id', '=', id)
      .where('userId', '=', userId)
      .executeTakeFirst();
    return row && { ...toToolCredential(row), name: row.name, prefix: row.prefix, rolledTo: row.rolledTo };
  }

  /** Everyone's usable keys (neither revoked nor expired), newest first: a page of the admin's scan. */
  async pageUsable(page: { limit: number; cursor?: string }): Promise<(ApiKey & { userEmail: string })[]> {
    const rows = await pageOrder(
      this.db
        .selectFrom('apiKeys as k')
        .innerJoin('users as u', 'u.id', 'k.userId')
        .select([
          ...TOOL_CREDENTIAL_COLUMNS.map((column) => `k.${column}` as const),
          'k.name',
          'k.prefix',
          'k.rolledTo',
          'u.email',
        ])
        .where((eb) => eb.or([eb('k.revokedAt', 'is', null), eb('k.revokedAt', '>', sql<Date>`now()`)]))
        .where((eb) => eb.or([eb('k.expiresAt', 'is', null), eb('k.expiresAt', '>', sql<Date>`now()`)])),
      'k',
      page,
    ).execute();
    return rows.map((row) => ({
      ...toToolCredential(row),
      name: row.name,
      prefix: row.prefix,
      rolledTo: row.rolledTo,
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
      .updateTable('apiKeys')
      .set({ rolledTo: successorId, revokedAt: retiresAt })
      .where('id', '=', id)
      .where('userId', '=', userId)
      .where('revokedAt', 'is', null)
      .where('rolledTo', 'is', null)
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
    return row && { authorisation: toAuthorisation(row), keyHash: row.keyHash };
  }
}
