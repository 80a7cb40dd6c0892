import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { InjectDb, type Db } from '../../database/kysely.provider.js';

/**
 * `api_busy_shares`: each API instance's latest busy share (HttpActivity), one row per instance. Ages are measured
 * with the database's clock on both sides, so the clocks of the pods never need to agree.
 */
@Injectable()
export class ApiBusySharesRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async report(instanceId: string, busyShare: number): Promise<void> {
    await this.db
      .insertInto('apiBusyShares')
      .values({ instanceId, busyShare, reportedAt: sql<Date>`now()` })
      .onConflict((conflict) => conflict.column('instanceId').doUpdateSet({ busyShare, reportedAt: sql<Date>`now()` }))
      .execute();
  }

  /** The highest share reported within the last `freshMs`, or null when no instance reported that recently. */
  async highestFresh(freshMs: number): Promise<number | null> {
    const row = await this.db
      .selectFrom('apiBusyShares')
      .select((eb) => eb.fn.max('busyShare').as('share'))
      .where('reportedAt', '>', sql<Date>`now() - make_interval(secs => ${freshMs / 1000})`)
      .executeTakeFirst();
    return row?.share ?? null;
  }

  async remove(instanceId: string): Promise<void> {
    await this.db.deleteFrom('apiBusyShares').where('instanceId', '=', instanceId).execute();
  }

  /** Drops the rows of instances gone without removing theirs (a crash), so the table holds the live ones. */
  async removeOlderThan(ageMs: number): Promise<void> {
    await this.db
      .deleteFrom('apiBusyShares')
      .where('reportedAt', '<', sql<Date>`now() - make_interval(secs => ${ageMs / 1000})`)
      .execute();
  }
}
