import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { isRepoAllowed } from '../../common/access/access-rules.js';
import { type Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { toPage, type Page, type PageQuery } from '../../common/pagination/cursor-page.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { isUniqueViolation } from '../../database/pg-errors.js';
import { AuditService } from '../audit/audit.service.js';
import { GithubClientFactory } from './github-client.factory.js';
import { describeFailure } from './github-errors.js';
import { GithubReposRepository, type RegisteredRepo } from './github-repos.repository.js';
import { TokenCipher } from './token-cipher.js';
import { isRepoFullName } from '../../common/validation/repo.js';

/** What admins see of a registered repository. The token never appears, only where it comes from. */
export interface RegisteredRepoView {
  id: string;
  fullName: string;
  defaultBranch: string;
  description: string | null;
  private: boolean;
  tokenSource: 'repository' | 'server';
  createdBy: string | null;
  createdAt: string;
}

/** A registered repository ready to be called, with the token to call it with. Never leaves the module. */
export interface ResolvedRepo {
  record: RegisteredRepo;
  /** Decrypted per-repository token; undefined = the server's GITHUB_TOKEN. */
  token: string | undefined;
}

/** The admin-managed registry of shared repositories; the only way the GitHub tools reach a repository. */
@Injectable()
export class GithubReposService {
  private readonly logger = new Logger('GitHub');

  constructor(
    private readonly repos: GithubReposRepository,
    private readonly clients: GithubClientFactory,
    private readonly cipher: TokenCipher,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly audit: AuditService,
    @InjectDb() private readonly db: Db,
  ) {}

  /** Checks the repository with GitHub (with the given token or the server's), then stores it. */
  async register(input: { owner: string; name: string; token?: string }, adminId: string): Promise<RegisteredRepoView> {
    const requested = `${input.owner}/${input.name}`;
    if (await this.findByFullName(requested)) throw this.duplicate(requested);
    if (input.token === undefined && !this.config.github.token) {
      this.logger.warn({
        msg: 'registering a repository without a token and without GITHUB_TOKEN; calls will be anonymous',
        repository: requested,
      });
    }

    let github: {
      id: number;
      full_name: string;
      default_branch: string;
      description: string | null;
      private: boolean;
      permissions?: { pull?: boolean };
    };
    try {
      github = (await this.clients.create(input.token).rest.repos.get({ owner: input.owner, repo: input.name })).data;
    } catch (error) {
      throw this.registrationFailure(error, requested);
    }
    if (github.permissions && github.permissions.pull === false) {
      throw AppException.validation(`The token cannot read ${github.full_name} on GitHub`, [
        { field: 'token', message: 'token lacks read access' },
      ]);
    }
    if (github.full_name.toLowerCase() !== requested.toLowerCase() && (await this.findByFullName(github.full_name))) {
      // GitHub redirected a renamed repository to one that is already registered.
      throw this.duplicate(github.full_name);
    }

    const id = randomUUID();
    const [owner, name] = github.full_name.split('/');
    const tokenCiphertext = input.token === undefined ? null : this.cipher.encrypt(input.token, id);
    try {
      await this.db.transaction().execute(async (trx) => {
        await this.repos.insert(
          {
            id,
            owner,
            name,
            fullName: github.full_name,
            githubId: String(github.id),
            defaultBranch: github.default_branch,
            description: github.description,
            isPrivate: github.private,
            tokenCiphertext,
            createdBy: adminId,
          },
          trx,
        );
        // Never the token: only where it comes from.
        await this.audit.recordChange(trx, {
          action: 'github_repo.register',
          target: { type: 'github_repo', id },
          details: { fullName: github.full_name, tokenSource: tokenCiphertext ? 'repository' : 'server' },
          onBehalfOf: adminId,
        });
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw this.duplicate(github.full_name);
      throw error;
    }
    const saved = await this.repos.findById(id);
    if (!saved) throw AppException.notFound('Registered repository'); // unregistered by another admin in between
    this.logger.log({
      msg: 'github repository registered',
      repository: saved.fullName,
      id,
      tokenSource: tokenCiphertext ? 'repository' : 'server',
    });
    return toRegisteredRepoView(saved);
  }

  async list(query: PageQuery): Promise<Page<RegisteredRepoView>> {
    return toPage(await this.repos.page(query), query.limit, toRegisteredRepoView);
  }

  async remove(id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.db.transaction().execute(async (trx) => {
      if (!(await this.repos.delete(id, trx))) return false;
      await this.audit.recordChange(trx, { action: 'github_repo.delete', target: { type: 'github_repo', id } });
      return true;
    });
    if (!deleted) throw AppException.notFound('Registered repository');
    this.logger.log({ msg: 'github repository unregistered', id });
    return { id, deleted: true };
  }

  /** Every registered repository the actor may see (key `repos` pins apply), by name. */
  listForActor(actor: Actor): Promise<RegisteredRepo[]> {
    return this.repos.listVisible(actor);
  }

  /**
   * The registered repository named by a tool's `repo` argument, with its token. Unregistered, or
   * outside the actor's pins: not_found, and GitHub is never called.
   */
  async resolveForActor(actor: Actor, repo: string): Promise<ResolvedRepo> {
    const fullName = typeof repo === 'string' ? repo.trim() : '';
    if (!isRepoFullName(fullName)) {
      throw new AppException(ErrorCode.InvalidArgument, 'repo must be "owner/name" of a registered repository', {
        argument: 'repo',
      });
    }
    const found = await this.repos.findByFullNameWithToken(fullName);
    if (!found || !isRepoAllowed(actor, found.repo.fullName)) {
      throw new AppException(
        ErrorCode.NotFound,
        `Repository ${fullName} is not registered; call list_repositories for the available ones`,
      );
    }
    return { record: found.repo, token: this.decryptToken(found.repo, found.tokenCiphertext) };
  }

  private decryptToken(record: RegisteredRepo, tokenCiphertext: string | null): string | undefined {
    if (tokenCiphertext === null) return undefined;
    try {
      return this.cipher.decrypt(tokenCiphertext, record.id);
    } catch {
      // Wrong ENCRYPTION_KEY (e.g. DATA_DIR/secrets.json replaced) or a damaged row: say so, without the token.
      this.logger.error({ msg: 'stored GitHub token cannot be decrypted', repository: record.fullName });
      throw new AppException(
        ErrorCode.UpstreamError,
        `The stored token for ${record.fullName} cannot be decrypted (was ENCRYPTION_KEY changed?); an admin must register the repository again`,
        { upstream: 'github', upstream_status: null, repository: record.fullName },
      );
    }
  }

  private findByFullName(fullName: string): Promise<RegisteredRepo | undefined> {
    return this.repos.findByFullName(fullName);
  }

  private duplicate(fullName: string): AppException {
    return new AppException(ErrorCode.Conflict, `Repository ${fullName} is already registered`);
  }

  /** Area B answers 400 with GitHub's reason (429 stays a rate limit so the admin knows to wait). */
  private registrationFailure(error: unknown, repository: string): AppException {
    if (error instanceof AppException) return error;
    const failure = describeFailure(error);
    if (failure.retryAfterSeconds !== undefined) {
      return new AppException(
        ErrorCode.RateLimited,
        `GitHub rate limited the check of ${repository}; retry in ${failure.retryAfterSeconds} s`,
        { upstream: 'github', upstreamStatus: failure.status },
        { 'Retry-After': String(failure.retryAfterSeconds) },
      );
    }
    // Atrium's own words for the status; GitHub's body (and whatever it echoes) is never passed on.
    let reason: string;
    switch (failure.status) {
      case null:
        reason = failure.timedOut
          ? `GitHub did not answer within ${this.config.github.timeoutMs} ms`
          : `GitHub at ${this.config.github.apiUrl} is unreachable`;
        if (!failure.timedOut)
          this.logger.warn({
            msg: 'GitHub unreachable while registering a repository',
            repository,
            reason: failure.reason,
          });
        break;
      case 401:
        reason = 'GitHub rejected the token (HTTP 401)';
        break;
      case 403:
        reason = `The token has no access to ${repository} (GitHub HTTP 403)`;
        break;
      case 404:
        reason = `Repository ${repository} does not exist on GitHub or the token cannot see it (GitHub 404)`;
        break;
      default:
        reason = `GitHub answered HTTP ${failure.status} for ${repository}`;
    }
    return AppException.validation(`Cannot register ${repository}: ${reason}`, [
      {
        field: failure.status === 401 || failure.status === 403 ? 'token' : 'repository',
        message: reason,
        upstreamStatus: failure.status,
      },
    ]);
  }
}

export function toRegisteredRepoView(row: RegisteredRepo): RegisteredRepoView {
  return {
    id: row.id,
    fullName: row.fullName,
    defaultBranch: row.defaultBranch,
    description: row.description,
    private: row.isPrivate,
    tokenSource: row.hasOwnToken ? 'repository' : 'server',
    createdBy: row.createdBy,
    createdAt: row.createdAt.toISOString(),
  };
}
