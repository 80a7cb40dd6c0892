import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { Logger } from '@nestjs/common';
import { DataDirLock } from './data-dir-lock.js';
import { PgliteWireServer } from './pglite-wire-server.js';

/**
 * The zero-config default: PostgreSQL (PGlite, WebAssembly) with pgvector, in this process,
 * persisted under DATA_DIR/pglite, served on a loopback port so the app's ordinary `pg` pools,
 * TypeORM's migrations and BullMQ's PostgreSQL backend all talk to it as to any server.
 *
 * Only this process can open a session: the wire server asks for a password generated here at each
 * start and kept only in `url` (never logged, never written anywhere). DATA_DIR is locked for the
 * life of the process, so a second process on the same directory stops before touching the files.
 *
 * Known limits (measured): one statement group at a time, all connections share one session (a
 * transaction holds it until it ends), no LISTEN/NOTIFY between connections. Fine for one instance;
 * scale out on a real PostgreSQL.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly db: PGlite,
    private readonly server: PgliteWireServer,
    private readonly lock: DataDirLock | undefined,
    readonly url: string,
  ) {}

  /**
   * `dataDir` undefined keeps everything in memory (tests). Throws DataDirLockedError when DATA_DIR is taken.
   * `options.loadDataDir` starts from a tarball of another instance's files ({@link dumpDataDir}) instead of an
   * empty cluster, which skips initdb (tests start from a migrated copy this way).
   */
  static async start(dataDir: string | undefined, options: { loadDataDir?: Blob } = {}): Promise<EmbeddedPostgres> {
    const logger = new Logger('EmbeddedPostgres');
    let location: string | undefined;
    let lock: DataDirLock | undefined;
    if (dataDir) {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      lock = DataDirLock.acquire(dataDir);
      location = join(dataDir, 'pglite');
      mkdirSync(location, { recursive: true, mode: 0o700 });
    }
    try {
      const db = await PGlite.create({ dataDir: location, extensions: { vector }, loadDataDir: options.loadDataDir });
      // BullMQ's PostgreSQL backend keeps its tables in schema "bullmq"; all socket connections share
      // this one session, so the search path is set once here rather than per connection.
      await db.exec('CREATE SCHEMA IF NOT EXISTS bullmq; SET search_path TO public, bullmq;');
      const password = randomBytes(24).toString('base64url');
      const server = new PgliteWireServer(db, password);
      const address = await server.listen('127.0.0.1', 0);
      const url = `postgresql://postgres:${password}@${address}/postgres?sslmode=disable`;
      logger.log({
        msg: 'embedded PostgreSQL (PGlite) started',
        location: location ?? 'memory',
        address,
        access: 'this process only (generated password)',
      });
      return new EmbeddedPostgres(db, server, lock, url);
    } catch (error) {
      lock?.release();
      throw error;
    }
  }

  /** The cluster's files as an uncompressed tarball, for {@link start}'s `loadDataDir`. */
  async dumpDataDir(): Promise<Blob> {
    return this.db.dumpDataDir('none');
  }

  async stop(): Promise<void> {
    await this.server.close();
    await this.db.close();
    this.lock?.release();
  }
}
