import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import {
  AUTHORISATION_COLUMNS,
  toAuthorisation,
  type ToolCredentialAccess,
  type ToolCredentialAuthorisation,
} from '../api-keys/tool-credentials.repository.js';

/** A single-use authorization code as stored: the consent it carries until it is exchanged. */
export interface OAuthCode extends ToolCredentialAccess {
  userId: string;
  clientId: string;
  clientName: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  /** When the grant made from this code will expire (the consent's choice). */
  grantExpiresAt: Date | null;
  expiresAt: Date;
}

/** A grant at authentication: what an API key has, plus the client it was given to. */
export interface OAuthGrantAuthorisation extends ToolCredentialAuthorisation {
  clientId: string;
}

/** A grant made from a code: the code's consent, client and resource. */
export type NewOAuthGrant = Omit<OAuthCode, 'codeChallenge' | 'grantExpiresAt' | 'expiresAt'> & {
  id: string;
  expiresAt: Date | null;
};

export type OAuthTokenKind = 'access' | 'refresh';

/**
 * The OAuth grant aggregate: `oauth_grants`, its `oauth_codes` and `oauth_tokens`. Secrets arrive here
 * as HMACs only. Single use (codes, refresh tokens) is one conditional UPDATE, so two instances can never
 * both win. Counts, usage, revocation and listing, shared with API keys, are ToolCredentialsRepository's.
 */
/** A grant's authorisation with the client it was given to (the admin policy may stop allowing that client). */
export interface GrantAuthorisation extends ToolCredentialAuthorisation {
  clientId: string;
  clientName: string;
}

@Injectable()
export class OAuthGrantsRepository {
  /** The hot-path lookup, built and compiled once: each call only swaps in the hash. */
  private readonly byAccessToken;

  constructor(@InjectDb() private readonly db: Db) {
    this.byAccessToken = this.db
      .selectFrom('oauth_tokens as t')
      .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
      .select([
        'g.id',
        'g.user_id',
        'g.scopes',
        'g.project_ids',
        'g.repos',
        'g.confirm_writes',
        'g.tools',
        'g.read_only',
        'g.expires_at',
        'g.revoked_at',
        'g.allowed_ips',
        'g.client_id',
        'g.client_name',
        't.token_hash',
        't.expires_at as token_expires_at',
      ])
      .where('t.token_hash', '=', Buffer.alloc(0))
      .where('t.kind', '=', sql.lit('access'))
      .compile();
  }

  async insertCode(codeHash: Buffer, code: OAuthCode): Promise<void> {
    await this.db
      .insertInto('oauth_codes')
      .values({
        code_hash: codeHash,
        user_id: code.userId,
        client_id: code.clientId,
        client_name: code.clientName,
        redirect_uri: code.redirectUri,
        code_challenge: code.codeChallenge,
        resource: code.resource,
        scopes: code.scopes,
        project_ids: code.projectIds,
        repos: code.repos,
        grant_expires_at: code.grantExpiresAt,
        expires_at: code.expiresAt,
        confirm_writes: code.confirmWrites,
        tools: code.tools,
        read_only: code.readOnly,
      })
      .execute();
  }

  /** Drops up to 100 codes expired for over a day (bounded and indexed, so it can run on the way). */
  async deleteStaleCodes(): Promise<void> {
    await sql`DELETE FROM oauth_codes WHERE ctid IN (SELECT ctid FROM oauth_codes WHERE expires_at < now() - interval '1 day' LIMIT 100)`.execute(
      this.db,
    );
  }

  /** Marks the code used and returns it; undefined when it is unknown or was already used. */
  async consumeCode(codeHash: Buffer): Promise<OAuthCode | undefined> {
    const row = await this.db
      .updateTable('oauth_codes')
      .set({ used_at: sql<Date>`now()` })
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .returning([
        'user_id',
        'client_id',
        'client_name',
        'redirect_uri',
        'code_challenge',
        'resource',
        'scopes',
        'project_ids',
        'repos',
        'confirm_writes',
        'tools',
        'read_only',
        'grant_expires_at',
        'expires_at',
      ])
      .executeTakeFirst();
    return (
      row && {
        userId: row.user_id,
        clientId: row.client_id,
        clientName: row.client_name,
        redirectUri: row.redirect_uri,
        codeChallenge: row.code_challenge,
        resource: row.resource,
        scopes: row.scopes,
        projectIds: row.project_ids,
        repos: row.repos,
        confirmWrites: row.confirm_writes,
        tools: row.tools,
        readOnly: row.read_only,
        grantExpiresAt: row.grant_expires_at,
        expiresAt: row.expires_at,
      }
    );
  }

  /** A known code's grant (null before its exchange completed); undefined for an unknown code. */
  async findCodeGrant(codeHash: Buffer): Promise<{ grantId: string | null } | undefined> {
    const row = await this.db
      .selectFrom('oauth_codes')
      .select('grant_id')
      .where('code_hash', '=', codeHash)
      .executeTakeFirst();
    return row && { grantId: row.grant_id };
  }

  /** Creates the grant a code was exchanged for and records it on the code (for reuse detection). */
  async insertGrantForCode(codeHash: Buffer, grant: NewOAuthGrant, executor: DbExecutor = this.db): Promise<void> {
    await executor
      .insertInto('oauth_grants')
      .values({
        id: grant.id,
        user_id: grant.userId,
        client_id: grant.clientId,
        client_name: grant.clientName,
        redirect_uri: grant.redirectUri,
        resource: grant.resource,
        scopes: grant.scopes,
        project_ids: grant.projectIds,
        repos: grant.repos,
        expires_at: grant.expiresAt,
        confirm_writes: grant.confirmWrites,
        tools: grant.tools,
        read_only: grant.readOnly,
      })
      .execute();
    await executor.updateTable('oauth_codes').set({ grant_id: grant.id }).where('code_hash', '=', codeHash).execute();
  }

  /** The grant if it is neither revoked nor expired. */
  async findActive(grantId: string, executor: DbExecutor = this.db): Promise<OAuthGrantAuthorisation | undefined> {
    const row = await executor
      .selectFrom('oauth_grants')
      .select([...AUTHORISATION_COLUMNS, 'client_id'])
      .where('id', '=', grantId)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
      .executeTakeFirst();
    return row && { ...toAuthorisation(row), clientId: row.client_id };
  }

  /**
   * The hot path of every Area A call with an OAuth token: one indexed lookup of the access token with
   * its grant, returning the stored hash for the caller's constant-time comparison. Compiled once.
   */
  async findByAccessToken(
    tokenHash: Buffer,
  ): Promise<{ grant: GrantAuthorisation; tokenHash: Buffer; tokenExpiresAt: Date | null } | undefined> {
    const query: typeof this.byAccessToken = { ...this.byAccessToken, parameters: [tokenHash] };
    const [row] = (await this.db.executeQuery(query)).rows;
    return (
      row && {
        grant: { ...toAuthorisation(row), clientId: row.client_id, clientName: row.client_name },
        tokenHash: row.token_hash,
        tokenExpiresAt: row.token_expires_at,
      }
    );
  }

  /** The grant and client of a token of this kind; undefined when there is none. */
  async findTokenGrant(
    tokenHash: Buffer,
    kind: OAuthTokenKind,
  ): Promise<{ grantId: string; clientId: string; clientName: string; userId: string } | undefined> {
    const row = await this.db
      .selectFrom('oauth_tokens as t')
      .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
      .select(['t.grant_id', 'g.client_id', 'g.client_name', 'g.user_id'])
      .where('t.token_hash', '=', tokenHash)
      .where('t.kind', '=', kind)
      .executeTakeFirst();
    return row && { grantId: row.grant_id, clientId: row.client_id, clientName: row.client_name, userId: row.user_id };
  }

  async deleteToken(tokenHash: Buffer): Promise<void> {
    await this.db.deleteFrom('oauth_tokens').where('token_hash', '=', tokenHash).execute();
  }

  /**
   * Spends a refresh token (one conditional UPDATE) and gives its grant with `spent: true`. A token spent
   * before gives `spent: false` (presented again, it has leaked); an unknown one gives undefined.
   */
  async spendRefreshToken(
    tokenHash: Buffer,
    executor: DbExecutor = this.db,
  ): Promise<{ grantId: string; spent: boolean } | undefined> {
    const spent = await executor
      .updateTable('oauth_tokens')
      .set({ used_at: sql<Date>`now()` })
      .where('token_hash', '=', tokenHash)
      .where('kind', '=', 'refresh')
      .where('used_at', 'is', null)
      .returning('grant_id')
      .executeTakeFirst();
    if (spent) return { grantId: spent.grant_id, spent: true };
    const known = await executor
      .selectFrom('oauth_tokens')
      .select('grant_id')
      .where('token_hash', '=', tokenHash)
      .where('kind', '=', 'refresh')
      .executeTakeFirst();
    return known && { grantId: known.grant_id, spent: false };
  }

  /**
   * Stores a new access/refresh pair and drops the grant's expired access tokens (spent refresh tokens
   * are kept for reuse detection).
   */
  async insertTokenPair(
    grantId: string,
    access: { hash: Buffer; expiresAt: Date },
    refresh: { hash: Buffer; expiresAt: Date | null },
    executor: DbExecutor = this.db,
  ): Promise<void> {
    await executor
      .insertInto('oauth_tokens')
      .values([
        { token_hash: access.hash, grant_id: grantId, kind: 'access', expires_at: access.expiresAt },
        { token_hash: refresh.hash, grant_id: grantId, kind: 'refresh', expires_at: refresh.expiresAt },
      ])
      .execute();
    await executor
      .deleteFrom('oauth_tokens')
      .where('grant_id', '=', grantId)
      .where('kind', '=', 'access')
      .where('expires_at', '<', sql<Date>`now()`)
      .execute();
  }
}
