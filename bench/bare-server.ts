/**
 * Child process of the gateway benchmark: the same work as a list_tasks call with no framework — parse
 * the JSON body, check the key's checksum, look the key up by its HMAC, check revoked/expired, run the
 * same 50-row query, answer `{result}`. What the gateway adds on top (guards, rate limit, validation,
 * usage log) is what the benchmark measures.
 */
import express from 'express';
import { Pool } from 'pg';
import { hashApiKey, isWellFormedApiKey, sameHash } from '../src/modules/api-keys/api-key-format.js';
import { BENCH_PEPPER, BENCH_POOL_SIZE, KEY_SQL, LIST_SQL } from './bench-env.js';

interface Row {
  id: string;
  title: string;
  description: string;
  status: string;
  priority: string;
  due_date: string | null;
  assignee_id: string | null;
  creator_id: string;
  project_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const pool = new Pool({ connectionString: process.env.BENCH_DB_URL, max: BENCH_POOL_SIZE });
const app = express();
app.use(express.json({ limit: '1mb' }));

app.post('/call', async (req, res) => {
  try {
    const match = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const token = match?.[1];
    if (!token || !isWellFormedApiKey(token)) return void res.status(401).json({ error: 'invalid_api_key' });
    const hash = hashApiKey(token, BENCH_PEPPER);
    const keys = await pool.query(KEY_SQL, [hash]);
    const key = keys.rows[0];
    if (!key || !sameHash(key.key_hash, hash) || key.revoked_at || (key.expires_at && new Date(key.expires_at) <= new Date())) {
      return void res.status(401).json({ error: 'invalid_api_key' });
    }
    if (!key.scopes.includes('tasks:read')) return void res.status(403).json({ error: 'insufficient_scope' });
    const limit = Number(req.body?.arguments?.limit ?? 50);
    const rows = (await pool.query<Row>(LIST_SQL, [key.user_id, key.project_ids, limit + 1])).rows;
    if (rows.length > limit) res.setHeader('X-Truncated', 'true');
    res.json({
      result: rows.slice(0, limit).map((r) => ({
        ...r,
        created_at: new Date(r.created_at).toISOString(),
        updated_at: new Date(r.updated_at).toISOString(),
      })),
    });
  } catch (error) {
    res.status(500).json({ error: 'internal', message: (error as Error).message });
  }
});

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`PORT ${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
