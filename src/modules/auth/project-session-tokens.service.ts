import { Inject, Injectable } from '@nestjs/common';
import type { DbExecutor } from '../../database/kysely.provider.js';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import type { ProjectTokenRole } from './principal.js';
import { ProjectSessionTokensRepository, type ProjectSessionToken } from './project-session-tokens.repository.js';

export const PROJECT_TOKEN_PREFIX = 'atp_';
const TOKEN_SHAPE = /^atp_[A-Za-z0-9_-]{43}$/;

export interface MintedProjectToken {
  id: string;
  token: string;
  expiresAt: string;
}

/**
 * Mints and verifies project session tokens. Who may mint one (an owner or editor of the project) is the
 * projects module's decision; this service only handles the credential.
 */
@Injectable()
export class ProjectSessionTokensService {
  constructor(
    private readonly tokens: ProjectSessionTokensRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async mint(
    input: { projectId: string; createdBy: string; name: string; role: ProjectTokenRole; expiresInMinutes: number },
    executor?: DbExecutor,
  ): Promise<MintedProjectToken> {
    const token = `${PROJECT_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(Date.now() + input.expiresInMinutes * 60_000);
    const id = randomUUID();
    await this.tokens.insert({ id, projectId: input.projectId, createdBy: input.createdBy, name: input.name, role: input.role, tokenHash: this.hash(token), expiresAt }, executor);
    return { id, token, expiresAt: expiresAt.toISOString() };
  }

  /** The live token for a presented token, or null (malformed, unknown or expired). */
  async verify(token: string): Promise<ProjectSessionToken | null> {
    if (!TOKEN_SHAPE.test(token)) return null;
    return (await this.tokens.findLiveByHash(this.hash(token))) ?? null;
  }

  private hash(token: string): string {
    // A keyed hash: a leaked table alone cannot be used to check guesses.
    return createHmac('sha256', this.config.secrets.tokenPepper).update(token).digest('hex');
  }
}
