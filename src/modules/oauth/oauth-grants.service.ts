import { Inject, Injectable } from '@nestjs/common';
import {
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { randomUUID } from 'node:crypto';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { Page } from '../../common/pagination/cursor-page.js';
import { isUuid } from '../../common/validation/uuid.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { sameHash } from '../api-keys/api-key-format.js';
import { expiryDate, type ApiKeyExpiry } from '../api-keys/api-key-scopes.js';
import { isMcpResource, type AuthorizationRequest } from './authorization-request.js';
import { toToolCredentialView, type ToolCredentialView } from '../api-keys/tool-credential-view.js';
import { ToolCredentialsRepository, type ToolCredentialAccess } from '../api-keys/tool-credentials.repository.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import { AuditService } from '../audit/audit.service.js';
import { AdminPolicyService } from '../admin-policy/admin-policy.service.js';
import { OAuthGrantsRepository, type GrantAuthorisation } from './oauth-grants.repository.js';
import type { OAuthClient } from './oauth-clients.service.js';
import {
  generateOAuthSecret,
  hashOAuthSecret,
  isWellFormedOAuthSecret,
  PKCE_VALUE,
  pkceS256Matches,
} from './oauth-secret-format.js';

/** Codes live 60 s (RFC 6749 recommends at most 10 minutes; a client exchanges at once). */
const CODE_TTL_MS = 60_000;

/** What the user approved on the consent page. */
export interface Consent extends ToolCredentialAccess {
  expiresIn: ApiKeyExpiry;
}

export interface GrantView extends ToolCredentialView {
  clientId: string;
  clientName: string;
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
    @InjectDb() private readonly db: Db,
    private readonly grants: OAuthGrantsRepository,
    private readonly credentials: ToolCredentialsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly audit: AuditService,
    private readonly policy: AdminPolicyService,
  ) {}

  private hash(secret: string): Buffer {
    return hashOAuthSecret(secret, this.config.secrets.tokenPepper);
  }

  /** The consent page approved: a 60-second single-use code carrying the approval (400 if the admin policy forbids it). */
  async issueCode(userId: string, request: AuthorizationRequest, consent: Consent): Promise<string> {
    await this.policy.assertNewGrantAllowed(consent);
    const code = generateOAuthSecret('code');
    await this.grants.insertCode(this.hash(code), {
      userId,
      clientId: request.client.clientId,
      clientName: request.client.clientName,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      resource: request.resource,
      scopes: consent.scopes,
      projectIds: consent.projectIds,
      repos: consent.repos,
      confirmWrites: consent.confirmWrites,
      tools: consent.tools,
      readOnly: consent.readOnly,
      allowedIps: consent.allowedIps && this.policy.cidrList(consent.allowedIps, 'allowedIps'),
      grantExpiresAt: expiryDate(consent.expiresIn, new Date()),
      expiresAt: new Date(Date.now() + CODE_TTL_MS),
    });
    // Expired codes are of no use to anyone; drop them on the way (bounded, indexed).
    await this.grants.deleteStaleCodes();
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
    if (typeof verifier !== 'string' || verifier === '')
      throw new InvalidRequestError('code_verifier is required (PKCE)');
    if (!isWellFormedOAuthSecret(code, 'code')) throw new InvalidGrantError('the authorization code is not valid');
    const hash = this.hash(code);
    const row = await this.grants.consumeCode(hash);
    if (!row) {
      const used = await this.grants.findCodeGrant(hash);
      if (used?.grantId) await this.credentials.revoke('oauth-grant', used.grantId);
      throw new InvalidGrantError(
        used
          ? 'the authorization code was already used; the authorization it produced is revoked'
          : 'the authorization code is not valid',
      );
    }
    if (row.expiresAt.getTime() <= Date.now()) throw new InvalidGrantError('the authorization code has expired');
    if (row.clientId !== client.clientId)
      throw new InvalidGrantError('the authorization code was issued to another client');
    if (
      redirectUri !== undefined
        ? redirectUri !== row.redirectUri
        : !(client.redirectUris.length === 1 && client.redirectUris[0] === row.redirectUri)
    ) {
      throw new InvalidGrantError('redirect_uri does not match the authorization request');
    }
    if (!PKCE_VALUE.test(verifier) || !pkceS256Matches(verifier, row.codeChallenge))
      throw new InvalidGrantError('code_verifier does not match the code_challenge');
    if (resource !== undefined && !isMcpResource(resource, row.resource))
      throw new InvalidTargetError('resource does not match the authorization request');
    return this.db.transaction().execute(async (trx) => {
      const grantId = randomUUID();
      const { codeChallenge: _challenge, grantExpiresAt, expiresAt: _codeExpiresAt, ...granted } = row;
      await this.grants.insertGrantForCode(hash, { ...granted, id: grantId, expiresAt: grantExpiresAt }, trx);
      // The grant comes into being here, at the client's exchange of the user's approved code.
      await this.audit.recordChange(trx, {
        action: 'oauth.grant',
        target: { type: 'oauth_grant', id: grantId },
        actor: { userId: row.userId, via: 'oauth', credentialId: grantId, clientName: row.clientName },
        details: {
          clientId: row.clientId,
          scopes: row.scopes,
          projectIds: row.projectIds,
          repos: row.repos,
          confirmWrites: row.confirmWrites,
          tools: row.tools,
          readOnly: row.readOnly,
          allowedIps: row.allowedIps,
        },
      });
      return this.issueTokens(trx, grantId, row.scopes, row.grantExpiresAt);
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
    return this.db
      .transaction()
      .execute(async (trx) => {
        const spent = await this.grants.spendRefreshToken(hash, trx);
        if (!spent) throw new InvalidGrantError('the refresh token is not valid');
        if (!spent.spent) {
          await this.credentials.revoke('oauth-grant', spent.grantId, trx);
          return { reused: true } as const;
        }
        const grant = await this.grants.findActive(spent.grantId, trx);
        if (!grant || grant.clientId !== client.clientId)
          throw new InvalidGrantError('the refresh token is not valid (revoked, expired or issued to another client)');
        if (resource !== undefined && !isMcpResource(resource, this.mcpResource()))
          throw new InvalidTargetError('resource must be the MCP endpoint');
        if (
          typeof scope === 'string' &&
          scope !== '' &&
          !scope
            .split(' ')
            .filter(Boolean)
            .every((s) => grant.scopes.includes(s))
        ) {
          throw new InvalidScopeError('a refresh may not ask for scopes the user did not grant');
        }
        return this.issueTokens(trx, grant.id, grant.scopes, grant.expiresAt);
      })
      .then((result) => {
        // Thrown outside the transaction so the revocation above commits.
        if ('reused' in result)
          throw new InvalidGrantError(
            'the refresh token was already used; every token of this authorization is revoked',
          );
        return result;
      });
  }

  /** RFC 7009: an access token stops working; a refresh token ends the whole grant. Unknown tokens are fine. */
  async revokeToken(client: OAuthClient, token: unknown): Promise<void> {
    if (typeof token !== 'string' || token === '') throw new InvalidRequestError('token is required');
    const kind = isWellFormedOAuthSecret(token, 'accessToken')
      ? 'access'
      : isWellFormedOAuthSecret(token, 'refreshToken')
        ? 'refresh'
        : undefined;
    if (!kind) return;
    const hash = this.hash(token);
    const found = await this.grants.findTokenGrant(hash, kind);
    // Another client's token: nothing happens and nothing is revealed (RFC 7009 §2.1).
    if (!found || found.clientId !== client.clientId) return;
    if (kind === 'access') return this.grants.deleteToken(hash);
    // Revoking the refresh token ends the grant: the client itself did it, on the user's grant.
    await this.db.transaction().execute(async (trx) => {
      await this.credentials.revoke('oauth-grant', found.grantId, trx);
      await this.audit.recordChange(trx, {
        action: 'oauth.revoke',
        target: { type: 'oauth_grant', id: found.grantId },
        actor: { userId: found.userId, via: 'oauth', credentialId: found.grantId, clientName: found.clientName },
        details: { by: 'client' },
      });
    });
  }

  /**
   * Area A: an access token to its grant's authorisation, the same an API key gives. Grant revocation and expiry are
   * columns read on every call (no cache can outlive a revoke on any instance).
   */
  async authenticateAccessToken(token: string): Promise<GrantAuthorisation> {
    if (!isWellFormedOAuthSecret(token, 'accessToken'))
      throw new AppException(ErrorCode.InvalidApiKey, 'The OAuth access token is not valid');
    const hash = this.hash(token);
    const found = await this.grants.findByAccessToken(hash);
    if (!found || !sameHash(found.tokenHash, hash))
      throw new AppException(ErrorCode.InvalidApiKey, 'The OAuth access token is not valid');
    const { grant, tokenExpiresAt } = found;
    if (grant.revokedAt)
      throw new AppException(
        ErrorCode.RevokedApiKey,
        'This app’s access has been revoked; connect it again to authorise it',
      );
    const now = Date.now();
    if (grant.expiresAt && grant.expiresAt.getTime() <= now) {
      throw new AppException(
        ErrorCode.ExpiredApiKey,
        'This app’s authorisation has expired; connect it again to authorise it',
      );
    }
    if (tokenExpiresAt && tokenExpiresAt.getTime() <= now) {
      throw new AppException(
        ErrorCode.ExpiredApiKey,
        'The OAuth access token has expired; the app should use its refresh token',
      );
    }
    return grant;
  }

  /** The caller's connected apps (grants not revoked), newest first, a page at a time. */
  list(userId: string, query: { limit: number; cursor?: string }): Promise<Page<GrantView>> {
    return this.credentials.pageOwned(
      'oauth-grant',
      userId,
      { ...query, activeOnly: true },
      ['clientId', 'clientName'],
      (grant, own) => ({ ...toToolCredentialView(grant), clientId: own.clientId, clientName: own.clientName }),
    );
  }

  /** Revokes every token of the grant at once, on every instance (the token lookup reads revoked_at). */
  async revoke(userId: string, id: string): Promise<{ id: string; revoked: true }> {
    const revoked =
      isUuid(id) &&
      (await this.db.transaction().execute(async (trx) => {
        if (!(await this.credentials.revokeOwned('oauth-grant', userId, id, trx))) return false;
        await this.audit.recordChange(trx, {
          action: 'oauth.revoke',
          target: { type: 'oauth_grant', id },
          onBehalfOf: userId,
        });
        return true;
      }));
    if (!revoked) throw AppException.notFound('Connected app');
    return { id, revoked: true };
  }

  private async issueTokens(
    executor: DbExecutor,
    grantId: string,
    scopes: string[],
    grantExpiresAt: Date | null,
  ): Promise<OAuthTokens> {
    const ttl = this.config.oauth.accessTokenTtlSeconds;
    // An access token never outlives its grant.
    const boundByGrant = grantExpiresAt !== null && grantExpiresAt.getTime() < Date.now() + ttl * 1000;
    const accessExpiresAt = boundByGrant ? grantExpiresAt : new Date(Date.now() + ttl * 1000);
    const accessToken = generateOAuthSecret('accessToken');
    const refreshToken = generateOAuthSecret('refreshToken');
    await this.grants.insertTokenPair(
      grantId,
      { hash: this.hash(accessToken), expiresAt: accessExpiresAt },
      { hash: this.hash(refreshToken), expiresAt: grantExpiresAt },
      executor,
    );
    const expiresIn = boundByGrant ? Math.max(1, Math.floor((accessExpiresAt.getTime() - Date.now()) / 1000)) : ttl;
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: expiresIn,
      refresh_token: refreshToken,
      scope: scopes.join(' '),
    };
  }

  mcpResource(): string {
    return `${this.config.publicUrl}/api/v1/public/mcp`;
  }
}
