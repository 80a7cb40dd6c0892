import type { Caller } from '../../common/auth/caller.js';
import { credentialRestriction } from '../tool-kit/tool-restriction.js';
import type { ToolCredentialAuthorisation } from './tool-credentials.repository.js';

/**
 * Where a tool credential is stored (which tables ToolCredentialsRepository reads); API keys and OAuth grants act the
 * same way (owner bounds, scopes, pins, per-credential rate limit, usage log and call count).
 */
export type ToolCredentialKind = 'api-key' | 'oauth-grant';

/** How a tool-door kind names its callers: its registered name, its audit `via`, its budget's key prefix. */
export interface ToolCallerNaming {
  kind: ToolCredentialKind;
  via: string;
  budget: string;
}

/** The caller of a usable tool credential; `expiresAt` is what X-Api-Key-Expires-At reports (keys only). */
export function toolCaller(
  naming: ToolCallerNaming,
  authorisation: ToolCredentialAuthorisation,
  expiresAt: Date | null,
): Caller {
  return Object.freeze({
    kind: naming.kind,
    via: naming.via,
    credentialId: authorisation.id,
    userId: authorisation.userId,
    actor: Object.freeze({
      userId: authorisation.userId,
      projectIds: authorisation.projectIds ? Object.freeze([...authorisation.projectIds]) : null,
      repos: authorisation.repos ? Object.freeze([...authorisation.repos]) : null,
    }),
    scopes: Object.freeze([...authorisation.scopes]),
    restriction: credentialRestriction(authorisation),
    confirmWrites: authorisation.confirmWrites,
    expiresAt,
    budgetKey: `${naming.budget}:${authorisation.id}`,
  });
}
