import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { bearerToken } from '../auth/guards/backend-auth.guard.js';
import { OAuthGrantsService } from '../oauth/oauth-grants.service.js';
import { OAUTH_SECRET_PREFIX } from '../oauth/oauth-secret-format.js';
import { API_KEY_PREFIX } from './api-key-format.js';
import type { ApiKeyPrincipal } from './api-key.principal.js';
import { ApiKeyCallCounterService } from './api-key-call-counter.service.js';
import { ApiKeysService } from './api-keys.service.js';

/**
 * `Authorization: Bearer atr_…` (personal API key) or `Bearer ato_…` (OAuth access token) → the caller's
 * principal, the same shape for both; any other credential is a 401 naming the ones expected. Called by
 * ApiKeyAuthGuard directly rather than as a passport strategy: passport built a strategy object and its
 * success/fail/error closures on every tool call (a measurable share of the gateway's allocations) for a
 * credential check that is one function.
 */
@Injectable()
export class ApiKeyAuthenticator {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly oauthGrants: OAuthGrantsService,
    private readonly callCounter: ApiKeyCallCounterService,
  ) {}

  /** The principal of the request's Area A credential; throws the 401 that names what is wrong. */
  async authenticate(request: Request): Promise<ApiKeyPrincipal> {
    const token = bearerToken(request);
    if (!token) {
      throw new AppException(
        ErrorCode.MissingApiKey,
        'This route needs a personal API key (Authorization: Bearer atr_…, create one with POST /api/api-keys) or an OAuth access token (see /.well-known/oauth-protected-resource)',
      );
    }
    // A usable credential's call is counted (committed) before the call is answered, so a crash never loses
    // the count of an answered call; ApiKeyCallCounterService makes concurrent calls share one write.
    // ApiKeysService counts a key's call itself (the count is also its revocation check).
    if (token.startsWith(OAUTH_SECRET_PREFIX.accessToken)) return this.authenticateAccessToken(token);
    return this.authenticateKey(token);
  }

  private async authenticateAccessToken(token: string): Promise<ApiKeyPrincipal> {
    const principal = await this.oauthGrants.authenticateAccessToken(token);
    if (await this.callCounter.count(principal.credential, principal.keyId)) return principal;
    // The grant was revoked or expired between the lookup and the count: a second lookup names which.
    await this.oauthGrants.authenticateAccessToken(token);
    throw new AppException(ErrorCode.InvalidApiKey, 'The OAuth access token is not valid');
  }

  private authenticateKey(token: string): Promise<ApiKeyPrincipal> {
    if (!token.startsWith(API_KEY_PREFIX)) {
      const kind = token.startsWith('atp_')
        ? 'a project session token'
        : token.startsWith(OAUTH_SECRET_PREFIX.refreshToken)
          ? 'an OAuth refresh token (exchange it at /oauth/token)'
          : token.split('.').length === 3
            ? 'a user access token'
            : 'an unrecognised credential';
      throw new AppException(
        ErrorCode.InvalidApiKey,
        `This route expects a personal API key (atr_…) or an OAuth access token (ato_…), got ${kind}; user and project tokens work only on the backend routes under /api`,
      );
    }
    return this.apiKeys.authenticate(token);
  }
}
