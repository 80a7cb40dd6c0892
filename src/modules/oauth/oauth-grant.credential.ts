import { Injectable } from '@nestjs/common';
import type { Caller } from '../../common/auth/caller.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { ApiKeyCallCounterService } from '../api-keys/api-key-call-counter.service.js';
import { ApiKeyUsageRecorder } from '../api-keys/api-key-usage.recorder.js';
import { KeyCallLimiterService } from '../api-keys/key-call-limiter.service.js';
import { toolCaller, type ToolCallerNaming } from '../api-keys/tool-caller.js';
import {
  CredentialKind,
  type Authenticated,
  type CallUsage,
  type CredentialPlugin,
  type PresentedFrom,
} from '../credentials/credential-kind.js';
import { AdminPolicyService } from '../admin-policy/admin-policy.service.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { OAUTH_SECRET_PREFIX } from './oauth-secret-format.js';

const NAMING: ToolCallerNaming = { kind: 'oauth-grant', via: 'oauth', budget: 'grant' };

/**
 * An OAuth grant, presented as its access token (`ato_…`): the tool doors, acting exactly as an API key with the
 * grant's scopes and pins (same budget, usage log and call count). Its refresh token (`atf_…`) is its secret too, but
 * authenticates no call: it is exchanged at /oauth/token.
 */
@Injectable()
@CredentialKind()
export class OAuthGrantCredential implements CredentialPlugin {
  readonly name = NAMING.kind;
  readonly via = NAMING.via;
  readonly prefixes = [
    { prefix: OAUTH_SECRET_PREFIX.accessToken, label: 'an OAuth access token', bearer: true },
    {
      prefix: OAUTH_SECRET_PREFIX.refreshToken,
      label: 'an OAuth refresh token (exchange it at /oauth/token)',
      bearer: false,
    },
  ];
  readonly doors = { tools: true } as const;
  readonly position = 2;
  readonly howToGet = 'an OAuth access token (see /.well-known/oauth-protected-resource)';
  readonly expected = 'an OAuth access token (ato_…)';
  readonly invalidMessage = 'The OAuth access token is not valid';

  constructor(
    private readonly grants: OAuthGrantsService,
    private readonly callCounter: ApiKeyCallCounterService,
    private readonly limiter: KeyCallLimiterService,
    private readonly usage: ApiKeyUsageRecorder,
    private readonly policy: AdminPolicyService,
  ) {}

  describe(token: string): string {
    return this.prefixes.find(({ prefix }) => token.startsWith(prefix))?.label ?? 'an OAuth token';
  }

  wrongDoor(): string {
    return 'OAuth tokens (ato_…/atf_…) work only on the MCP endpoint under /api/v1/public/mcp; this route expects a user access token from POST /api/auth/login';
  }

  /**
   * The grant's lookup reads revocation and expiry; its call is then counted (committed) before the call is answered,
   * and the count refuses a grant revoked or expired meanwhile (ApiKeyCallCounterService makes concurrent calls
   * share one write). A grant of a client the admin policy no longer allows is refused 403 oauth_client_not_allowed,
   * a call from outside the allowed addresses 403 ip_not_allowed.
   */
  async authenticate(token: string, from?: PresentedFrom): Promise<Authenticated> {
    const grant = await this.grants.authenticateAccessToken(token);
    if (!(await this.policy.oauthClientAllowed(grant, true)))
      throw new AppException(
        ErrorCode.OAuthClientNotAllowed,
        `The admin policy no longer allows the app "${grant.clientName}" (allowedOAuthClients)`,
      );
    if (from) await this.policy.assertCallFrom(from.ip, grant.allowedIps);
    if (!(await this.callCounter.count(NAMING.kind, grant.id))) {
      // The grant was revoked or expired between the lookup and the count: a second lookup names which.
      await this.grants.authenticateAccessToken(token);
      throw new AppException(ErrorCode.InvalidApiKey, this.invalidMessage);
    }
    // No X-Api-Key-Expires-At for a grant: its expiry is the app's business (it re-authorises).
    const caller = toolCaller(NAMING, grant, null);
    return { caller, user: { trackerId: caller.budgetKey } };
  }

  spend(caller: Caller): Promise<void> {
    return this.limiter.enforce(caller.credentialId!, caller.userId);
  }

  recordUsage(caller: Caller, usage: CallUsage): void {
    this.usage.record({
      credential: NAMING.kind,
      keyId: caller.credentialId!,
      at: new Date(),
      ...usage,
      clientName: caller.client?.name ?? null,
      clientVersion: caller.client?.version ?? null,
    });
  }
}
