import type { ToolCredential } from './tool-credentials.repository.js';

/** What the account page shows of any tool credential, API key or connected app (OAuth grant). */
export interface ToolCredentialView {
  id: string;
  scopes: string[];
  projectIds: string[] | null;
  repos: string[] | null;
  confirmWrites: boolean;
  tools: string[] | null;
  readOnly: boolean;
  /** Client address ranges it may be used from; null: wherever the admin policy allows. */
  allowedIps: string[] | null;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  callCount: number;
}

export function toToolCredentialView(credential: ToolCredential): ToolCredentialView {
  return {
    id: credential.id,
    scopes: credential.scopes,
    projectIds: credential.projectIds,
    repos: credential.repos,
    confirmWrites: credential.confirmWrites,
    tools: credential.tools,
    readOnly: credential.readOnly,
    allowedIps: credential.allowedIps,
    createdAt: credential.createdAt.toISOString(),
    expiresAt: credential.expiresAt?.toISOString() ?? null,
    lastUsedAt: credential.lastUsedAt?.toISOString() ?? null,
    callCount: credential.callCount,
  };
}
