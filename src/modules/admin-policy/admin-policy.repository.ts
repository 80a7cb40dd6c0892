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
    const row = await executor
      .selectFrom('adminPolicy')
      .select([
        'maxKeyLifetimeDays',
        'allowedKeyScopes',
        'requireConfirmWritesForWriteScopes',
        'allowedIps',
        'allowedOauthClients',
        'maxCredentialsPerUser',
        'updatedAt',
        'updatedBy',
      ])
      .executeTakeFirst();
    if (!row) return undefined;
    // The column is allowed_oauth_clients, whose camelCase spells OAuth as one word.
    const { allowedOauthClients, ...policy } = row;
    return { ...policy, allowedOAuthClients: allowedOauthClients };
  }

  /** Reads the row for update (an absent row locks nothing: two first saves race on the primary key, one wins). */
  async findLocked(executor: DbExecutor): Promise<StoredAdminPolicy | undefined> {
    const row = await executor.selectFrom('adminPolicy').select('id').forUpdate().executeTakeFirst();
    return row ? this.find(executor) : undefined;
  }

  async save(policy: Omit<StoredAdminPolicy, 'updatedAt'>, executor: DbExecutor = this.db): Promise<void> {
    const values = {
      maxKeyLifetimeDays: policy.maxKeyLifetimeDays,
      allowedKeyScopes: policy.allowedKeyScopes,
      requireConfirmWritesForWriteScopes: policy.requireConfirmWritesForWriteScopes,
      allowedIps: policy.allowedIps,
      allowedOauthClients: policy.allowedOAuthClients,
      maxCredentialsPerUser: policy.maxCredentialsPerUser,
      updatedBy: policy.updatedBy,
    };
    await executor
      .insertInto('adminPolicy')
      .values({ id: true, ...values })
      .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ ...values, updatedAt: eb.fn('now') })))
      .execute();
  }
}
