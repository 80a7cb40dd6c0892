import { Injectable } from '@nestjs/common';
import type { AdminPolicy } from './admin-policy.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';

/** The stored policy; a null cap means the configured default (MAX_CREDENTIALS_PER_USER). */
export interface StoredAdminPolicy extends Omit<AdminPolicy, 'maxCredentialsPerUser'> {
  maxCredentialsPerUser: number | null;
  updatedAt: Date;
  updatedBy: string | null;
}

/** The `admin_policy` table: one row, absent until an admin first saves a policy. */
@Injectable()
export class AdminPolicyRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async find(executor: DbExecutor = this.db): Promise<StoredAdminPolicy | undefined> {
    const row = await executor.selectFrom('admin_policy').selectAll().executeTakeFirst();
    return (
      row && {
        maxKeyLifetimeDays: row.max_key_lifetime_days,
        allowedKeyScopes: row.allowed_key_scopes,
        requireConfirmWritesForWriteScopes: row.require_confirm_writes_for_write_scopes,
        allowedIps: row.allowed_ips,
        allowedOAuthClients: row.allowed_oauth_clients,
        maxCredentialsPerUser: row.max_credentials_per_user,
        updatedAt: row.updated_at,
        updatedBy: row.updated_by,
      }
    );
  }

  /** Reads the row for update (an absent row locks nothing: two first saves race on the primary key, one wins). */
  async findLocked(executor: DbExecutor): Promise<StoredAdminPolicy | undefined> {
    const row = await executor.selectFrom('admin_policy').select('id').forUpdate().executeTakeFirst();
    return row ? this.find(executor) : undefined;
  }

  async save(policy: Omit<StoredAdminPolicy, 'updatedAt'>, executor: DbExecutor = this.db): Promise<void> {
    const values = {
      max_key_lifetime_days: policy.maxKeyLifetimeDays,
      allowed_key_scopes: policy.allowedKeyScopes,
      require_confirm_writes_for_write_scopes: policy.requireConfirmWritesForWriteScopes,
      allowed_ips: policy.allowedIps,
      allowed_oauth_clients: policy.allowedOAuthClients,
      max_credentials_per_user: policy.maxCredentialsPerUser,
      updated_by: policy.updatedBy,
    };
    await executor
      .insertInto('admin_policy')
      .values({ id: true, ...values })
      .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ ...values, updated_at: eb.fn('now') })))
      .execute();
  }
}
