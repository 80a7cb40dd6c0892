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
      .insertInto('idempotencyRecords')
      .values({
        ownerId: id.ownerId,
        scope: id.scope,
        key: id.key,
        requestHash,
        state: 'pending',
        response: null,
        createdAt: sql<Date>`now()`,
        expiresAt,
      })
      .onConflict((conflict) =>
        conflict
          .columns(['ownerId', 'scope', 'key'])
          .doUpdateSet((eb) => ({
            requestHash: eb.ref('excluded.requestHash'),
            state: 'pending',
            response: null,
            createdAt: sql<Date>`now()`,
            expiresAt: eb.ref('excluded.expiresAt'),
          }))
          .where('idempotencyRecords.expiresAt', '<=', sql<Date>`now()`),
      )
      .returning('key')
      .executeTakeFirst();
    return claimed !== undefined;
  }

  /** The live (unexpired) record under the key, if any. */
  async findLive(id: IdempotencyKey): Promise<IdempotencyRecord | undefined> {
    const row = await this.db
      .selectFrom('idempotencyRecords')
      .select(['requestHash', 'state', 'response'])
      .where('ownerId', '=', id.ownerId)
      .where('scope', '=', id.scope)
      .where('key', '=', id.key)
      .where('expiresAt', '>', sql<Date>`now()`)
      .executeTakeFirst();
    return (
      row && {
        requestHash: row.requestHash,
        state: row.state === 'completed' ? 'completed' : 'pending',
        response: row.response as IdempotencyRecord['response'],
      }
    );
  }

  /** Drops this request's own pending claim (its work failed), so the client may retry at once. */
  async release(id: IdempotencyKey, requestHash: string): Promise<void> {
    await this.db
      .deleteFrom('idempotencyRecords')
      .where('ownerId', '=', id.ownerId)
      .where('scope', '=', id.scope)
      .where('key', '=', id.key)
      .where('state', '=', 'pending')
      .where('requestHash', '=', requestHash)
      .execute();
  }

  /** Stores the answer under this request's claim, kept for `ttlHours`. */
  async complete(id: IdempotencyKey, requestHash: string, value: unknown, ttlHours: number): Promise<void> {
    await this.db
      .updateTable('idempotencyRecords')
      .set({
        state: 'completed',
        response: sql`${JSON.stringify({ value: value ?? null })}::jsonb`,
        expiresAt: sql<Date>`now() + make_interval(hours => ${ttlHours})`,
      })
      .where('ownerId', '=', id.ownerId)
      .where('scope', '=', id.scope)
      .where('key', '=', id.key)
      .where('requestHash', '=', requestHash)
      .execute();
  }

  /** Records expired for more than `graceHours`. */
  async deleteExpired(graceHours: number): Promise<void> {
    await this.db
      .deleteFrom('idempotencyRecords')
      .where('expiresAt', '<', sql<Date>`now() - make_interval(hours => ${graceHours})`)
      .execute();
  }
}
