/**
 * Child process of the gateway benchmark: the same work as a tool call with no framework — parse the JSON
 * body, check the key's checksum, look the key up by its HMAC, check revoked/expired and the scope, then
 * list_tasks: the same 50-row query; create_task: the same insert plus the naive call count (one UPDATE of
 * the key's row). Answers `{result}`. What the gateway adds on top (guards, rate limit, validation, usage
 * log, exact call counts on every call) is what the benchmark measures.
 */
import express from 'express';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { hashApiKey, isWellFormedApiKey, sameHash } from '../src/modules/api-keys/api-key-format.js';
import { BENCH_PEPPER, BENCH_POOL_SIZE, COUNT_SQL, INSERT_SQL, KEY_SQL, LIST_SQL } from './bench-env.js';

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

const SCOPES: Record<string, string> = { list_tasks: 'tasks:read', create_task: 'tasks:write' };

const view = (r: Row) => ({
  ...r,
  created_at: new Date(r.created_at).toISOString(),
  updated_at: new Date(r.updated_at).toISOString(),
});

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
    if (
      !key ||
      !sameHash(key.key_hash, hash) ||
      key.revoked_at ||
      (key.expires_at && new Date(key.expires_at) <= new Date())
    ) {
      return void res.status(401).json({ error: 'invalid_api_key' });
    }
    const name = req.body?.name;
    const scope = SCOPES[name];
    if (!scope) return void res.status(404).json({ error: 'unknown_tool' });
    if (!key.scopes.includes(scope)) return void res.status(403).json({ error: 'insufficient_scope' });
    const args = req.body.arguments ?? {};
    if (name === 'list_tasks') {
      const limit = Number(args.limit ?? 50);
      const rows = (await pool.query<Row>(LIST_SQL, [key.user_id, key.project_ids, limit + 1])).rows;
      if (rows.length > limit) res.setHeader('X-Truncated', 'true');
      return void res.json({ result: rows.slice(0, limit).map(view) });
    }
    if (typeof args.title !== 'string' || args.title.length === 0 || args.title.length > 200)
      return void res.status(400).json({ error: 'invalid_argument' });
    const [row] = (
      await pool.query<Row>(INSERT_SQL, [
        randomUUID(),
        args.title,
        args.description ?? '',
        'todo',
        'medium',
        key.user_id,
      ])
    ).rows;
    await pool.query(COUNT_SQL, [key.id]);
    res.json({ result: view(row) });
  } catch (error) {
    res.status(500).json({ error: 'internal', message: (error as Error).message });
  }
});

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`PORT ${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
