import { Inject, Injectable } from '@nestjs/common';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { AuditService } from '../audit/audit.service.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import {
  addressInRanges,
  canonicalCidr,
  keyPolicyViolations,
  oauthClientAllowed,
  type AdminPolicy,
  type KeyUnderPolicy,
  type PolicyRule,
} from './admin-policy.js';
import { AdminPolicyRepository } from './admin-policy.repository.js';
import type { UpdateAdminPolicyDto } from './dto/update-admin-policy.dto.js';

/**
 * How long an instance answers the per-call checks (client address, OAuth client of a grant) from the policy it last
 * read: every Area A call consults them, so the row is not read per call; a change reaches them on every other
 * instance within this time (on the instance that saved it at once). Everything else reads the stored row.
 */
export const POLICY_CACHE_MS = 1000;

export interface AdminPolicyView extends AdminPolicy {
  updatedAt: string | null;
  updatedBy: string | null;
}

const MESSAGES: Record<PolicyRule, (policy: AdminPolicy) => string> = {
  maxKeyLifetimeDays: (p) =>
    `The admin policy limits API keys to ${p.maxKeyLifetimeDays} days (maxKeyLifetimeDays); choose a shorter expiry`,
  allowedKeyScopes: (p) =>
    `The admin policy allows API keys only these scopes (allowedKeyScopes): ${(p.allowedKeyScopes ?? []).join(', ') || 'none'}`,
  requireConfirmWritesForWriteScopes: () =>
    'The admin policy requires confirmWrites for keys with a write scope (requireConfirmWritesForWriteScopes)',
  allowedIps: () => 'The admin policy does not allow Area A calls from this address (allowedIps)',
};

/**
 * The admin policy (API.md "Grants and admin policy"): the one place its rules are read and applied. Key creation,
 * the credential plug-ins (client address) and the OAuth server (client allowlist) ask here.
 */
@Injectable()
export class AdminPolicyService {
  private cached: { policy: Promise<AdminPolicy>; readAt: number } | undefined;

  constructor(
    private readonly repository: AdminPolicyRepository,
    private readonly scopes: ScopeCatalog,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDb() private readonly db: Db,
  ) {}

  /** The policy in force, as read at most POLICY_CACHE_MS ago; the defaults are today's behaviour. */
  private current(): Promise<AdminPolicy> {
    const now = Date.now();
    if (!this.cached || now - this.cached.readAt >= POLICY_CACHE_MS) {
      const policy = this.repository.find().then((stored) => this.effective(stored));
      // A failed read is not kept: the next call asks the database again.
      policy.catch(() => (this.cached = undefined));
      this.cached = { policy, readAt: now };
    }
    return this.cached.policy;
  }

  async view(): Promise<AdminPolicyView> {
    const stored = await this.repository.find();
    return {
      ...this.effective(stored),
      updatedAt: stored?.updatedAt.toISOString() ?? null,
      updatedBy: stored?.updatedBy ?? null,
    };
  }

  /** Replaces the policy; audited `policy.update` with the fields that changed (old and new values). */
  async update(adminId: string, input: UpdateAdminPolicyDto): Promise<AdminPolicyView> {
    const next = this.validated(input);
    await this.db.transaction().execute(async (trx) => {
      const before = this.effective(await this.repository.findLocked(trx));
      await this.repository.save({ ...next, updatedBy: adminId }, trx);
      const changed: Record<string, { from: unknown; to: unknown }> = {};
      for (const field of Object.keys(next) as (keyof AdminPolicy)[])
        if (JSON.stringify(before[field]) !== JSON.stringify(next[field]))
          changed[field] = { from: before[field], to: next[field] };
      await this.audit.recordChange(trx, {
        action: 'policy.update',
        target: { type: 'policy', id: 'admin' },
        details: { changed },
        onBehalfOf: adminId,
      });
    });
    this.cached = undefined;
    return this.view();
  }

  /** 400 naming the first rule a new key breaks. */
  async assertNewKeyAllowed(key: KeyUnderPolicy): Promise<void> {
    const policy = await this.fresh();
    const [rule] = keyPolicyViolations(policy, key, (scope) => this.isWrite(scope));
    if (rule) throw new AppException(ErrorCode.InvalidArgument, MESSAGES[rule](policy), { rule, field: fieldOf(rule) });
  }

  /**
   * 400 when an OAuth consent would give write scopes without confirmWrites under requireConfirmWritesForWriteScopes
   * (the key-only rules, lifetime and scopes, do not apply to grants).
   */
  async assertNewGrantAllowed(grant: { scopes: readonly string[]; confirmWrites: boolean }): Promise<void> {
    const policy = await this.fresh();
    const grantRules: AdminPolicy = { ...policy, maxKeyLifetimeDays: null, allowedKeyScopes: null };
    const [rule] = keyPolicyViolations(grantRules, { ...grant, createdAt: new Date(), expiresAt: null }, (scope) =>
      this.isWrite(scope),
    );
    if (rule) throw new AppException(ErrorCode.InvalidArgument, MESSAGES[rule](policy), { rule, field: fieldOf(rule) });
  }

  /** The rules an existing key breaks (for `outOfPolicy` on the key views). */
  async violations(keys: readonly KeyUnderPolicy[]): Promise<PolicyRule[][]> {
    const policy = await this.fresh();
    return keys.map((key) => keyPolicyViolations(policy, key, (scope) => this.isWrite(scope)));
  }

  /**
   * 403 ip_not_allowed unless the client address is inside both the organisation's ranges and the credential's own
   * (each when set). The address is Express's `req.ip`: the socket peer, or the X-Forwarded-For entry TRUST_PROXY
   * lets through.
   */
  async assertCallFrom(address: string | undefined, credentialRanges: readonly string[] | null): Promise<void> {
    const policy = await this.current();
    if (policy.allowedIps !== null && !addressInRanges(address, policy.allowedIps))
      throw new AppException(ErrorCode.IpNotAllowed, MESSAGES.allowedIps(policy), { rule: 'allowedIps' });
    if (credentialRanges !== null && !addressInRanges(address, credentialRanges))
      throw new AppException(
        ErrorCode.IpNotAllowed,
        'This credential may not be used from this address (its allowedIps)',
        { rule: 'credential.allowedIps' },
      );
  }

  /**
   * Whether the admin policy lets this OAuth client be authorised and its grants be used; `perCall` (a tool call of a
   * grant) reads the policy of at most a second ago, the OAuth endpoints the stored one.
   */
  async oauthClientAllowed(client: { clientId: string; clientName: string }, perCall = false): Promise<boolean> {
    return oauthClientAllowed((await (perCall ? this.current() : this.fresh())).allowedOAuthClients, client);
  }

  /** The usable API keys and OAuth grants a user may hold at once. */
  async maxCredentialsPerUser(): Promise<number> {
    return (await this.fresh()).maxCredentialsPerUser;
  }

  /** The stored policy, read now: for what is not done on every tool call (creation, consent, views). */
  private async fresh(): Promise<AdminPolicy> {
    return this.effective(await this.repository.find());
  }

  /** Canonical CIDR ranges for a credential's own `allowedIps`; 400 naming the field for a bad one. */
  cidrList(values: readonly string[], field: string): string[] {
    const canonical = values.map((value) => canonicalCidr(value));
    const bad = values.find((_, i) => canonical[i] === undefined);
    if (bad !== undefined)
      throw new AppException(ErrorCode.InvalidArgument, `${field}: "${bad.slice(0, 64)}" is not a CIDR range`, {
        field,
      });
    return [...new Set(canonical as string[])];
  }

  private isWrite(scope: string): boolean {
    return this.scopes.list().find((view) => view.name === scope)?.access === 'write';
  }

  private validated(input: UpdateAdminPolicyDto): AdminPolicy {
    if (input.allowedKeyScopes !== null) this.scopes.assertKnown(input.allowedKeyScopes, 'allowedKeyScopes');
    const clients = input.allowedOAuthClients?.map((entry) => entry.trim()).filter((entry) => entry !== '');
    return {
      maxKeyLifetimeDays: input.maxKeyLifetimeDays,
      allowedKeyScopes: input.allowedKeyScopes && [...new Set(input.allowedKeyScopes)],
      requireConfirmWritesForWriteScopes: input.requireConfirmWritesForWriteScopes,
      allowedIps: input.allowedIps && this.cidrList(input.allowedIps, 'allowedIps'),
      allowedOAuthClients: clients ? [...new Set(clients)] : null,
      maxCredentialsPerUser: input.maxCredentialsPerUser,
    };
  }

  private effective(stored: Awaited<ReturnType<AdminPolicyRepository['find']>>): AdminPolicy {
    return {
      maxKeyLifetimeDays: stored?.maxKeyLifetimeDays ?? null,
      allowedKeyScopes: stored?.allowedKeyScopes ?? null,
      requireConfirmWritesForWriteScopes: stored?.requireConfirmWritesForWriteScopes ?? false,
      allowedIps: stored?.allowedIps ?? null,
      allowedOAuthClients: stored?.allowedOAuthClients ?? null,
      maxCredentialsPerUser: stored?.maxCredentialsPerUser ?? this.config.limits.credentialsPerUser,
    };
  }
}

/** The request field a rule is about. */
function fieldOf(rule: PolicyRule): string {
  return rule === 'maxKeyLifetimeDays'
    ? 'expiresIn'
    : rule === 'allowedKeyScopes'
      ? 'scopes'
      : rule === 'requireConfirmWritesForWriteScopes'
        ? 'confirmWrites'
        : 'allowedIps';
}
