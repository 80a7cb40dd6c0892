import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { InvalidGrantError, InvalidRequestError, InvalidScopeError, InvalidTargetError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { randomUUID } from 'node:crypto';
import { DataSource, IsNull, Repository, type EntityManager } from 'typeorm';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { returningRows } from '../../database/returning-rows.js';
import { pageOf, type Page } from '../../common/pagination/cursor-page.js';
import { isUuid } from '../../common/validation/uuid.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { sameHash } from '../api-keys/api-key-format.js';
import type { ApiKeyPrincipal } from '../api-keys/api-key.principal.js';
import { expiryDate, type ApiKeyExpiry } from '../api-keys/api-key-scopes.js';
import { isMcpResource, type AuthorizationRequest } from './authorization-request.js';
import { OAuthGrant } from './oauth-grant.entity.js';
import type { OAuthClient } from './oauth-clients.service.js';
import { generateOAuthSecret, hashOAuthSecret, isWellFormedOAuthSecret, PKCE_VALUE, pkceS256Matches } from './oauth-secret-format.js';

/** Codes live 60 s (RFC 6749 recommends at most 10 minutes; a client exchanges at once). */
const CODE_TTL_MS = 60_000;

/** What the user approved on the consent page. */
export interface Consent {
  scopes: string[];
  projectIds: string[] | null;
  repos: string[] | null;
  expiresIn: ApiKeyExpiry;
  confirmWrites: boolean;
}

export interface GrantView {
  id: string;
  clientId: string;
  clientName: string;
  scopes: string[];
  projectIds: string[] | null;
  repos: string[] | null;
  confirmWrites: boolean;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  callCount: number;
}

interface CodeRow {
  user_id: string;
  client_id: string;
  client_name: string;
  redirect_uri: string;
  code_challenge: string;
  resource: string;
  scopes: string[];
  project_ids: string[] | null;
  repos: string[] | null;
  confirm_writes: boolean;
  grant_expires_at: Date | null;
  expires_at: Date;
}

interface GrantRow {
  id: string;
  user_id: string;
  client_id: string;
  scopes: string[];
  project_ids: string[] | null;
  repos: string[] | null;
  confirm_writes: boolean;
  expires_at: Date | null;
  revoked_at: Date | null;
}

/**
 * Grants, codes and tokens. A grant is one user's authorisation of one client with the scopes and pins
 * chosen at consent; on Area A its access tokens act exactly like an API key with those scopes and pins
 * (`authenticateAccessToken` gives the same principal shape). Every secret is stored as an HMAC only;
 * single use (codes, refresh tokens) is one conditional UPDATE, so two instances can never both win.
 */
@Injectable()
export class OAuthGrantsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(OAuthGrant) private readonly grants: Repository<OAuthGrant>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  private hash(secret: string): Buffer {
    return hashOAuthSecret(secret, this.config.secrets.tokenPepper);
  }

  /** The consent page approved: a 60-second single-use code carrying the approval. */
  async issueCode(userId: string, request: AuthorizationRequest, consent: Consent): Promise<string> {
    const code = generateOAuthSecret('code');
    await this.dataSource.query(
      `INSERT INTO oauth_codes (code_hash, user_id, client_id, client_name, redirect_uri, code_challenge, resource, scopes, project_ids, repos, grant_expires_at, expires_at, confirm_writes)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        this.hash(code), userId, request.client.clientId, request.client.clientName, request.redirectUri, request.codeChallenge, request.resource,
        consent.scopes, consent.projectIds, consent.repos, expiryDate(consent.expiresIn, new Date()), new Date(Date.now() + CODE_TTL_MS), consent.confirmWrites,
      ],
    );
    // Expired codes are of no use to anyone; drop them on the way (bounded, indexed).
    await this.dataSource.query(`DELETE FROM oauth_codes WHERE ctid IN (SELECT ctid FROM oauth_codes WHERE expires_at < now() - interval '1 day' LIMIT 100)`);
    return code;
  }

  /**
   * grant_type=authorization_code. The code is consumed first (one UPDATE … WHERE used_at IS NULL), then
   * checked: a failed check still burns it. A code presented a second time revokes the grant it
   * produced (RFC 6749 §4.1.2: the code may have leaked).
   */
  async exchangeCode(client: OAuthClient, body: Record<string, unknown>): Promise<OAuthTokens> {
    const { code, code_verifier: verifier, redirect_uri: redirectUri, resource } = body;
    if (typeof code !== 'string' || code === '') throw new InvalidRequestError('code is required');
    if (typeof verifier !== 'string' || verifier === '') throw new InvalidRequestError('code_verifier is required (PKCE)');
    if (!isWellFormedOAuthSecret(code, 'code')) throw new InvalidGrantError('the authorization code is not valid');
    const hash = this.hash(code);
    const consumed = returningRows<CodeRow>(
      await this.dataSource.query(
        `UPDATE oauth_codes SET used_at = now() WHERE code_hash = $1 AND used_at IS NULL
         RETURNING user_id, client_id, client_name, redirect_uri, code_challenge, resource, scopes, project_ids, repos, confirm_writes, grant_expires_at, expires_at`,
        [hash],
      ),
    );
    const row = consumed[0];
    if (!row) {
      const used: { grant_id: string | null }[] = await this.dataSource.query(`SELECT grant_id FROM oauth_codes WHERE code_hash = $1`, [hash]);
      if (used[0]?.grant_id) await this.revokeGrantById(used[0].grant_id);
      throw new InvalidGrantError(used[0] ? 'the authorization code was already used; the authorization it produced is revoked' : 'the authorization code is not valid');
    }
    if (new Date(row.expires_at).getTime() <= Date.now()) throw new InvalidGrantError('the authorization code has expired');
    if (row.client_id !== client.clientId) throw new InvalidGrantError('the authorization code was issued to another client');
    if (redirectUri !== undefined ? redirectUri !== row.redirect_uri : !(client.redirectUris.length === 1 && client.redirectUris[0] === row.redirect_uri)) {
      throw new InvalidGrantError('redirect_uri does not match the authorization request');
    }
    if (!PKCE_VALUE.test(verifier) || !pkceS256Matches(verifier, row.code_challenge)) throw new InvalidGrantError('code_verifier does not match the code_challenge');
    if (resource !== undefined && !isMcpResource(resource, row.resource)) throw new InvalidTargetError('resource does not match the authorization request');
    const grantExpiresAt = row.grant_expires_at ? new Date(row.grant_expires_at) : null;
    return this.dataSource.transaction(async (manager) => {
      const grantId = randomUUID();
      await manager.query(
        `INSERT INTO oauth_grants (id, user_id, client_id, client_name, redirect_uri, resource, scopes, project_ids, repos, expires_at, confirm_writes)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [grantId, row.user_id, row.client_id, row.client_name, row.redirect_uri, row.resource, row.scopes, row.project_ids, row.repos, grantExpiresAt, row.confirm_writes],
      );
      await manager.query(`UPDATE oauth_codes SET grant_id = $2 WHERE code_hash = $1`, [hash, grantId]);
      return this.issueTokens(manager, grantId, row.scopes, grantExpiresAt);
    });
  }

  /**
   * grant_type=refresh_token with rotation: the presented token is spent by one conditional UPDATE and a
   * new pair is issued. A spent token presented again means two parties hold it: the whole grant is revoked.
   */
  async refresh(client: OAuthClient, body: Record<string, unknown>): Promise<OAuthTokens> {
    const { refresh_token: token, scope, resource } = body;
    if (typeof token !== 'string' || token === '') throw new InvalidRequestError('refresh_token is required');
    if (!isWellFormedOAuthSecret(token, 'refreshToken')) throw new InvalidGrantError('the refresh token is not valid');
    const hash = this.hash(token);
    return this.dataSource.transaction(async (manager) => {
      const spent = returningRows<{ grant_id: string }>(
        await manager.query(`UPDATE oauth_tokens SET used_at = now() WHERE token_hash = $1 AND kind = 'refresh' AND used_at IS NULL RETURNING grant_id`, [hash]),
      );
      if (spent.length === 0) {
        const known: { grant_id: string }[] = await manager.query(`SELECT grant_id FROM oauth_tokens WHERE token_hash = $1 AND kind = 'refresh'`, [hash]);
        if (known[0]) {
          await manager.query(`UPDATE oauth_grants SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [known[0].grant_id]);
          return { reused: true } as const;
        }
        throw new InvalidGrantError('the refresh token is not valid');
      }
      const grant = await this.activeGrant(manager, spent[0].grant_id);
      if (!grant || grant.client_id !== client.clientId) throw new InvalidGrantError('the refresh token is not valid (revoked, expired or issued to another client)');
      if (resource !== undefined && !isMcpResource(resource, this.mcpResource())) throw new InvalidTargetError('resource must be the MCP endpoint');
      if (typeof scope === 'string' && scope !== '' && !scope.split(' ').filter(Boolean).every((s) => grant.scopes.includes(s))) {
        throw new InvalidScopeError('a refresh may not ask for scopes the user did not grant');
      }
      return this.issueTokens(manager, grant.id, grant.scopes, grant.expires_at ? new Date(grant.expires_at) : null);
    }).then((result) => {
      // Thrown outside the transaction so the revocation above commits.
      if ('reused' in result) throw new InvalidGrantError('the refresh token was already used; every token of this authorization is revoked');
      return result;
    });
  }

  /** RFC 7009: an access token stops working; a refresh token ends the whole grant. Unknown tokens are fine. */
  async revokeToken(client: OAuthClient, token: unknown): Promise<void> {
    if (typeof token !== 'string' || token === '') throw new InvalidRequestError('token is required');
    const kind = isWellFormedOAuthSecret(token, 'accessToken') ? 'access' : isWellFormedOAuthSecret(token, 'refreshToken') ? 'refresh' : undefined;
    if (!kind) return;
    const rows: { grant_id: string; client_id: string }[] = await this.dataSource.query(
      `SELECT t.grant_id, g.client_id FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = $1 AND t.kind = $2`,
      [this.hash(token), kind],
    );
    // Another client's token: nothing happens and nothing is revealed (RFC 7009 §2.1).
    if (!rows[0] || rows[0].client_id !== client.clientId) return;
    if (kind === 'refresh') await this.revokeGrantById(rows[0].grant_id);
    else await this.dataSource.query(`DELETE FROM oauth_tokens WHERE token_hash = $1`, [this.hash(token)]);
  }

  /**
   * Area A: an access token to the same principal an API key gives. Grant revocation and expiry are
   * columns read on every call (no cache can outlive a revoke on any instance).
   */
  async authenticateAccessToken(token: string): Promise<ApiKeyPrincipal> {
    if (!isWellFormedOAuthSecret(token, 'accessToken')) throw new AppException(ErrorCode.InvalidApiKey, 'The OAuth access token is not valid');
    const hash = this.hash(token);
    const rows: (GrantRow & { token_hash: Buffer; token_expires_at: Date | null })[] = await this.dataSource.query(
      `SELECT g.id, g.user_id, g.client_id, g.scopes, g.project_ids, g.repos, g.confirm_writes, g.expires_at, g.revoked_at, t.token_hash, t.expires_at AS token_expires_at
       FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = $1 AND t.kind = 'access'`,
      [hash],
    );
    const row = rows[0];
    if (!row || !sameHash(row.token_hash, hash)) throw new AppException(ErrorCode.InvalidApiKey, 'The OAuth access token is not valid');
    if (row.revoked_at) throw new AppException(ErrorCode.RevokedApiKey, 'This app’s access has been revoked; connect it again to authorise it');
    const now = Date.now();
    if (row.expires_at && new Date(row.expires_at).getTime() <= now) {
      throw new AppException(ErrorCode.ExpiredApiKey, 'This app’s authorisation has expired; connect it again to authorise it');
    }
    if (row.token_expires_at && new Date(row.token_expires_at).getTime() <= now) {
      throw new AppException(ErrorCode.ExpiredApiKey, 'The OAuth access token has expired; the app should use its refresh token');
    }
    return {
      kind: 'api-key',
      credential: 'oauth-grant',
      keyId: row.id,
      userId: row.user_id,
      scopes: row.scopes,
      projectIds: row.project_ids,
      repos: row.repos,
      confirmWrites: row.confirm_writes,
      expiresAt: null,
      trackerId: `grant:${row.id}`,
    };
  }

  /** The caller's connected apps (grants not revoked), newest first, a page at a time. */
  list(userId: string, query: { limit: number; cursor?: string }): Promise<Page<GrantView>> {
    return pageOf(this.grants.createQueryBuilder('g').where('g.user_id = :userId AND g.revoked_at IS NULL', { userId }), query, (row) => view(row));
  }

  /** Revokes every token of the grant at once, on every instance (the token lookup reads revoked_at). */
  async revoke(userId: string, id: string): Promise<{ id: string; revoked: true }> {
    const row = isUuid(id) ? await this.grants.findOneBy({ id, userId }) : null;
    if (!row) throw AppException.notFound('Connected app');
    await this.grants.update({ id, userId, revokedAt: IsNull() }, { revokedAt: new Date() });
    return { id, revoked: true };
  }

  private async revokeGrantById(grantId: string): Promise<void> {
    await this.dataSource.query(`UPDATE oauth_grants SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [grantId]);
  }

  private async activeGrant(manager: EntityManager, grantId: string): Promise<GrantRow | undefined> {
    const rows: GrantRow[] = await manager.query(
      `SELECT id, user_id, client_id, scopes, project_ids, repos, confirm_writes, expires_at, revoked_at FROM oauth_grants
       WHERE id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [grantId],
    );
    return rows[0];
  }

  private async issueTokens(manager: EntityManager, grantId: string, scopes: string[], grantExpiresAt: Date | null): Promise<OAuthTokens> {
    const ttl = this.config.oauth.accessTokenTtlSeconds;
    // An access token never outlives its grant.
    const boundByGrant = grantExpiresAt !== null && grantExpiresAt.getTime() < Date.now() + ttl * 1000;
    const accessExpiresAt = boundByGrant ? grantExpiresAt : new Date(Date.now() + ttl * 1000);
    const accessToken = generateOAuthSecret('accessToken');
    const refreshToken = generateOAuthSecret('refreshToken');
    await manager.query(
      `INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at) VALUES ($1, $3, 'access', $4), ($2, $3, 'refresh', $5)`,
      [this.hash(accessToken), this.hash(refreshToken), grantId, accessExpiresAt, grantExpiresAt],
    );
    // Spent refresh tokens are kept for reuse detection; expired access tokens are dropped on the way.
    await manager.query(`DELETE FROM oauth_tokens WHERE grant_id = $1 AND kind = 'access' AND expires_at < now()`, [grantId]);
    const expiresIn = boundByGrant ? Math.max(1, Math.floor((accessExpiresAt.getTime() - Date.now()) / 1000)) : ttl;
    return { access_token: accessToken, token_type: 'Bearer', expires_in: expiresIn, refresh_token: refreshToken, scope: scopes.join(' ') };
  }

  mcpResource(): string {
    return `${this.config.publicUrl}/api/v1/public/mcp`;
  }
}

function view(row: OAuthGrant): GrantView {
  return {
    id: row.id,
    clientId: row.clientId,
    clientName: row.clientName,
    scopes: row.scopes,
    projectIds: row.projectIds,
    repos: row.repos,
    confirmWrites: row.confirmWrites,
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    callCount: Number(row.callCount),
  };
}
