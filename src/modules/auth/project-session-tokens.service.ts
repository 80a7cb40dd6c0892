import { Inject, Injectable } from '@nestjs/common';
import type { DbExecutor } from '../../database/kysely.provider.js';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import type { ProjectTokenRole } from './principal.js';
import { toPage, type Page, type PageQuery } from '../../common/pagination/cursor-page.js';
import { ProjectSessionTokensRepository, type ProjectSessionToken } from './project-session-tokens.repository.js';

export const PROJECT_TOKEN_PREFIX = 'atp_';
const TOKEN_SHAPE = /^atp_[A-Za-z0-9_-]{43}$/;
/** Display prefix: the first 8 characters after `atp_` (as for API keys), enough to tell tokens apart, useless to an attacker. */
const DISPLAY_PREFIX_LENGTH = 8;
/** A token's last use is recorded at most this often per instance (one write a minute, not one per call). */
const TOUCH_EVERY_MS = 60_000;

/** A token as the project's token list shows it: no secret, no hash. */
export interface ProjectSessionTokenView {
  id: string;
  name: string;
  role: ProjectTokenRole;
  prefix: string | null;
  createdAt: string;
  expiresAt: string;
  lastUsedAt: string | null;
  createdBy: string;
}

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
    const prefix = token.slice(PROJECT_TOKEN_PREFIX.length, PROJECT_TOKEN_PREFIX.length + DISPLAY_PREFIX_LENGTH);
    await this.tokens.insert(
      {
        id,
        projectId: input.projectId,
        createdBy: input.createdBy,
        name: input.name,
        role: input.role,
        tokenHash: this.hash(token),
        prefix,
        expiresAt,
      },
      executor,
    );
    return { id, token, expiresAt: expiresAt.toISOString() };
  }

  /** The live token for a presented token, or null (malformed, unknown, expired or revoked: read from the row every call). */
  async verify(token: string): Promise<ProjectSessionToken | null> {
    if (!TOKEN_SHAPE.test(token)) return null;
    const live = await this.tokens.findLiveByHash(this.hash(token));
    if (!live) return null;
    if (live.lastUsedAt === null || Date.now() - live.lastUsedAt.getTime() > TOUCH_EVERY_MS) {
      // Behind the answer: a lost update only makes lastUsedAt a little older.
      this.tokens.touch(live.id).catch(() => undefined);
    }
    return live;
  }

  /** The project's live tokens, newest first (who may list them is the projects module's decision). */
  async list(projectId: string, page: PageQuery): Promise<Page<ProjectSessionTokenView>> {
    const rows = await this.tokens.pageLive(projectId, page);
    return toPage(rows, page.limit, (row) => ({
      id: row.id,
      name: row.name,
      role: row.role,
      prefix: row.prefix,
      createdAt: row.createdAt.toISOString(),
      expiresAt: row.expiresAt.toISOString(),
      lastUsedAt: row.lastUsedAt ? row.lastUsedAt.toISOString() : null,
      createdBy: row.createdBy,
    }));
  }

  /** Revokes a live token of the project; undefined when there is none. Effective on the next call, on every instance. */
  revoke(
    projectId: string,
    tokenId: string,
    executor?: DbExecutor,
  ): Promise<{ id: string; name: string; role: string } | undefined> {
    return this.tokens.revoke(projectId, tokenId, executor);
  }

  private hash(token: string): string {
    // A keyed hash: a leaked table alone cannot be used to check guesses.
    return createHmac('sha256', this.config.secrets.tokenPepper).update(token).digest('hex');
  }
}
