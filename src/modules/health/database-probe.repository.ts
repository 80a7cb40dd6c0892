import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { InjectDb, type Db } from '../../database/kysely.provider.js';

/** The statements of the readiness checks: the database answers, and pgvector is installed in it. */
@Injectable()
export class DatabaseProbeRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /** One round trip; throws when the database cannot be reached. */
  async ping(): Promise<void> {
    await sql`SELECT 1`.execute(this.db);
  }

  /** The installed pgvector version, or null when the extension is missing. */
  async vectorExtensionVersion(): Promise<string | null> {
    const { rows } = await sql<{
      extversion: string;
    }>`SELECT extversion FROM pg_extension WHERE extname = 'vector'`.execute(this.db);
    return rows[0]?.extversion ?? null;
  }
}
