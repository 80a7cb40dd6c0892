import { Injectable } from '@nestjs/common';
import { CompiledQuery } from 'kysely';
import { InjectDb, type Db } from './kysely.provider.js';

/**
 * Whether the server is the embedded engine (PGlite behind its wire server), whose connections all share one
 * session: per-connection state (named statements, a pool of its own) gains nothing there or breaks. Asked of the
 * server, once per process, because the URL cannot tell (tests and the embedded default both use a loopback address).
 */
@Injectable()
export class EmbeddedEngine {
  private answer: Promise<boolean> | undefined;

  constructor(@InjectDb() private readonly db: Db) {}

  is(): Promise<boolean> {
    return (this.answer ??= this.ask().catch((error: unknown) => {
      this.answer = undefined; // asked again next time (e.g. the database was down)
      throw error;
    }));
  }

  private async ask(): Promise<boolean> {
    const { rows } = await this.db.executeQuery<{ embedded: boolean }>(
      CompiledQuery.raw(`SELECT position('PGlite' in version()) > 0 AS embedded`),
    );
    return rows[0]?.embedded === true;
  }
}
