import type { ToolCredentialAuthorisation } from './tool-credentials.repository.js';

/**
 * Which credential an Area A caller presented. Both act the same way (owner bounds, scopes, pins, per-
 * credential rate limit, usage log and call count); they differ only in where they are stored.
 */
export type ToolCredentialKind = 'api-key' | 'oauth-grant';

/** A caller of Area A, resolved from a valid personal API key or OAuth access token (request.user on Area A routes). */
export interface ApiKeyPrincipal {
  kind: 'api-key';
  credential: ToolCredentialKind;
  /** The API key's id, or the OAuth grant's id for an access token: what limits, usage and idempotency are kept per. */
  keyId: string;
  userId: string;
  scopes: readonly string[];
  projectIds: readonly string[] | null;
  repos: readonly string[] | null;
  /** Write tools are confirmed with the user before they run (API.md, "Confirmation on the MCP door"). */
  confirmWrites: boolean;
  expiresAt: Date | null;
  trackerId: string;
}

/** The principal of a usable credential of either kind; `expiresAt` is what X-Api-Key-Expires-At reports (keys only). */
export function toolPrincipal(credential: ToolCredentialKind, authorisation: ToolCredentialAuthorisation, expiresAt: Date | null): ApiKeyPrincipal {
  return {
    kind: 'api-key',
    credential,
    keyId: authorisation.id,
    userId: authorisation.userId,
    scopes: authorisation.scopes,
    projectIds: authorisation.projectIds,
    repos: authorisation.repos,
    confirmWrites: authorisation.confirmWrites,
    expiresAt,
    trackerId: `${credential === 'api-key' ? 'key' : 'grant'}:${authorisation.id}`,
  };
}
