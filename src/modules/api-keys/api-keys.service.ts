import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppException } from '../../common/errors/app.exception.js';
import { encodeCursor, type Page } from '../../common/pagination/cursor-page.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import { AuditService } from '../audit/audit.service.js';
import { generateApiKey, hashApiKey, isWellFormedApiKey, sameHash } from './api-key-format.js';
import { expiryDate } from './api-key-scopes.js';
import { ApiKeysRepository, type ApiKey, type NewApiKey } from './api-keys.repository.js';
import { AdminPolicyService } from '../admin-policy/admin-policy.service.js';
import type { PolicyRule } from '../admin-policy/admin-policy.js';
import { ApiKeyCallCounterService } from './api-key-call-counter.service.js';
import { ApiKeyUsageRecorder } from './api-key-usage.recorder.js';
import type { CreateApiKeyDto } from './dto/create-api-key.dto.js';
import { isUuid } from '../../common/validation/uuid.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import { ToolRegistry } from '../tool-kit/tool-registry.js';
import { checkedAllowlist } from '../tool-kit/tool-restriction.js';
import { toToolCredentialView, type ToolCredentialView } from './tool-credential-view.js';
import { ToolCredentialsRepository, type ToolCredentialAuthorisation } from './tool-credentials.repository.js';
import { VerifiedKeyCache } from './verified-key-cache.js';

export type ApiKeyStatus = 'active' | 'expired' | 'revoked';

export interface ApiKeyView extends ToolCredentialView {
  name: string;
  prefix: string;
  daysUntilExpiry: number | null;
  status: ApiKeyStatus;
  /** The key that replaced this one by a roll; null when it was not rolled. */
  rolledTo: string | null;
  /** When a rolled key stops working (its overlap's end); null otherwise. */
  retiresAt: string | null;
  /** The admin policy's rules this key breaks (it keeps working; a new key could not be made like it). */
  outOfPolicy: PolicyRule[];
}

/** How long a rolled key keeps working beside its successor. */
export const ROLL_OVERLAPS = { '1h': 3600_000, '24h': 24 * 3600_000, '7d': 7 * 24 * 3600_000 } as const;
export type RollOverlap = keyof typeof ROLL_OVERLAPS;

type CreatedApiKey = Omit<
  ApiKeyView,
  'daysUntilExpiry' | 'lastUsedAt' | 'callCount' | 'status' | 'rolledTo' | 'retiresAt' | 'outOfPolicy'
> & { key: string };

export interface ApiKeyUsageView {
  at: string;
  tool: string | null;
  status: number;
  durationMs: number;
  clientName: string | null;
  clientVersion: string | null;
}

/** A key of any user that breaks the admin policy, as the admin's view lists it. */
export interface OutOfPolicyKeyView {
  id: string;
  userId: string;
  userEmail: string;
  name: string;
  prefix: string;
  scopes: string[];
  confirmWrites: boolean;
  createdAt: string;
  expiresAt: string | null;
  outOfPolicy: PolicyRule[];
}

const DAY_MS = 24 * 3600 * 1000;
/** Keys judged per statement, and at most per request, when the admin lists keys out of policy. */
const SCAN_BATCH = 200;
const OUT_OF_POLICY_SCAN = 5000;
const RECENT_USAGE = 50;

@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly credentials: ToolCredentialsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly usage: ApiKeyUsageRecorder,
    private readonly scopes: ScopeCatalog,
    private readonly callCounter: ApiKeyCallCounterService,
    private readonly verified: VerifiedKeyCache,
    private readonly audit: AuditService,
    @InjectDb() private readonly db: Db,
    private readonly registry: ToolRegistry,
    private readonly policy: AdminPolicyService,
  ) {}

  async create(userId: string, input: CreateApiKeyDto): Promise<CreatedApiKey> {
    this.scopes.assertKnown(input.scopes);
    const tools = checkedAllowlist(input.tools, input.scopes, (name) => this.registry.get(name));
    const now = new Date();
    const access = {
      name: input.name,
      scopes: [...new Set(input.scopes)],
      projectIds: input.projectIds ? [...new Set(input.projectIds.map((id) => id.toLowerCase()))] : null,
      repos: input.repos ? [...new Set(input.repos)] : null,
      confirmWrites: input.confirmWrites ?? false,
      tools,
      readOnly: input.readOnly ?? false,
      allowedIps: input.allowedIps ? this.policy.cidrList(input.allowedIps, 'allowedIps') : null,
      expiresAt: expiryDate(input.expiresIn, now),
    };
    await this.policy.assertNewKeyAllowed({ ...access, createdAt: now });
    // Read before the transaction: with a one-connection pool, a read beside it would wait for it forever.
    const cap = await this.policy.maxCredentialsPerUser();
    return this.db.transaction().execute(async (trx) => {
      await this.assertUnderCap(userId, cap, 0, trx);
      return this.insert(userId, access, now, trx, 'api_key.create');
    });
  }

  /**
   * A new key with the same name, scopes, pins, settings and expiry; the old one keeps working until the overlap
   * ends (its revocation time is set in the future, which every call's count reads), then answers 401
   * revoked_api_key. A key already rolled, revoked or expired is 409; another user's is 404. The new key must fit
   * the admin policy as a new key would.
   */
  async roll(userId: string, id: string, overlap: RollOverlap): Promise<CreatedApiKey & { retiresAt: string }> {
    const old = await this.findOwned(userId, id);
    const now = new Date();
    if (old.rolledTo) throw new AppException(ErrorCode.Conflict, `This key was already rolled to ${old.rolledTo}`);
    if (old.revokedAt) throw new AppException(ErrorCode.Conflict, 'A revoked key cannot be rolled; create a new one');
    if (old.expiresAt && old.expiresAt <= now)
      throw new AppException(ErrorCode.Conflict, 'An expired key cannot be rolled; create a new one');
    const access = {
      name: old.name,
      scopes: old.scopes,
      projectIds: old.projectIds,
      repos: old.repos,
      confirmWrites: old.confirmWrites,
      tools: old.tools,
      readOnly: old.readOnly,
      allowedIps: old.allowedIps,
      // The same lifetime the old key was given, counted from now (a key that never expires still does not).
      expiresAt: old.expiresAt && new Date(now.getTime() + (old.expiresAt.getTime() - old.createdAt.getTime())),
    };
    await this.policy.assertNewKeyAllowed({ ...access, createdAt: now });
    const retiresAt = new Date(now.getTime() + ROLL_OVERLAPS[overlap]);
    const cap = await this.policy.maxCredentialsPerUser();
    return this.db.transaction().execute(async (trx) => {
      // The key being rolled is replaced, so it is not counted; a key still in its overlap is, which bounds how
      // many working keys a chain of rolls can make.
      await this.assertUnderCap(userId, cap, 1, trx);
      const created = await this.insert(userId, access, now, trx);
      // Another roll or a revocation of the same key meanwhile: only the first wins.
      if (!(await this.keys.markRolled(userId, old.id, created.id, retiresAt, trx)))
        throw new AppException(ErrorCode.Conflict, 'This key was revoked or rolled meanwhile');
      await this.audit.recordChange(trx, {
        action: 'api_key.roll',
        target: { type: 'api_key', id: old.id },
        details: { oldKeyId: old.id, newKeyId: created.id, overlap, oldKeyRetiresAt: retiresAt.toISOString() },
        onBehalfOf: userId,
      });
      return { ...created, retiresAt: retiresAt.toISOString() };
    });
  }

  /** 409 when the user holds `cap` (the admin policy's maxCredentialsPerUser) usable credentials, `replaced` aside. */
  private async assertUnderCap(userId: string, cap: number, replaced: number, trx: DbExecutor): Promise<void> {
    if ((await this.credentials.countActiveLocked(userId, trx)) - replaced >= cap)
      throw new AppException(
        ErrorCode.Conflict,
        `You already have ${cap} active API keys and OAuth grants (the admin policy's maxCredentialsPerUser); revoke one first`,
        { limit: cap },
      );
  }

  private async insert(
    userId: string,
    access: Omit<NewApiKey, 'id' | 'userId' | 'prefix' | 'keyHash' | 'createdAt'>,
    now: Date,
    trx: DbExecutor,
    audited?: 'api_key.create',
  ): Promise<CreatedApiKey> {
    const { key, prefix } = generateApiKey();
    const created: NewApiKey = {
      ...access,
      id: randomUUID(),
      userId,
      prefix,
      keyHash: hashApiKey(key, this.config.secrets.tokenPepper),
      createdAt: now,
    };
    await this.keys.insert(created, trx);
    if (audited)
      await this.audit.recordChange(trx, {
        action: audited,
        target: { type: 'api_key', id: created.id },
        details: {
          name: created.name,
          scopes: created.scopes,
          projectIds: created.projectIds,
          repos: created.repos,
          confirmWrites: created.confirmWrites,
          tools: created.tools,
          readOnly: created.readOnly,
          allowedIps: created.allowedIps,
          expiresAt: created.expiresAt?.toISOString() ?? null,
        },
        onBehalfOf: userId,
      });
    return {
      id: created.id,
      name: created.name,
      scopes: created.scopes,
      prefix: created.prefix,
      createdAt: now.toISOString(),
      expiresAt: created.expiresAt?.toISOString() ?? null,
      projectIds: created.projectIds,
      repos: created.repos,
      confirmWrites: created.confirmWrites,
      tools: created.tools,
      readOnly: created.readOnly,
      allowedIps: created.allowedIps,
      key,
    };
  }

  /** The caller's keys, newest first, a page at a time. */
  async list(userId: string, query: { limit: number; cursor?: string }): Promise<Page<ApiKeyView>> {
    await this.usage.flush();
    const now = new Date();
    const page = await this.credentials.pageOwned(
      'api-key',
      userId,
      query,
      ['name', 'prefix', 'rolledTo'],
      (credential, own) => ({ ...credential, name: own.name, prefix: own.prefix, rolledTo: own.rolledTo }),
    );
    const broken = await this.policy.violations(page.items);
    return { ...page, items: page.items.map((row, i) => this.view(row, now, broken[i])) };
  }

  async get(userId: string, id: string): Promise<ApiKeyView & { recentUsage: ApiKeyUsageView[] }> {
    await this.usage.flush();
    const row = await this.findOwned(userId, id);
    const usage = await this.credentials.recentUsage('api-key', row.id, RECENT_USAGE);
    const [broken] = await this.policy.violations([row]);
    return {
      ...this.view(row, new Date(), broken),
      recentUsage: usage.map((u) => ({
        at: u.at.toISOString(),
        tool: u.tool,
        status: u.status,
        durationMs: u.durationMs,
        clientName: u.clientName,
        clientVersion: u.clientVersion,
      })),
    };
  }

  /**
   * The admin's view: everyone's usable keys that break the admin policy, newest first, with the rules each breaks.
   * Keys are scanned a batch at a time and judged by the policy's own rule (keyPolicyViolations), so a page may
   * hold fewer items than asked for; `nextCursor` continues the scan.
   */
  async outOfPolicy(query: { limit: number; cursor?: string }): Promise<Page<OutOfPolicyKeyView>> {
    const items: OutOfPolicyKeyView[] = [];
    let cursor = query.cursor;
    for (let scanned = 0; scanned < OUT_OF_POLICY_SCAN && items.length < query.limit; scanned += SCAN_BATCH) {
      const rows = await this.keys.pageUsable({ limit: SCAN_BATCH, cursor });
      const batch = rows.slice(0, SCAN_BATCH);
      const broken = await this.policy.violations(batch);
      for (const [i, row] of batch.entries()) {
        if (broken[i].length === 0) continue;
        items.push({
          id: row.id,
          userId: row.userId,
          userEmail: row.userEmail,
          name: row.name,
          prefix: row.prefix,
          scopes: row.scopes,
          confirmWrites: row.confirmWrites,
          createdAt: row.createdAt.toISOString(),
          expiresAt: row.expiresAt?.toISOString() ?? null,
          outOfPolicy: broken[i],
        });
        cursor = encodeCursor(row);
        if (items.length === query.limit) break;
      }
      if (items.length === query.limit) return { items, nextCursor: rows.length > 0 ? cursor! : null };
      if (rows.length <= SCAN_BATCH) return { items, nextCursor: null };
      cursor = encodeCursor(batch[batch.length - 1]);
    }
    return { items, nextCursor: cursor ?? null };
  }

  /** Revocation is a column the statement counting each call reads (see authenticate): no cache can outlive it. */
  async revoke(userId: string, id: string): Promise<{ id: string; status: ApiKeyStatus }> {
    const revoked = isUuid(id)
      ? await this.db.transaction().execute(async (trx) => {
          const revokedId = await this.credentials.revokeOwned('api-key', userId, id, trx);
          if (revokedId)
            await this.audit.recordChange(trx, {
              action: 'api_key.revoke',
              target: { type: 'api_key', id: revokedId },
              onBehalfOf: userId,
            });
          return revokedId;
        })
      : undefined;
    if (!revoked) throw AppException.notFound('API key');
    return { id: revoked, status: 'revoked' };
  }

  /**
   * Resolves a bearer value to its key and counts the call (committed before the call is answered). The
   * checksum is checked first (no database work for junk or typos). A key this process verified before is
   * known by its HMAC (VerifiedKeyCache), so its call costs one statement: the count, which itself refuses a
   * revoked or expired key and returns the key's scopes and pins as stored now; revocation and expiry therefore
   * hold on the very next call on every instance. Otherwise, or when the count refuses, one indexed lookup by
   * HMAC compared in constant time names the precise refusal (revoked, expired, invalid).
   */
  async authenticate(token: string): Promise<ToolCredentialAuthorisation> {
    if (!isWellFormedApiKey(token)) throw new AppException(ErrorCode.InvalidApiKey, 'The API key is not valid');
    const hash = hashApiKey(token, this.config.secrets.tokenPepper);
    const knownId = this.verified.idOf(hash);
    if (knownId !== undefined) {
      const current = usable(await this.callCounter.count('api-key', knownId));
      if (current) return current;
      this.verified.forget(hash);
    }
    const key = await this.lookup(hash);
    const current = usable(await this.callCounter.count('api-key', key.id));
    // Revoked or expired between the lookup and the count: a second lookup names which.
    if (!current)
      throw (
        (await this.lookup(hash).then(
          () => undefined,
          (error: unknown) => error,
        )) ?? new AppException(ErrorCode.InvalidApiKey, 'The API key is not valid')
      );
    this.verified.remember(hash, key.id);
    return current;
  }

  /** The usable key with this HMAC, or the refusal: invalid, revoked (401) or expired (401). */
  private async lookup(hash: Buffer): Promise<ToolCredentialAuthorisation> {
    const found = await this.keys.findByHash(hash);
    if (!found || !sameHash(found.keyHash, hash))
      throw new AppException(ErrorCode.InvalidApiKey, 'The API key is not valid');
    const key = found.authorisation;
    // Every Area A answer to a key with an expiry carries it, refusals included.
    const expiryHeader = key.expiresAt ? { 'X-Api-Key-Expires-At': key.expiresAt.toISOString() } : undefined;
    if (key.revokedAt && key.revokedAt.getTime() <= Date.now()) {
      throw new AppException(
        ErrorCode.RevokedApiKey,
        'The API key has been revoked; create a new one on the account page',
        {},
        expiryHeader,
      );
    }
    if (key.expiresAt && key.expiresAt.getTime() <= Date.now()) {
      throw new AppException(
        ErrorCode.ExpiredApiKey,
        `The API key expired at ${key.expiresAt.toISOString()}; create a new one on the account page`,
        {},
        expiryHeader,
      );
    }
    return key;
  }

  private async findOwned(userId: string, id: string): Promise<ApiKey> {
    const row = isUuid(id) ? await this.keys.findOwned(userId, id) : undefined;
    if (!row) throw AppException.notFound('API key');
    return row;
  }

  private view(row: ApiKey, now: Date, outOfPolicy: PolicyRule[] = []): ApiKeyView {
    const status: ApiKeyStatus =
      row.revokedAt && row.revokedAt <= now ? 'revoked' : row.expiresAt && row.expiresAt <= now ? 'expired' : 'active';
    return {
      ...toToolCredentialView(row),
      name: row.name,
      prefix: row.prefix,
      daysUntilExpiry: row.expiresAt
        ? Math.max(0, Math.ceil((row.expiresAt.getTime() - now.getTime()) / DAY_MS))
        : null,
      status,
      rolledTo: row.rolledTo,
      retiresAt: row.rolledTo && row.revokedAt && row.revokedAt > now ? row.revokedAt.toISOString() : null,
      outOfPolicy: status === 'active' ? outOfPolicy : [],
    };
  }
}

/** The counted authorisation if it is still usable by this process's clock too (the count used the database's). */
function usable(counted: ToolCredentialAuthorisation | undefined): ToolCredentialAuthorisation | undefined {
  const now = Date.now();
  return counted &&
    !(counted.revokedAt && counted.revokedAt.getTime() <= now) &&
    !(counted.expiresAt && counted.expiresAt.getTime() <= now)
    ? counted
    : undefined;
}
