import { Injectable } from '@nestjs/common';
import { CredentialKind, type Authenticated, type CredentialPlugin } from '../../credentials/credential-kind.js';
import type { ProjectTokenPrincipal } from '../principal.js';
import { PROJECT_TOKEN_PREFIX, ProjectSessionTokensService } from '../project-session-tokens.service.js';

/**
 * A project session token (`atp_…`): the backend routes that opted in with @AllowProjectToken(), acting as the user
 * who minted it inside its one project, with at most the token's role. It spends its user's budget: minting tokens
 * does not multiply a user's calls.
 */
@Injectable()
@CredentialKind()
export class ProjectTokenCredential implements CredentialPlugin {
  readonly name = 'project-token';
  readonly via = 'project_token';
  readonly prefixes = [{ prefix: PROJECT_TOKEN_PREFIX, label: 'a project session token', bearer: true }];
  readonly doors = { backend: 'opted-in-routes' } as const;
  readonly invalidMessage =
    'The project session token is invalid or has expired; ask a project owner or editor for a new one';

  constructor(private readonly tokens: ProjectSessionTokensService) {}

  describe(): string {
    return 'a project session token';
  }

  wrongDoor(): string {
    return "Project session tokens (atp_…) work only on their project's document, RAG and agent routes; this route expects a user access token from POST /api/auth/login";
  }

  async authenticate(token: string): Promise<Authenticated | null> {
    const row = await this.tokens.verify(token);
    if (!row) return null;
    const principal: ProjectTokenPrincipal = {
      kind: 'project-token',
      userId: row.createdBy,
      role: 'member',
      projectId: row.projectId,
      tokenId: row.id,
      tokenRole: row.role,
      trackerId: `project-token:${row.id}`,
    };
    return {
      caller: {
        kind: this.name,
        via: this.via,
        credentialId: row.id,
        userId: row.createdBy,
        actor: { userId: row.createdBy, projectIds: [row.projectId], repos: [], projectRoleCap: row.role },
        scopes: [],
        confirmWrites: false,
        expiresAt: null,
        budgetKey: `user:${row.createdBy}`,
      },
      user: principal,
    };
  }

  async liveness(token: string): Promise<{ expiresAt: Date } | null> {
    const row = await this.tokens.verify(token);
    return row ? { expiresAt: row.expiresAt } : null;
  }
}
