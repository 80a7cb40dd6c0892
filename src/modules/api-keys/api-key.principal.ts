/** A caller of Area A, resolved from a valid personal API key (request.user on Area A routes). */
export interface ApiKeyPrincipal {
  kind: 'api-key';
  keyId: string;
  userId: string;
  scopes: readonly string[];
  projectIds: readonly string[] | null;
  repos: readonly string[] | null;
  expiresAt: Date | null;
  trackerId: string;
}
