import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, Repository } from 'typeorm';
import { AppException } from '../../common/errors/app.exception.js';
import { pageOf, type Page } from '../../common/pagination/cursor-page.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { generateApiKey, hashApiKey, isWellFormedApiKey, sameHash } from './api-key-format.js';
import type { ApiKeyPrincipal } from './api-key.principal.js';
import { expiryDate } from './api-key-scopes.js';
import { ApiKey } from './api-key.entity.js';
import { ApiKeyCallCounter } from './api-key-call-counter.js';
import { ApiKeyUsageRecorder } from './api-key-usage.recorder.js';
import type { CreateApiKeyDto } from './dto/create-api-key.dto.js';
import { isUuid } from '../../common/validation/uuid.js';
import { ScopeCatalog } from './scope-catalog.js';

export type ApiKeyStatus = 'active' | 'expired' | 'revoked';

export interface ApiKeyView {
  id: string;
  name: string;
  scopes: string[];
  prefix: string;
  createdAt: string;
  expiresAt: string | null;
  daysUntilExpiry: number | null;
  lastUsedAt: string | null;
  callCount: number;
  status: ApiKeyStatus;
  projectIds: string[] | null;
  repos: string[] | null;
  confirmWrites: boolean;
}

export interface ApiKeyUsageView {
  at: string;
  tool: string | null;
  status: number;
  durationMs: number;
}

const DAY_MS = 24 * 3600 * 1000;
const RECENT_USAGE = 50;

interface KeyRow {
  id: string;
  user_id: string;
  scopes: string[];
  project_ids: string[] | null;
  repos: string[] | null;
  confirm_writes: boolean;
  expires_at: Date | null;
  revoked_at: Date | null;
  key_hash: Buffer;
}

@Injectable()
export class ApiKeysService {
  constructor(
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly usage: ApiKeyUsageRecorder,
    private readonly callCounter: ApiKeyCallCounter,
    private readonly scopes: ScopeCatalog,
  ) {}

  async create(userId: string, input: CreateApiKeyDto): Promise<Omit<ApiKeyView, 'daysUntilExpiry' | 'lastUsedAt' | 'callCount' | 'status'> & { key: string }> {
    this.scopes.assertKnown(input.scopes);
    const { key, prefix } = generateApiKey();
    const now = new Date();
    const entity = this.keys.create({
      id: randomUUID(),
      userId,
      name: input.name,
      scopes: [...new Set(input.scopes)],
      prefix,
      keyHash: hashApiKey(key, this.config.secrets.tokenPepper),
      projectIds: input.projectIds ? [...new Set(input.projectIds.map((id) => id.toLowerCase()))] : null,
      repos: input.repos ? [...new Set(input.repos)] : null,
      confirmWrites: input.confirmWrites ?? false,
      expiresAt: expiryDate(input.expiresIn, now),
      revokedAt: null,
      lastUsedAt: null,
      callCount: '0',
      createdAt: now,
    });
    await this.keys.insert(entity);
    return {
      id: entity.id,
      name: entity.name,
      scopes: entity.scopes,
      prefix: entity.prefix,
      createdAt: now.toISOString(),
      expiresAt: entity.expiresAt?.toISOString() ?? null,
      projectIds: entity.projectIds,
      repos: entity.repos,
      confirmWrites: entity.confirmWrites,
      key,
    };
  }

  /** The caller's keys, newest first, a page at a time. */
  async list(userId: string, query: { limit: number; cursor?: string }): Promise<Page<ApiKeyView>> {
    await this.usage.flush();
    const now = new Date();
    return pageOf(this.keys.createQueryBuilder('k').where('k.user_id = :userId', { userId }), query, (row) => this.view(row, now));
  }

  async get(userId: string, id: string): Promise<ApiKeyView & { recentUsage: ApiKeyUsageView[] }> {
    await this.usage.flush();
    const row = await this.findOwned(userId, id);
    const usage: { at: Date; tool: string | null; status: number; duration_ms: number }[] = await this.dataSource.query(
      `SELECT at, tool, status, duration_ms FROM api_key_usage WHERE api_key_id = $1 ORDER BY at DESC, id DESC LIMIT ${RECENT_USAGE}`,
      [row.id],
    );
    return {
      ...this.view(row, new Date()),
      recentUsage: usage.map((u) => ({ at: new Date(u.at).toISOString(), tool: u.tool, status: u.status, durationMs: u.duration_ms })),
    };
  }

  /** Revocation is a column the key lookup reads on every call: no cache can outlive it. */
  async revoke(userId: string, id: string): Promise<{ id: string; status: ApiKeyStatus }> {
    const row = await this.findOwned(userId, id);
    if (!row.revokedAt) await this.keys.update({ id: row.id, userId }, { revokedAt: new Date() });
    return { id: row.id, status: 'revoked' };
  }

  /**
   * Resolves a bearer value to its key and counts the call. The checksum is checked first (no database
   * work for junk or typos); then one indexed lookup by HMAC, compared in constant time. Revocation and
   * expiry are columns read on every call: no cache can outlive them. A usable key's call is counted
   * (committed) before this returns, so a crash never loses the count of an answered call; see
   * ApiKeyCallCounter for how concurrent calls share one write.
   */
  async authenticate(token: string): Promise<ApiKeyPrincipal> {
    if (!isWellFormedApiKey(token)) throw new AppException(ErrorCode.InvalidApiKey, 'The API key is not valid');
    const hash = hashApiKey(token, this.config.secrets.tokenPepper);
    const rows: KeyRow[] = await this.dataSource.query(
      `SELECT id, user_id, scopes, project_ids, repos, confirm_writes, expires_at, revoked_at, key_hash FROM api_keys WHERE key_hash = $1`,
      [hash],
    );
    const row = rows[0];
    if (!row || !sameHash(row.key_hash, hash)) throw new AppException(ErrorCode.InvalidApiKey, 'The API key is not valid');
    const expiresAt = row.expires_at ? new Date(row.expires_at) : null;
    // Every Area A answer to a key with an expiry carries it, refusals included.
    const expiryHeader = expiresAt ? { 'X-Api-Key-Expires-At': expiresAt.toISOString() } : undefined;
    if (row.revoked_at) {
      throw new AppException(ErrorCode.RevokedApiKey, 'The API key has been revoked; create a new one on the account page', {}, expiryHeader);
    }
    if (expiresAt && expiresAt.getTime() <= Date.now()) {
      throw new AppException(ErrorCode.ExpiredApiKey, `The API key expired at ${expiresAt.toISOString()}; create a new one on the account page`, {}, expiryHeader);
    }
    await this.callCounter.count('api-key', row.id);
    return {
      kind: 'api-key',
      credential: 'api-key',
      keyId: row.id,
      userId: row.user_id,
      scopes: row.scopes,
      projectIds: row.project_ids,
      repos: row.repos,
      confirmWrites: row.confirm_writes,
      expiresAt,
      trackerId: `key:${row.id}`,
    };
  }

  private async findOwned(userId: string, id: string): Promise<ApiKey> {
    const row = isUuid(id) ? await this.keys.findOneBy({ id, userId }) : null;
    if (!row) throw AppException.notFound('API key');
    return row;
  }

  private view(row: ApiKey, now: Date): ApiKeyView {
    const status: ApiKeyStatus = row.revokedAt ? 'revoked' : row.expiresAt && row.expiresAt <= now ? 'expired' : 'active';
    return {
      id: row.id,
      name: row.name,
      scopes: row.scopes,
      prefix: row.prefix,
      createdAt: row.createdAt.toISOString(),
      expiresAt: row.expiresAt?.toISOString() ?? null,
      daysUntilExpiry: row.expiresAt ? Math.max(0, Math.ceil((row.expiresAt.getTime() - now.getTime()) / DAY_MS)) : null,
      lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
      callCount: Number(row.callCount),
      status,
      projectIds: row.projectIds,
      repos: row.repos,
      confirmWrites: row.confirmWrites,
    };
  }
}
