import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { InjectDb, type Db } from '../../database/kysely.provider.js';

/** `slot_leases`: the counted leases of SlotLeases when they are kept in PostgreSQL (no Redis). */
@Injectable()
export class SlotLeasesRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /**
   * Takes a lease on one of `limit` slots of `key` for `leaseMs`; false when all are held. A transaction-scoped
   * advisory lock on the key makes the count and the insert one step for every instance.
   */
  async acquire(key: string, member: string, limit: number, leaseMs: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`slot_leases:${key}`}, 0))`.execute(trx);
      await trx
        .deleteFrom('slotLeases')
        .where('key', '=', key)
        .where('expiresAt', '<', sql<Date>`now()`)
        .execute();
      const { rows } = await sql<{ member: string }>`
        INSERT INTO slot_leases (key, member, expires_at)
        SELECT ${key}, ${member}, now() + make_interval(secs => ${leaseMs / 1000})
        WHERE (SELECT count(*) FROM slot_leases WHERE key = ${key}) < ${limit}
        RETURNING member`.execute(trx);
      return rows.length > 0;
    });
  }

  async renew(key: string, member: string, leaseMs: number): Promise<void> {
    await this.db
      .updateTable('slotLeases')
      .set({ expiresAt: sql<Date>`now() + make_interval(secs => ${leaseMs / 1000})` })
      .where('key', '=', key)
      .where('member', '=', member)
      .execute();
  }

  async release(key: string, member: string): Promise<void> {
    await this.db.deleteFrom('slotLeases').where('key', '=', key).where('member', '=', member).execute();
  }
}
