import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { InjectDb, type Db } from '../../database/kysely.provider.js';

/** One (owner, scope, key) record. */
export interface IdempotencyKey {
  ownerId: string;
  scope: string;
  key: string;
}

export interface IdempotencyRecord {
  requestHash: string;
  state: 'pending' | 'completed';
  /** The stored answer, wrapped so that `null` and `undefined` answers survive JSON: `{ value }`. */
  response: { value: unknown } | null;
}

/** The idempotency_records table: claims on keys and the answers stored under them. */
@Injectable()
export class IdempotencyRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /**
   * Claims the key for a request (a `pending` record living `leaseMinutes`), taking over an expired record.
   * False when a live record holds the key.
   */
  async claim(id: IdempotencyKey, requestHash: string, leaseMinutes: number): Promise<boolean> {
    const expiresAt = sql<Date>`now() + make_interval(mins => ${leaseMinutes})`;
    const claimed = await this.db
      .insertInto('idempotency_records')
      .values({
        owner_id: id.ownerId,
        scope: id.scope,
        key: id.key,
        request_hash: requestHash,
        state: 'pending',
        response: null,
        created_at: sql<Date>`now()`,
        expires_at: expiresAt,
      })
      .onConflict((conflict) =>
        conflict
          .columns(['owner_id', 'scope', 'key'])
          .doUpdateSet((eb) => ({
            request_hash: eb.ref('excluded.request_hash'),
            state: 'pending',
            response: null,
            created_at: sql<Date>`now()`,
            expires_at: eb.ref('excluded.expires_at'),
          }))
          .where('idempotency_records.expires_at', '<=', sql<Date>`now()`),
      )
      .returning('key')
      .executeTakeFirst();
    return claimed !== undefined;
  }

  /** The live (unexpired) record under the key, if any. */
  async findLive(id: IdempotencyKey): Promise<IdempotencyRecord | undefined> {
    const row = await this.db
      .selectFrom('idempotency_records')
      .select(['request_hash', 'state', 'response'])
      .where('owner_id', '=', id.ownerId)
      .where('scope', '=', id.scope)
      .where('key', '=', id.key)
      .where('expires_at', '>', sql<Date>`now()`)
      .executeTakeFirst();
    return (
      row && {
        requestHash: row.request_hash,
        state: row.state === 'completed' ? 'completed' : 'pending',
        response: row.response as IdempotencyRecord['response'],
      }
    );
  }

  /** Drops this request's own pending claim (its work failed), so the client may retry at once. */
  async release(id: IdempotencyKey, requestHash: string): Promise<void> {
    await this.db
      .deleteFrom('idempotency_records')
      .where('owner_id', '=', id.ownerId)
      .where('scope', '=', id.scope)
      .where('key', '=', id.key)
      .where('state', '=', 'pending')
      .where('request_hash', '=', requestHash)
      .execute();
  }

  /** Stores the answer under this request's claim, kept for `ttlHours`. */
  async complete(id: IdempotencyKey, requestHash: string, value: unknown, ttlHours: number): Promise<void> {
    await this.db
      .updateTable('idempotency_records')
      .set({
        state: 'completed',
        response: sql`${JSON.stringify({ value: value ?? null })}::jsonb`,
        expires_at: sql<Date>`now() + make_interval(hours => ${ttlHours})`,
      })
      .where('owner_id', '=', id.ownerId)
      .where('scope', '=', id.scope)
      .where('key', '=', id.key)
      .where('request_hash', '=', requestHash)
      .execute();
  }

  /** Records expired for more than `graceHours`. */
  async deleteExpired(graceHours: number): Promise<void> {
    await this.db
      .deleteFrom('idempotency_records')
      .where('expires_at', '<', sql<Date>`now() - make_interval(hours => ${graceHours})`)
      .execute();
  }
}
