import { sql } from 'kysely';
import { setTimeout as sleep } from 'node:timers/promises';
import { useMediumContext } from '../support/medium.js';

/**
 * A pooled connection that dies while it is checked out (a database restart or a cut link, between two statements
 * of a transaction) must fail that transaction, not the process: pg-pool takes its own 'error' listener off a
 * checked-out client, and an 'error' nobody listens to is an uncaught exception. The outage drill found it by chance;
 * this provokes it on purpose. PostgreSQL only: the embedded engine cannot terminate one of its sessions.
 */
const onPostgres = process.env.TEST_DATABASE_URL ? describe : describe.skip;

onPostgres('the shared pool when a checked-out connection dies', () => {
  const medium = useMediumContext();

  it('fails the transaction that held it and keeps serving', async () => {
    const { db } = medium();
    const outcome = db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
      // Killed from another pooled connection while this one waits between two statements.
      await sql`SELECT pg_terminate_backend(${rows[0].pid})`.execute(db);
      await sleep(300);
      await sql`SELECT 1`.execute(trx);
    });
    await expect(outcome).rejects.toThrow();
    const { rows } = await sql<{ ok: number }>`SELECT 1 AS ok`.execute(db);
    expect(rows).toEqual([{ ok: 1 }]);
  });
});
