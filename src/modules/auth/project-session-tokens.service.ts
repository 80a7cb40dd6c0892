import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { MoreThan, Repository } from 'typeorm';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ProjectSessionToken, type ProjectTokenRole } from './project-session-token.entity.js';

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
    @InjectRepository(ProjectSessionToken) private readonly tokens: Repository<ProjectSessionToken>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async mint(input: { projectId: string; createdBy: string; name: string; role: ProjectTokenRole; expiresInMinutes: number }): Promise<MintedProjectToken> {
    const token = `${PROJECT_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(Date.now() + input.expiresInMinutes * 60_000);
    const row = this.tokens.create({
      id: randomUUID(),
      projectId: input.projectId,
      createdBy: input.createdBy,
      name: input.name,
      role: input.role,
      tokenHash: this.hash(token),
      expiresAt,
    });
    await this.tokens.insert(row);
    return { id: row.id, token, expiresAt: expiresAt.toISOString() };
  }

  /** The live token row for a presented token, or null (malformed, unknown or expired). */
  async verify(token: string): Promise<ProjectSessionToken | null> {
    if (!TOKEN_SHAPE.test(token)) return null;
    return this.tokens.findOneBy({ tokenHash: this.hash(token), expiresAt: MoreThan(new Date()) });
  }

  private hash(token: string): string {
    // A keyed hash: a leaked table alone cannot be used to check guesses.
    return createHmac('sha256', this.config.secrets.tokenPepper).update(token).digest('hex');
  }
}
