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
      .selectFrom('oauthTokens as t')
      .innerJoin('oauthGrants as g', 'g.id', 't.grantId')
      .select([
        'g.id',
        'g.userId',
        'g.scopes',
        'g.projectIds',
        'g.repos',
        'g.confirmWrites',
        'g.tools',
        'g.readOnly',
        'g.expiresAt',
        'g.revokedAt',
        'g.allowedIps',
        'g.clientId',
        'g.clientName',
        't.tokenHash',
        't.expiresAt as tokenExpiresAt',
      ])
      .where('t.tokenHash', '=', Buffer.alloc(0))
      .where('t.kind', '=', sql.lit('access'))
      .compile();
  }

  async insertCode(codeHash: Buffer, code: OAuthCode): Promise<void> {
    await this.db
      .insertInto('oauthCodes')
      .values({
        codeHash,
        userId: code.userId,
        clientId: code.clientId,
        clientName: code.clientName,
        redirectUri: code.redirectUri,
        codeChallenge: code.codeChallenge,
        resource: code.resource,
        scopes: code.scopes,
        projectIds: code.projectIds,
        repos: code.repos,
        grantExpiresAt: code.grantExpiresAt,
        expiresAt: code.expiresAt,
        confirmWrites: code.confirmWrites,
        tools: code.tools,
        readOnly: code.readOnly,
        allowedIps: code.allowedIps,
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
      .updateTable('oauthCodes')
      .set({ usedAt: sql<Date>`now()` })
      .where('codeHash', '=', codeHash)
      .where('usedAt', 'is', null)
      .returning([
        'userId',
        'clientId',
        'clientName',
        'redirectUri',
        'codeChallenge',
        'resource',
        'scopes',
        'projectIds',
        'repos',
        'confirmWrites',
        'tools',
        'readOnly',
        'allowedIps',
        'grantExpiresAt',
        'expiresAt',
      ])
      .executeTakeFirst();
    return (
      row && {
        userId: row.userId,
        clientId: row.clientId,
        clientName: row.clientName,
        redirectUri: row.redirectUri,
        codeChallenge: row.codeChallenge,
        resource: row.resource,
        scopes: row.scopes,
        projectIds: row.projectIds,
        repos: row.repos,
        confirmWrites: row.confirmWrites,
        tools: row.tools,
        readOnly: row.readOnly,
        allowedIps: row.allowedIps,
        grantExpiresAt: row.grantExpiresAt,
        expiresAt: row.expiresAt,
      }
    );
  }

  /** A known code's grant (null before its exchange completed); undefined for an unknown code. */
  async findCodeGrant(codeHash: Buffer): Promise<{ grantId: string | null } | undefined> {
    const row = await this.db
      .selectFrom('oauthCodes')
      .select('grantId')
      .where('codeHash', '=', codeHash)
      .executeTakeFirst();
    return row && { grantId: row.grantId };
  }

  /** Creates the grant a code was exchanged for and records it on the code (for reuse detection). */
  async insertGrantForCode(codeHash: Buffer, grant: NewOAuthGrant, executor: DbExecutor = this.db): Promise<void> {
    await executor
      .insertInto('oauthGrants')
      .values({
        id: grant.id,
        userId: grant.userId,
        clientId: grant.clientId,
        clientName: grant.clientName,
        redirectUri: grant.redirectUri,
        resource: grant.resource,
        scopes: grant.scopes,
        projectIds: grant.projectIds,
        repos: grant.repos,
        expiresAt: grant.expiresAt,
        confirmWrites: grant.confirmWrites,
        tools: grant.tools,
        readOnly: grant.readOnly,
        allowedIps: grant.allowedIps,
      })
      .execute();
    await executor.updateTable('oauthCodes').set({ grantId: grant.id }).where('codeHash', '=', codeHash).execute();
  }

  /** The grant if it is neither revoked nor expired. */
  async findActive(grantId: string, executor: DbExecutor = this.db): Promise<OAuthGrantAuthorisation | undefined> {
    const row = await executor
      .selectFrom('oauthGrants')
      .select([...AUTHORISATION_COLUMNS, 'clientId'])
      .where('id', '=', grantId)
      .where('revokedAt', 'is', null)
      .where((eb) => eb.or([eb('expiresAt', 'is', null), eb('expiresAt', '>', sql<Date>`now()`)]))
      .executeTakeFirst();
    return row && { ...toAuthorisation(row), clientId: row.clientId };
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
        grant: { ...toAuthorisation(row), clientId: row.clientId, clientName: row.clientName },
        tokenHash: row.tokenHash,
        tokenExpiresAt: row.tokenExpiresAt,
      }
    );
  }

  /** The grant and client of a token of this kind; undefined when there is none. */
  async findTokenGrant(
    tokenHash: Buffer,
    kind: OAuthTokenKind,
  ): Promise<{ grantId: string; clientId: string; clientName: string; userId: string } | undefined> {
    const row = await this.db
      .selectFrom('oauthTokens as t')
      .innerJoin('oauthGrants as g', 'g.id', 't.grantId')
      .select(['t.grantId', 'g.clientId', 'g.clientName', 'g.userId'])
      .where('t.tokenHash', '=', tokenHash)
      .where('t.kind', '=', kind)
      .executeTakeFirst();
    return row && { grantId: row.grantId, clientId: row.clientId, clientName: row.clientName, userId: row.userId };
  }

  async deleteToken(tokenHash: Buffer): Promise<void> {
    await this.db.deleteFrom('oauthTokens').where('tokenHash', '=', tokenHash).execute();
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
      .updateTable('oauthTokens')
      .set({ usedAt: sql<Date>`now()` })
      .where('tokenHash', '=', tokenHash)
      .where('kind', '=', 'refresh')
      .where('usedAt', 'is', null)
      .returning('grantId')
      .executeTakeFirst();
    if (spent) return { grantId: spent.grantId, spent: true };
    const known = await executor
      .selectFrom('oauthTokens')
      .select('grantId')
      .where('tokenHash', '=', tokenHash)
      .where('kind', '=', 'refresh')
      .executeTakeFirst();
    return known && { grantId: known.grantId, spent: false };
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
      .insertInto('oauthTokens')
      .values([
        { tokenHash: access.hash, grantId, kind: 'access', expiresAt: access.expiresAt },
        { tokenHash: refresh.hash, grantId, kind: 'refresh', expiresAt: refresh.expiresAt },
      ])
      .execute();
    await executor
      .deleteFrom('oauthTokens')
      .where('grantId', '=', grantId)
      .where('kind', '=', 'access')
      .where('expiresAt', '<', sql<Date>`now()`)
      .execute();
  }
}
