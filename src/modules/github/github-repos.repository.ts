import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { visibleRepo } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import { pageOrder, type PageQuery } from '../../common/pagination/cursor-page.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';

/** A repository an admin registered; the GitHub tools only ever reach these. */
export interface RegisteredRepo {
  id: string;
  owner: string;
  name: string;
  /** `owner/name` as GitHub spells it; unique case-insensitively. */
  fullName: string;
  /** bigint comes back from pg as a string; GitHub ids exceed 2^31. */
  githubId: string;
  defaultBranch: string;
  description: string | null;
  isPrivate: boolean;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** Whether the repository has its own (encrypted) token; the ciphertext itself only comes from {@link GithubReposRepository.findByFullNameWithToken}. */
  hasOwnToken: boolean;
}

export interface NewRegisteredRepo extends Omit<RegisteredRepo, 'createdAt' | 'updatedAt' | 'hasOwnToken'> {
  /** AES-256-GCM envelope from TokenCipher; null = use the server's GITHUB_TOKEN. */
  tokenCiphertext: string | null;
}

const COLUMNS = [
  'r.id',
  'r.owner',
  'r.name',
  'r.fullName',
  'r.githubId',
  'r.defaultBranch',
  'r.description',
  'r.isPrivate',
  'r.createdBy',
  'r.createdAt',
  'r.updatedAt',
] as const;

/** The github_repositories table. The token ciphertext is read by one method only, the one that calls GitHub. */
@Injectable()
export class GithubReposRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async insert(repo: NewRegisteredRepo, executor: DbExecutor = this.db): Promise<void> {
    await executor
      .insertInto('githubRepositories')
      .values({
        id: repo.id,
        owner: repo.owner,
        name: repo.name,
        fullName: repo.fullName,
        githubId: repo.githubId,
        defaultBranch: repo.defaultBranch,
        description: repo.description,
        isPrivate: repo.isPrivate,
        tokenCiphertext: repo.tokenCiphertext,
        createdBy: repo.createdBy,
      })
      .execute();
  }

  async findById(id: string): Promise<RegisteredRepo | undefined> {
    return this.select().where('r.id', '=', id).executeTakeFirst();
  }

  /** By `owner/name` in any case. */
  async findByFullName(fullName: string): Promise<RegisteredRepo | undefined> {
    return this.select()
      .where((eb) => eb(eb.fn('lower', ['r.fullName']), '=', eb.fn('lower', [eb.val(fullName)])))
      .executeTakeFirst();
  }

  /** By `owner/name` in any case, with the stored token ciphertext (null = the server's token). */
  async findByFullNameWithToken(
    fullName: string,
  ): Promise<{ repo: RegisteredRepo; tokenCiphertext: string | null } | undefined> {
    const row = await this.select()
      .select('r.tokenCiphertext')
      .where((eb) => eb(eb.fn('lower', ['r.fullName']), '=', eb.fn('lower', [eb.val(fullName)])))
      .executeTakeFirst();
    if (!row) return undefined;
    const { tokenCiphertext, ...repo } = row;
    return { repo, tokenCiphertext };
  }

  /** One page of every registered repository (admins), newest first; `limit + 1` rows, see pageOrder. */
  async page(query: PageQuery): Promise<RegisteredRepo[]> {
    return pageOrder(this.select(), 'r', query).execute();
  }

  /** Every registered repository the actor may reach (its `repos` pins), by name. */
  async listVisible(actor: Actor): Promise<RegisteredRepo[]> {
    return this.select()
      .where(visibleRepo(actor, 'r'))
      .orderBy((eb) => eb.fn('lower', ['r.fullName']), 'asc')
      .execute();
  }

  async delete(id: string, executor: DbExecutor = this.db): Promise<boolean> {
    const result = await executor.deleteFrom('githubRepositories').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  private select() {
    return this.db
      .selectFrom('githubRepositories as r')
      .select(COLUMNS)
      .select(sql<boolean>`r.token_ciphertext IS NOT NULL`.as('hasOwnToken'));
  }
}
