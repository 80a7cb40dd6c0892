/**
 * npm run bench:gateway
 *
 * Seeds 100k tasks over 1,000 users in a fresh database on a real PostgreSQL (BENCH_DATABASE_URL,
 * default postgres://postgres@127.0.0.1:5432/postgres), then load-tests `list_tasks` (limit 50) with
 * autocannon (50 connections, 10 s per run, runs alternating) through the full Atrium gateway and
 * through a bare Express + pg handler doing the same work. Prints req/s and p99 of both and the ratios.
 * Target: gateway >= 0.70x the bare throughput, p99 <= 2x. BENCH_REDIS_URL runs the gateway on Redis (limiter,
 * counters); BENCH_ROUNDS, BENCH_DURATION, BENCH_CONNECTIONS change the runs; BENCH_PROFILE_DIR profiles the gateway.
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { generateApiKey, hashApiKey } from '../src/modules/api-keys/api-key-format.js';
import { BENCH_PEPPER } from './bench-env.js';

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const USERS = 1000;
const TASKS = 100_000;
const KEYS = 100;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

function startChild(script: string, env: Record<string, string>, nodeArgs: string[] = []): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, join(__dirname, script)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /PORT (\d+)/.exec(out);
      if (match) resolve({ child, port: Number(match[1]) });
    });
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

async function seed(dbUrl: string): Promise<string[]> {
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  await db.query(`INSERT INTO users (id, email, name, password_hash, role)
    SELECT gen_random_uuid(), 'bench' || i || '@example.com', 'Bench ' || i, 'not-a-login', 'member' FROM generate_series(1, ${USERS}) i`);
  await db.query(`
    WITH u AS (SELECT array_agg(id ORDER BY email) AS ids FROM users)
    INSERT INTO tasks (id, title, description, status, priority, due_date, assignee_id, creator_id, created_at, updated_at)
    SELECT gen_random_uuid(), 'Task ' || i, 'Benchmark task number ' || i || ' with a little text to index',
      (ARRAY['todo','in_progress','in_review','done','cancelled'])[1 + i % 5],
      (ARRAY['low','medium','high','urgent'])[1 + i % 4],
      CASE WHEN i % 3 = 0 THEN current_date + (i % 60 - 30) END,
      CASE WHEN i % 5 = 0 THEN NULL ELSE u.ids[1 + (i * 7) % ${USERS}] END,
      u.ids[1 + i % ${USERS}],
      now() - make_interval(secs => i), now() - make_interval(secs => i)
    FROM generate_series(1, ${TASKS}) i, u`);
  await db.query('ANALYZE users; ANALYZE tasks;');
  const users = (await db.query<{ id: string }>(`SELECT id FROM users ORDER BY email LIMIT ${KEYS}`)).rows;
  const keys: string[] = [];
  for (const user of users) {
    const { key, prefix } = generateApiKey();
    await db.query(`INSERT INTO api_keys (id, user_id, name, scopes, prefix, key_hash) VALUES ($1, $2, 'bench', ARRAY['tasks:read'], $3, $4)`, [
      randomUUID(),
      user.id,
      prefix,
      hashApiKey(key, BENCH_PEPPER),
    ]);
    keys.push(key);
  }
  await db.end();
  return keys;
}

interface RunResult {
  rps: number;
  p99: number;
  errors: number;
  /** CPU milliseconds per answered request: the server's Node process, and all PostgreSQL processes together. */
  cpu: { server: number; postgres: number } | null;
}

/** utime + stime of a process in ms (Linux /proc), or null where /proc is not readable. */
function cpuMs(pid: number, withReapedChildren = false): number | null {
  try {
    // Fields after the command: state is [0], utime [11], stime [12], cutime [13], cstime [14].
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]) + (withReapedChildren ? Number(fields[13]) + Number(fields[14]) : 0);
    return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/**
 * CPU ms of every process named postgres (the local server the benchmark runs on), including the
 * backends that have exited (the postmaster's reaped-children time), so closed connections do not vanish.
 */
function postgresCpuMs(): number | null {
  try {
    let total = 0;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
      } catch {
        continue;
      }
      total += cpuMs(Number(entry), true) ?? 0;
    }
    return total;
  } catch {
    return null;
  }
}

async function run(url: string, keys: string[], duration: number, serverPid: number): Promise<RunResult> {
  let next = 0;
  const before = { server: cpuMs(serverPid), postgres: postgresCpuMs() };
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'list_tasks', arguments: { limit: 50 } }),
    requests: [
      {
        setupRequest: (request: Record<string, any>) => {
          next = (next + 1) % keys.length;
          request.headers = { ...request.headers, authorization: `Bearer ${keys[next]}` };
          return request;
        },
      },
    ],
  });
  const after = { server: cpuMs(serverPid), postgres: postgresCpuMs() };
  const answered = Math.max(1, result.requests.total);
  const cpu =
    before.server === null || after.server === null || before.postgres === null || after.postgres === null
      ? null
      : { server: (after.server - before.server) / answered, postgres: (after.postgres - before.postgres) / answered };
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.non2xx + result.errors + result.timeouts, cpu };
}

async function main(): Promise<void> {
  const name = `atrium_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const dbUrl = new URL(SERVER_URL);
  dbUrl.pathname = `/${name}`;
  const children: ChildProcess[] = [];
  try {
    const env = { BENCH_DB_URL: dbUrl.toString() };
    // BENCH_PROFILE_DIR=<dir>: the gateway writes a V8 CPU profile there when it exits (open it in Chrome DevTools).
    const profileArgs = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
    const gateway = await startChild('gateway-server.js', env, profileArgs); // runs the migrations
    children.push(gateway.child);
    console.log(`seeding ${TASKS} tasks over ${USERS} users...`);
    const keys = await seed(dbUrl.toString());
    const bare = await startChild('bare-server.js', env);
    children.push(bare.child);
    const targets = {
      gateway: `http://127.0.0.1:${gateway.port}/api/v1/public/mcp/call`,
      bare: `http://127.0.0.1:${bare.port}/call`,
    };
    const pids = { gateway: gateway.child.pid!, bare: bare.child.pid! };
    // Sanity: both answer the same 50 rows for the same key.
    for (const [label, url] of Object.entries(targets)) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[0]}` },
        body: JSON.stringify({ name: 'list_tasks', arguments: { limit: 50 } }),
      });
      const body = (await res.json()) as { result: unknown[] };
      if (res.status !== 200 || body.result.length !== 50) throw new Error(`${label} answered ${res.status} with ${body.result?.length} rows`);
    }
    console.log(`warming up (3 s each), then ${ROUNDS} alternating rounds of ${DURATION} s, ${CONNECTIONS} connections, ${KEYS} keys`);
    await run(targets.gateway, keys, 3, pids.gateway);
    await run(targets.bare, keys, 3, pids.bare);
    const results: Record<'gateway' | 'bare', RunResult[]> = { gateway: [], bare: [] };
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const label of round % 2 === 0 ? (['gateway', 'bare'] as const) : (['bare', 'gateway'] as const)) {
        const r = await run(targets[label], keys, DURATION, pids[label]);
        results[label].push(r);
        const cpu = r.cpu ? `  CPU/req: node ${r.cpu.server.toFixed(3)} ms, postgres ${r.cpu.postgres.toFixed(3)} ms` : '';
        console.log(`  round ${round + 1} ${label.padEnd(7)} ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${String(r.p99).padStart(4)} ms  errors ${r.errors}${cpu}`);
      }
    }
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    const g = { rps: mean(results.gateway.map((r) => r.rps)), p99: mean(results.gateway.map((r) => r.p99)) };
    const b = { rps: mean(results.bare.map((r) => r.rps)), p99: mean(results.bare.map((r) => r.p99)) };
    const throughput = g.rps / b.rps;
    const latency = g.p99 / b.p99;
    console.log('');
    console.log(`list_tasks (limit 50), ${TASKS} tasks / ${USERS} users, c=${CONNECTIONS}, ${ROUNDS}x${DURATION}s each, Redis: ${process.env.BENCH_REDIS_URL ? 'yes' : 'no (in-memory limiter)'}`);
    console.log(`  gateway : ${g.rps.toFixed(0)} req/s, p99 ${g.p99.toFixed(1)} ms`);
    console.log(`  bare    : ${b.rps.toFixed(0)} req/s, p99 ${b.p99.toFixed(1)} ms`);
    console.log(`  ratio   : throughput ${throughput.toFixed(2)}x (target >= 0.70), p99 ${latency.toFixed(2)}x (target <= 2.00)`);
    const errors = [...results.gateway, ...results.bare].reduce((n, r) => n + r.errors, 0);
    if (errors > 0) console.log(`  WARNING: ${errors} failed requests`);
    process.exitCode = throughput >= 0.7 && latency <= 2 && errors === 0 ? 0 : 1;
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exit(1);
});
