import { Injectable } from '@nestjs/common';
import type { Caller } from '../../common/auth/caller.js';
import {
  CredentialKind,
  type Authenticated,
  type CallUsage,
  type CredentialPlugin,
  type PresentedFrom,
} from '../credentials/credential-kind.js';
import { AdminPolicyService } from '../admin-policy/admin-policy.service.js';
import { API_KEY_PREFIX } from './api-key-format.js';
import { ApiKeyUsageRecorder } from './api-key-usage.recorder.js';
import { ApiKeysService } from './api-keys.service.js';
import { KeyCallLimiterService } from './key-call-limiter.service.js';
import { toolCaller, type ToolCallerNaming } from './tool-caller.js';

const NAMING: ToolCallerNaming = { kind: 'api-key', via: 'api_key', budget: 'key' };

/**
 * A personal API key (`atr_…`): both tool doors, no backend route. Its lookup counts the call (the count is also its
 * revocation and expiry check, ApiKeysService.authenticate); it spends its own budget and its owner's
 * (KeyCallLimiterService); its calls go to its usage log; its expiry is reported on every answer. A call from outside
 * the admin policy's or the key's allowedIps is refused 403 ip_not_allowed (AdminPolicyService.assertCallFrom).
 */
@Injectable()
@CredentialKind()
export class ApiKeyCredential implements CredentialPlugin {
  readonly name = NAMING.kind;
  readonly via = NAMING.via;
  readonly prefixes = [{ prefix: API_KEY_PREFIX, label: 'a personal API key', bearer: true }];
  readonly doors = { tools: true } as const;
  readonly position = 1;
  readonly howToGet = 'a personal API key (Authorization: Bearer atr_…, create one with POST /api/api-keys)';
  readonly expected = 'a personal API key (atr_…)';
  readonly invalidMessage = 'The API key is not valid';

  constructor(
    private readonly keys: ApiKeysService,
    private readonly limiter: KeyCallLimiterService,
    private readonly usage: ApiKeyUsageRecorder,
    private readonly policy: AdminPolicyService,
  ) {}

  describe(): string {
    return 'a personal API key';
  }

  wrongDoor(): string {
    return 'API keys (atr_…) work only on the tool API under /api/v1/public/mcp; this route expects a user access token from POST /api/auth/login';
  }

  async authenticate(token: string, from?: PresentedFrom): Promise<Authenticated> {
    const key = await this.keys.authenticate(token);
    // After the lookup: the key's own ranges come with it (the call is counted either way, as an attempt).
    if (from) await this.policy.assertCallFrom(from.ip, key.allowedIps);
    // A rolled key in its overlap reports when it stops working, if that comes before its expiry.
    const endsAt = key.revokedAt && (!key.expiresAt || key.revokedAt < key.expiresAt) ? key.revokedAt : key.expiresAt;
    const caller = toolCaller(NAMING, key, endsAt);
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
