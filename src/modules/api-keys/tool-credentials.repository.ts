import { Injectable } from '@nestjs/common';
import { sql, type CompiledQuery, type Selectable } from 'kysely';
import { decodeCursor, toPage, type Page } from '../../common/pagination/cursor-page.js';
import type { ApiKeys, DB } from '../../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import { CallCountDb } from '../../database/call-count-db.js';
import type { ToolCredentialKind } from './tool-caller.js';

/**
 * What the user allowed a credential (or a pending OAuth code) to do: scopes, pins, write confirmation, the
 * narrowing within the scopes (a tools allowlist, read-only tools only) and the client addresses.
 */
export interface ToolCredentialAccess {
  scopes: string[];
  projectIds: string[] | null;
  repos: string[] | null;
  confirmWrites: boolean;
  /** Only these tool names (within the scopes); null: every tool of the scopes. */
  tools: string[] | null;
  /** Only tools marked `readOnlyHint: true`, whatever the scopes. */
  readOnly: boolean;
  /** Client address ranges (CIDR) it may be used from; null: anywhere the admin policy allows. */
  allowedIps: string[] | null;
}

/**
 * What an API key and an OAuth grant have in common at authentication: a user's authorisation of Area A
 * with scopes and pins, revocable and expiring. Each kind adds its own fields (a key's name and prefix, a
 * grant's client).
 */
export interface ToolCredentialAuthorisation extends ToolCredentialAccess {
  id: string;
  userId: string;
  expiresAt: Date | null;
  /** When it stops working; in the future for a rolled API key still in its overlap. */
  revokedAt: Date | null;
}

/** A credential as listed on the account page: its authorisation, when it was made and how much it is used. */
export interface ToolCredential extends ToolCredentialAuthorisation {
  createdAt: Date;
  lastUsedAt: Date | null;
  callCount: number;
}

/** One Area A call in a credential's usage log. */
export interface ToolCredentialUsage {
  credential: ToolCredentialKind;
  /** The API key's or the OAuth grant's id. */
  keyId: string;
  at: Date;
  /** Tool name (or `tools/list`); never argument values. */
  tool: string | null;
  status: number;
  durationMs: number;
  /** The MCP client that made the call, as it named itself (null off the MCP door, or when it did not). */
  clientName: string | null;
  clientVersion: string | null;
}

export type ToolCredentialUsageView = Pick<
  ToolCredentialUsage,
  'at' | 'tool' | 'status' | 'durationMs' | 'clientName' | 'clientVersion'
>;

/**
 * Where each kind lives. The credential tables share every column of {@link ToolCredential} with the same
 * types (`api_keys` stands for both in the typed column list below); the usage tables differ only in the
 * name of the id column. Identifiers come from here, never from input.
 */
const TABLES = {
  'api-key': { credentials: 'apiKeys', usage: 'apiKeyUsage', usageId: 'apiKeyId' },
  'oauth-grant': { credentials: 'oauthGrants', usage: 'oauthGrantUsage', usageId: 'grantId' },
} as const satisfies Record<ToolCredentialKind, { credentials: keyof DB; usage: keyof DB; usageId: string }>;

type CredentialTable<K extends ToolCredentialKind> = (typeof TABLES)[K]['credentials'];

/** The columns behind {@link ToolCredentialAuthorisation}, selectable from either credential table. */
export const AUTHORISATION_COLUMNS = [
  'id',
  'userId',
  'scopes',
  'projectIds',
  'repos',
  'confirmWrites',
  'tools',
  'readOnly',
  'expiresAt',
  'revokedAt',
  'allowedIps',
] as const satisfies readonly (keyof ApiKeys)[];

/** The columns behind {@link ToolCredential}, selectable from either credential table. */
export const TOOL_CREDENTIAL_COLUMNS = [
  ...AUTHORISATION_COLUMNS,
  'createdAt',
  'lastUsedAt',
  'callCount',
] as const satisfies readonly (keyof ApiKeys)[];

type AuthorisationRow = Pick<Selectable<ApiKeys>, (typeof AUTHORISATION_COLUMNS)[number]>;
type ToolCredentialRow = Pick<Selectable<ApiKeys>, (typeof TOOL_CREDENTIAL_COLUMNS)[number]>;

export function toAuthorisation(row: AuthorisationRow): ToolCredentialAuthorisation {
  return {
    id: row.id,
    userId: row.userId,
    scopes: row.scopes,
    projectIds: row.projectIds,
    repos: row.repos,
    confirmWrites: row.confirmWrites,
    tools: row.tools,
    readOnly: row.readOnly,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
    allowedIps: row.allowedIps,
  };
}

export function toToolCredential(row: ToolCredentialRow): ToolCredential {
  return {
    ...toAuthorisation(row),
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    callCount: Number(row.callCount),
  };
}

/**
 * The SQL both credential kinds share: call counts, the usage log, revocation and the keyset page of a
 * user's credentials. Kind-specific statements (lookups by secret hash, creation) live in
 * api-keys.repository.ts and oauth-grants.repository.ts.
 */
@Injectable()
export class ToolCredentialsRepository {
  /** The call-count statement of each kind, compiled once (it runs for every Area A call batch). */
  private readonly addCallsQuery: Record<ToolCredentialKind, CompiledQuery>;

  constructor(
    @InjectDb() private readonly db: Db,
    private readonly callCountDb: CallCountDb,
  ) {
    const addCalls = (kind: ToolCredentialKind): CompiledQuery => {
      const table = sql.table(TABLES[kind].credentials);
      const none: string[] = [];
      // Only a usable credential is counted, and its authorisation comes back from the row as it is now:
      // whoever counts a call learns in the same round trip whether the credential is still revoked-free,
      // unexpired and what it may do (the key cache in ApiKeysService relies on this). A revocation time in the
      // future is a rolled key's overlap: it works until then, on every instance, with no cache to expire.
      const usable = sql`(k.revoked_at IS NULL OR k.revoked_at > now()) AND (k.expires_at IS NULL OR k.expires_at > now())`;
      return sql`WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true)),
       calls AS (SELECT * FROM unnest(${none}::uuid[], ${none}::bigint[]) AS c(id, n)),
       locked AS (
         SELECT k.id FROM ${table} k, async_commit
         WHERE k.id IN (SELECT id FROM calls) AND ${usable} ORDER BY k.id FOR NO KEY UPDATE OF k)
       UPDATE ${table} k SET call_count = k.call_count + calls.n, last_used_at = now()
       FROM calls, locked WHERE k.id = calls.id AND locked.id = calls.id AND ${usable}
       RETURNING ${sql.join(AUTHORISATION_COLUMNS.map((column) => sql.ref(`k.${column}`)))}`.compile(this.db);
    };
    this.addCallsQuery = { 'api-key': addCalls('api-key'), 'oauth-grant': addCalls('oauth-grant') };
  }

  /**
   * Adds `calls[i]` to the count of credential `ids[i]` and stamps last_used_at, in one statement whose
   * text is the same for any batch size (arrays, not a VALUES list). Only credentials that are neither
   * revoked nor expired at this moment are counted; their authorisations as now stored are returned (the
   * others are absent). It commits asynchronously (`synchronous_commit` off for its own transaction only)
   * and locks the rows in id order so two instances writing overlapping credentials cannot deadlock. Why
   * both: see ApiKeyCallCounterService.
   */
  async addCalls(kind: ToolCredentialKind, ids: string[], calls: number[]): Promise<ToolCredentialAuthorisation[]> {
    // On a lane of its own (CallCountDb): every call waits for this statement, which must not queue behind reads.
    const { rows } = await (
      await this.callCountDb.lane()
    ).executeQuery<AuthorisationRow>({ ...this.addCallsQuery[kind], parameters: [ids, calls] });
    return rows.map(toAuthorisation);
  }

  /**
   * Appends usage rows, one statement per kind present. Joined to the credential table so a key or grant
   * deleted meanwhile drops its rows instead of failing the batch.
   */
  async insertUsage(entries: readonly ToolCredentialUsage[], executor: DbExecutor = this.db): Promise<void> {
    for (const kind of Object.keys(TABLES) as ToolCredentialKind[]) {
      const rows = entries.filter((e) => e.credential === kind);
      if (rows.length === 0) continue;
      const { credentials, usage, usageId } = TABLES[kind];
      await sql`INSERT INTO ${sql.table(usage)} (${sql.ref(usageId)}, at, tool, status, duration_ms, client_name, client_version)
         SELECT u.key_id, u.at, u.tool, u.status, u.duration_ms, u.client_name, u.client_version
         FROM unnest(${rows.map((e) => e.keyId)}::uuid[], ${rows.map((e) => e.at.toISOString())}::timestamptz[], ${rows.map((e) => e.tool)}::text[],
                     ${rows.map((e) => e.status)}::int[], ${rows.map((e) => Math.round(e.durationMs))}::int[],
                     ${rows.map((e) => e.clientName)}::text[], ${rows.map((e) => e.clientVersion)}::text[]) AS u(key_id, at, tool, status, duration_ms, client_name, client_version)
         JOIN ${sql.table(credentials)} k ON k.id = u.key_id`.execute(executor);
    }
  }

  /** The credential's latest usage rows, newest first. */
  async recentUsage(kind: ToolCredentialKind, id: string, limit: number): Promise<ToolCredentialUsageView[]> {
    const { usage, usageId } = TABLES[kind];
    // The two usage tables have the same columns but for the name of the id column.
    const rows = await this.db
      .selectFrom(usage as 'apiKeyUsage')
      .select(['at', 'tool', 'status', 'durationMs', 'clientName', 'clientVersion'])
      .where(sql.ref(usageId), '=', id)
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((u) => ({
      at: u.at,
      tool: u.tool,
      status: u.status,
      durationMs: u.durationMs,
      clientName: u.clientName,
      clientVersion: u.clientVersion,
    }));
  }

  /**
   * Revokes one of the user's credentials; an already revoked one keeps its first revocation time, a rolled one
   * in its overlap stops now.
   * Its id, or undefined when the user has no such credential. Revocation is a column every lookup reads:
   * it holds on every instance at once.
   */
  async revokeOwned(
    kind: ToolCredentialKind,
    userId: string,
    id: string,
    executor: DbExecutor = this.db,
  ): Promise<string | undefined> {
    const row = await executor
      .updateTable(TABLES[kind].credentials as 'apiKeys')
      .set({ revokedAt: sql<Date>`least(coalesce(revoked_at, now()), now())` })
      .where('id', '=', id)
      .where('userId', '=', userId)
      .returning('id')
      .executeTakeFirst();
    return row?.id;
  }

  /** Revokes a credential whoever owns it (a leaked OAuth code or a reused refresh token). */
  async revoke(kind: ToolCredentialKind, id: string, executor: DbExecutor = this.db): Promise<void> {
    await executor
      .updateTable(TABLES[kind].credentials as 'apiKeys')
      .set({ revokedAt: sql<Date>`now()` })
      .where('id', '=', id)
      .where('revokedAt', 'is', null)
      .execute();
  }

  /**
   * One page of the user's credentials of a kind, newest first (ties by id), each with the kind's own
   * `extra` columns; `activeOnly` leaves revoked ones out.
   */
  async pageOwned<K extends ToolCredentialKind, E extends keyof Selectable<DB[CredentialTable<K>]> & string, R>(
    kind: K,
    userId: string,
    query: { limit: number; cursor?: string; activeOnly?: boolean },
    extra: readonly E[],
    render: (credential: ToolCredential, own: Pick<Selectable<DB[CredentialTable<K>]>, E>) => R,
  ): Promise<Page<R>> {
    const cursor = decodeCursor(query.cursor);
    // Typed as api_keys for the shared columns (the same in both tables); the caller's extra columns are
    // typed by its kind's own table in the signature above.
    let select = this.db
      .selectFrom(TABLES[kind].credentials as 'apiKeys')
      .select([...TOOL_CREDENTIAL_COLUMNS, ...(extra as readonly string[] as readonly 'name'[])])
      .where('userId', '=', userId);
    if (query.activeOnly) select = select.where('revokedAt', 'is', null);
    if (cursor)
      select = select.where(sql<boolean>`(created_at, id) < (${cursor.createdAt}::timestamptz, ${cursor.id}::uuid)`);
    const rows = await select
      .orderBy('createdAt', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit + 1)
      .execute();
    const page = rows.map((row) => ({
      ...toToolCredential(row),
      own: row as unknown as Pick<Selectable<DB[CredentialTable<K>]>, E>,
    }));
    return toPage(page, query.limit, ({ own, ...credential }) => render(credential, own));
  }

  /**
   * A user's usable credentials of both kinds (API keys and OAuth grants, neither revoked nor expired; a rolled key in
   * its overlap still counts), counted under a per-user transaction lock so two creations at once cannot both pass a
   * cap.
   */
  async countActiveLocked(userId: string, executor: DbExecutor): Promise<number> {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`credentials:${userId}`}, 0))`.execute(executor);
    const { rows } = await sql<{ n: string | number }>`
      SELECT (SELECT count(*) FROM api_keys WHERE user_id = ${userId} AND (revoked_at IS NULL OR revoked_at > now()) AND (expires_at IS NULL OR expires_at > now()))
           + (SELECT count(*) FROM oauth_grants WHERE user_id = ${userId} AND (revoked_at IS NULL OR revoked_at > now()) AND (expires_at IS NULL OR expires_at > now())) AS n`.execute(
      executor,
    );
    return Number(rows[0]?.n ?? 0);
  }
}
