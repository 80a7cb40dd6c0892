import { Client, type Notification } from 'pg';
import { EmbeddedPostgres } from '../src/database/embedded-postgres';
import { embeddedCluster } from './support/test-app';

/**
 * The embedded engine's wire server (always PGlite, whatever TEST_DATABASE_URL says): LISTEN/NOTIFY
 * across connections that share PGlite's one session. BullMQ's PostgreSQL queue backend wakes idle
 * workers this way; before the server routed notifications, they went back to the notifying
 * connection and a worker parked after a database outage slept with jobs waiting.
 */
describe('embedded wire server: LISTEN/NOTIFY across connections', () => {
  let engine: EmbeddedPostgres;
  const clients: Client[] = [];

  const connect = async () => {
    const client = new Client({ connectionString: engine.url });
    await client.connect();
    clients.push(client);
    const received: string[] = [];
    client.on('notification', (n: Notification) => received.push(`${n.channel}:${n.payload}`));
    return { client, received };
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

  beforeAll(async () => {
    engine = await EmbeddedPostgres.start(undefined, { loadDataDir: await embeddedCluster('empty') });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    await engine.stop();
  });

  it('delivers a NOTIFY to the connection that LISTENs, not to the notifier', async () => {
    const worker = await connect();
    const producer = await connect();
    const bystander = await connect();
    // BullMQ's own statement text: comment lines, then the LISTEN.
    await worker.client.query(
      '-- Subscribe to the shared job-notification channel\n-- (comment)\nLISTEN bullmq_jobs;\n',
    );
    await producer.client.query("SELECT pg_notify('bullmq_jobs', 'rag-indexing')");
    await producer.client.query("NOTIFY bullmq_jobs, 'agent-runs'");
    await settle();
    expect(worker.received).toEqual(['bullmq_jobs:rag-indexing', 'bullmq_jobs:agent-runs']);
    expect(producer.received).toEqual([]);
    expect(bystander.received).toEqual([]);
  });

  it('delivers inside a transaction only at COMMIT, and not after a ROLLBACK', async () => {
    const worker = await connect();
    const producer = await connect();
    await worker.client.query('LISTEN tx_channel');
    await producer.client.query('BEGIN');
    await producer.client.query("SELECT pg_notify('tx_channel', 'committed')");
    await settle();
    expect(worker.received).toEqual([]);
    await producer.client.query('COMMIT');
    await producer.client.query('BEGIN');
    await producer.client.query("SELECT pg_notify('tx_channel', 'rolled back')");
    await producer.client.query('ROLLBACK');
    await settle();
    expect(worker.received).toEqual(['tx_channel:committed']);
  });

  it('keeps quoted channel names exact, folds bare ones, and stops after UNLISTEN', async () => {
    const listener = await connect();
    const producer = await connect();
    await listener.client.query('LISTEN "Mixed Case"');
    await listener.client.query('LISTEN Folded');
    await producer.client.query(`SELECT pg_notify('Mixed Case', '1'), pg_notify('folded', '2')`);
    await settle();
    expect(listener.received.sort()).toEqual(['Mixed Case:1', 'folded:2']);
    await listener.client.query('UNLISTEN "Mixed Case"');
    await producer.client.query(`SELECT pg_notify('Mixed Case', '3'), pg_notify('folded', '4')`);
    await listener.client.query('UNLISTEN *');
    await producer.client.query(`SELECT pg_notify('folded', '5')`);
    await settle();
    expect(listener.received.sort()).toEqual(['Mixed Case:1', 'folded:2', 'folded:4']);
  });

  it('a listener that disconnects is forgotten; a new one gets what follows; queries keep their answers', async () => {
    const gone = await connect();
    await gone.client.query('LISTEN bullmq_jobs');
    await gone.client.end();
    const fresh = await connect();
    await fresh.client.query('LISTEN bullmq_jobs');
    const producer = await connect();
    // A notification in the middle of a reply with rows: the rows stay the notifier's, in order.
    const rows = await producer.client.query(
      "SELECT n, pg_notify('bullmq_jobs', 'x' || n) FROM generate_series(1, 3) n",
    );
    expect(rows.rows.map((r) => r.n)).toEqual([1, 2, 3]);
    await settle();
    expect(fresh.received).toEqual(['bullmq_jobs:x1', 'bullmq_jobs:x2', 'bullmq_jobs:x3']);
    expect(producer.received).toEqual([]);
  });
});
