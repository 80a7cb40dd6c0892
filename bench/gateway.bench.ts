/**
 * npm run bench:gateway
 *
 * Seeds 100k tasks over 1,000 users in a fresh database on a real PostgreSQL (BENCH_DATABASE_URL,
 * default postgres://postgres@127.0.0.1:5432/postgres), then load-tests tool calls with autocannon (50
 * connections, 100 keys) through the full Atrium gateway and through a bare Express + pg handler doing the
 * same work (bare-server.ts), runs alternating, in one process tree so the ratios share the machine's load:
 *   - list_tasks (limit 50): key lookup + the 50-row query;
 *   - create_task: key lookup + the insert + the call count (the gateway also writes its usage log).
 * With BENCH_REDIS_URL a second gateway runs on Redis (rate limiter) beside the in-memory one, in the same rounds.
 * The in-memory gateway is also asked through its MCP door, on revision 2025-11-25 (after an initialize per key, as a
 * client does) and on 2026-07-28, in the same rounds: `tools_list` (the tool list) and the tool calls; those print
 * MCP/JSON ratios against the same gateway's JSON door (targets: throughput >= 0.9x, p99 <= 1.25x).
 * BENCH_DOORS=json,mcp-2025,mcp-2026 picks the doors.
 * Prints per run req/s, p50 and p99, CPU per request (the server's Node process, the bench database's PostgreSQL
 * backends, this process as the load generator), the server's peak RSS, event-loop delay p99 and GC pauses; then the
 * means and the ratios.
 * Targets (list_tasks, each gateway): throughput >= 0.85x the bare handler, p99 <= 1.5x, RSS <= 250 MB.
 * BENCH_ROUNDS, BENCH_DURATION, BENCH_CONNECTIONS change the runs; BENCH_SCENARIOS=list_tasks,create_task picks
 * scenarios; BENCH_NODE_FLAGS replaces the CMD's Node flags for the gateways; BENCH_PROFILE_DIR writes a V8 CPU profile of each server, gateways and bare (and prints how many calls each answered).
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { generateApiKey, hashApiKey } from '../src/modules/api-keys/api-key-format.js';
import { BENCH_PEPPER, SCENARIOS } from './bench-env.js';
import { answeredItems, doorRequest, initializeLegacy, type Door, type DoorScenario } from './door-requests.js';
import type { LoopDelayReport } from './loop-delay-probe.js';
import { nodeFlagsSource, productionNodeFlags } from './production-node-flags.js';

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL;
const USERS = 1000;
const TASKS = 100_000;
const KEYS = 100;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SCENARIO_NAMES = (process.env.BENCH_SCENARIOS ?? 'list_tasks,tools_list,create_task').split(
  ',',
) as DoorScenario[];
const DOORS = (process.env.BENCH_DOORS ?? 'json,mcp-2025,mcp-2026').split(',') as Door[];
const TARGET = { throughput: 0.85, p99: 1.5, rssMb: 250 };
/** The MCP door against the same gateway's JSON door. */
const DOOR_TARGET = { throughput: 0.9, p99: 1.25 };

function startChild(
  script: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    // Every server carries the probe (event-loop delay, GC pauses), read over the IPC channel after each round.
    const child = spawn(
      process.execPath,
      [...nodeArgs, '--require', join(__dirname, 'loop-delay-probe.js'), join(__dirname, script)],
      {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      },
    );
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
    await db.query(
      `INSERT INTO api_keys (id, user_id, name, scopes, prefix, key_hash) VALUES ($1, $2, 'bench', ARRAY['tasks:read', 'tasks:write'], $3, $4)`,
      [randomUUID(), user.id, prefix, hashApiKey(key, BENCH_PEPPER)],
    );
    keys.push(key);
  }
  await db.end();
  return keys;
}

interface RunResult {
  rps: number;
  /** Median latency: beside p99, it tells a slower call from a wider tail. */
  p50: number;
  p99: number;
  errors: number;
  requests: number;
  /**
   * CPU milliseconds per answered request: the server's Node process, the bench database's PostgreSQL backends, and
   * this process (the load generator, which reads every answer: a larger answer costs it too, on the same cores).
   */
  cpu: { server: number; postgres: number; client: number } | null;
  /** The server's peak resident set during the run, MB (sampled every 200 ms), or null without /proc. */
  rssMb: number | null;
  /** The server's event-loop delay and GC pauses during the run (loop-delay-probe). */
  probe: LoopDelayReport;
}

/** utime + stime of a process in ms (Linux /proc), or null where /proc is not readable. */
function cpuMs(pid: number): number | null {
  try {
    // Fields after the command: state is [0], utime [11], stime [12].
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/** Resident set of a process in MB (Linux /proc), or null. */
function rssMb(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** The bench database and a connection to its server, for the CPU of its backends. */
let benchDatabase: { admin: Client; name: string } | undefined;

/**
 * CPU ms of each backend connected to the bench database, by pid: the machine's other databases and PostgreSQL
 * servers (another session's bench, a private server stopped mid-round) are not this bench's work.
 */
async function backendCpuMs(): Promise<Map<number, number> | null> {
  if (!benchDatabase) return null;
  const { rows } = await benchDatabase.admin.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = $1',
    [benchDatabase.name],
  );
  const byPid = new Map<number, number>();
  for (const { pid } of rows) {
    const ms = cpuMs(pid);
    if (ms !== null) byPid.set(pid, ms);
  }
  return byPid.size > 0 ? byPid : null;
}

/**
 * CPU the bench database's backends used between two readings: one opened in between counts whole, one closed in
 * between is left out (the servers' pools keep their connections through a round).
 */
function backendCpuSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

/** The server's probe figures since the last call, which starts them over. */
function readProbe(child: ChildProcess): Promise<LoopDelayReport> {
  const answer = new Promise<LoopDelayReport>((resolve) => child.once('message', (m) => resolve(m as LoopDelayReport)));
  child.send('loop-delay');
  return answer;
}

async function run(target: Target, scenario: DoorScenario, keys: string[], duration: number): Promise<RunResult> {
  let next = 0;
  let peakRss: number | null = null;
  const sampler = setInterval(() => {
    const now = rssMb(target.pid);
    if (now !== null) peakRss = Math.max(peakRss ?? 0, now);
  }, 200);
  const shape =
    target.door === 'bare'
      ? {
          path: '/call',
          method: 'POST' as const,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: scenario, arguments: SCENARIOS[scenario as keyof typeof SCENARIOS] }),
        }
      : doorRequest(target.door, scenario);
  await readProbe(target.child); // starts the round's figures
  const before = { server: cpuMs(target.pid), postgres: await backendCpuMs(), client: process.cpuUsage() };
  const result = await autocannon({
    url: `${target.baseUrl}${shape.path}`,
    connections: CONNECTIONS,
    duration,
    method: shape.method,
    headers: shape.headers,
    body: shape.body,
    requests: [
      {
        setupRequest: (request: Record<string, any>) => {
          next = (next + 1) % keys.length;
          const session = target.sessions?.[next];
          request.headers = {
            ...request.headers,
            authorization: `Bearer ${keys[next]}`,
            ...(session ? { 'mcp-session-id': session } : {}),
          };
          return request;
        },
      },
    ],
  });
  const after = { server: cpuMs(target.pid), postgres: await backendCpuMs() };
  const probe = await readProbe(target.child);
  const clientUsage = process.cpuUsage(before.client);
  const clientMs = (clientUsage.user + clientUsage.system) / 1000;
  clearInterval(sampler);
  const answered = Math.max(1, result.requests.total);
  const cpu =
    before.server === null || after.server === null || before.postgres === null || after.postgres === null
      ? null
      : {
          server: (after.server - before.server) / answered,
          postgres: backendCpuSince(before.postgres, after.postgres) / answered,
          client: clientMs / answered,
        };
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
    requests: result.requests.total,
    cpu,
    rssMb: peakRss,
    probe,
  };
}

/** One door of one server process. */
interface Target {
  label: string;
  baseUrl: string;
  door: Door | 'bare';
  pid: number;
  child: ChildProcess;
  calls: number;
  /** 2025-11-25: the Mcp-Session-Id each key's initialize returned, if any. */
  sessions?: (string | undefined)[];
}

async function main(): Promise<void> {
  const name = `atrium_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  benchDatabase = { admin, name };
  const dbUrl = new URL(SERVER_URL);
  dbUrl.pathname = `/${name}`;
  const children: ChildProcess[] = [];
  let failed = false;
  try {
    const env = { BENCH_DB_URL: dbUrl.toString() };
    // BENCH_PROFILE_DIR=<dir>: each server writes a V8 CPU profile there when it exits (open it in Chrome DevTools).
    const profileArgs = [
      ...productionNodeFlags(),
      ...(process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : []),
    ];
    const gateway = await startChild('gateway-server.js', { ...env, BENCH_GATEWAY_REDIS_URL: '' }, profileArgs); // runs the migrations
    children.push(gateway.child);
    console.log(`seeding ${TASKS} tasks over ${USERS} users...`);
    const keys = await seed(dbUrl.toString());
    const gatewayUrl = `http://127.0.0.1:${gateway.port}`;
    const targets: Target[] = [];
    for (const door of DOORS) {
      const label = door === 'json' ? 'gateway' : door;
      const sessions =
        door === 'mcp-2025' ? await Promise.all(keys.map((key) => initializeLegacy(gatewayUrl, key))) : undefined;
      targets.push({
        label,
        baseUrl: gatewayUrl,
        door,
        pid: gateway.child.pid!,
        child: gateway.child,
        calls: 0,
        sessions,
      });
    }
    if (REDIS_URL) {
      const onRedis = await startChild(
        'gateway-server.js',
        { ...env, BENCH_GATEWAY_REDIS_URL: REDIS_URL, BENCH_GATEWAY_REDIS_PREFIX: name },
        profileArgs,
      );
      children.push(onRedis.child);
      targets.push({
        label: 'gateway+redis',
        baseUrl: `http://127.0.0.1:${onRedis.port}`,
        door: 'json',
        pid: onRedis.child.pid!,
        child: onRedis.child,
        calls: 0,
      });
    }
    const bare = await startChild(
      'bare-server.js',
      env,
      process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [],
    );
    children.push(bare.child);
    targets.push({
      label: 'bare',
      baseUrl: `http://127.0.0.1:${bare.port}`,
      door: 'bare',
      pid: bare.child.pid!,
      child: bare.child,
      calls: 0,
    });

    // Sanity: every server and door answers the same 50 rows for the same key (and the same tool list).
    for (const target of targets) {
      for (const scenario of ['list_tasks', 'tools_list'] as const) {
        if (target.door === 'bare' && scenario === 'tools_list') continue;
        const shape =
          target.door === 'bare'
            ? {
                path: '/call',
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ name: 'list_tasks', arguments: SCENARIOS.list_tasks }),
              }
            : doorRequest(target.door, scenario);
        const session = target.sessions?.[0];
        const res = await fetch(`${target.baseUrl}${shape.path}`, {
          method: shape.method,
          headers: {
            ...shape.headers,
            authorization: `Bearer ${keys[0]}`,
            ...(session ? { 'mcp-session-id': session } : {}),
          },
          body: shape.body,
        });
        const text = await res.text();
        const items =
          res.status === 200 ? answeredItems(target.door === 'bare' ? 'json' : target.door, scenario, text) : -1;
        const expected = scenario === 'list_tasks' ? 50 : 7;
        if (items !== expected)
          throw new Error(
            `${target.label} answered ${scenario} with ${res.status} and ${items} items (expected ${expected}): ${text.slice(0, 300)}`,
          );
      }
    }
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    console.log(`gateway started with: node ${profileArgs.join(' ')} (${nodeFlagsSource()})`);
    console.log(
      `${ROUNDS} alternating rounds of ${DURATION} s per scenario, ${CONNECTIONS} connections, ${KEYS} keys, load average at start ${load}`,
    );
    const summary: string[] = [];
    for (const scenario of SCENARIO_NAMES) {
      console.log(`${scenario}: warming up (3 s each)`);
      const inScenario = targets.filter((t) => !(t.door === 'bare' && scenario === 'tools_list'));
      for (const target of inScenario) target.calls += (await run(target, scenario, keys, 3)).requests;
      const results = new Map<string, RunResult[]>(inScenario.map((t) => [t.label, []]));
      for (let round = 0; round < ROUNDS; round += 1) {
        // Rotate the order each round so no server always runs right after another.
        const order = inScenario.map((_, i) => inScenario[(i + round) % inScenario.length]);
        for (const target of order) {
          const r = await run(target, scenario, keys, DURATION);
          target.calls += r.requests;
          results.get(target.label)!.push(r);
          const cpu = r.cpu
            ? `  CPU/req node ${r.cpu.server.toFixed(3)} ms, postgres ${r.cpu.postgres.toFixed(3)} ms, load generator ${r.cpu.client.toFixed(3)} ms`
            : '';
          const rss = r.rssMb === null ? '' : `  RSS ${r.rssMb.toFixed(0)} MB`;
          const pauses = `  loop delay p99 ${r.probe.loopDelay.p99} ms, GC ${r.probe.gc.totalMs.toFixed(0)} ms in ${r.probe.gc.pauses} pauses (max ${r.probe.gc.maxMs} ms)`;
          console.log(
            `  round ${round + 1} ${target.label.padEnd(13)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${String(r.p50).padStart(3)} ms  p99 ${String(r.p99).padStart(4)} ms  errors ${r.errors}${cpu}${rss}${pauses}`,
          );
        }
      }
      const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
      const spread = (values: number[], digits: number) =>
        `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`;
      const of = (label: string) => {
        const rs = results.get(label)!;
        return {
          rps: mean(rs.map((r) => r.rps)),
          p99: mean(rs.map((r) => r.p99)),
          rpsSpread: spread(
            rs.map((r) => r.rps),
            0,
          ),
          node: rs.every((r) => r.cpu)
            ? spread(
                rs.map((r) => r.cpu!.server),
                2,
              )
            : 'n/a',
          postgres: rs.every((r) => r.cpu)
            ? spread(
                rs.map((r) => r.cpu!.postgres),
                2,
              )
            : 'n/a',
          client: rs.every((r) => r.cpu)
            ? spread(
                rs.map((r) => r.cpu!.client),
                2,
              )
            : 'n/a',
          rss: rs.every((r) => r.rssMb !== null) ? Math.max(...rs.map((r) => r.rssMb!)) : null,
          gcPer1000: spread(
            rs.map((r) => (r.probe.gc.totalMs * 1000) / Math.max(1, r.requests)),
            0,
          ),
          gcMax: Math.max(...rs.map((r) => r.probe.gc.maxMs)),
          loopP99: Math.max(...rs.map((r) => r.probe.loopDelay.p99)),
          errors: rs.reduce((n, r) => n + r.errors, 0),
        };
      };
      const b = results.has('bare') ? of('bare') : undefined;
      const json = results.has('gateway') ? of('gateway') : undefined;
      summary.push('', `${scenario}, ${TASKS} tasks / ${USERS} users, c=${CONNECTIONS}, ${ROUNDS}x${DURATION}s each`);
      for (const target of inScenario) {
        const t = of(target.label);
        // JSON gateways are compared with the bare handler, MCP doors with the same gateway's JSON door.
        const base = target.door === 'json' ? b : target.door === 'bare' ? undefined : json;
        const ratio = base
          ? `  ratio${target.door === 'json' ? '' : ' to JSON'}: throughput ${(t.rps / base.rps).toFixed(2)}x, p99 ${(t.p99 / base.p99).toFixed(2)}x`
          : '';
        summary.push(
          `  ${target.label.padEnd(13)} ${t.rps.toFixed(0).padStart(6)} req/s (${t.rpsSpread})  p99 ${t.p99.toFixed(1)} ms  CPU/req node ${t.node} ms, postgres ${t.postgres} ms, load generator ${t.client} ms  peak RSS ${t.rss?.toFixed(0) ?? 'n/a'} MB  GC ${t.gcPer1000} ms per 1,000 calls (longest pause ${t.gcMax} ms), loop delay p99 up to ${t.loopP99} ms${ratio}`,
        );
        if (t.errors > 0) {
          summary.push(`  WARNING: ${target.label} had ${t.errors} failed requests`);
          failed = true;
        }
        if (target.door === 'json' && b && scenario === 'list_tasks') {
          failed ||= t.rps / b.rps < TARGET.throughput || t.p99 / b.p99 > TARGET.p99 || (t.rss ?? 0) > TARGET.rssMb;
        }
        if (target.door.startsWith('mcp') && json && scenario !== 'create_task') {
          failed ||= t.rps / json.rps < DOOR_TARGET.throughput || t.p99 / json.p99 > DOOR_TARGET.p99;
        }
      }
    }
    console.log(summary.join('\n'));
    console.log(
      `\ntargets: list_tasks, each JSON gateway to bare: throughput >= ${TARGET.throughput}x, p99 <= ${TARGET.p99}x, peak RSS <= ${TARGET.rssMb} MB; list_tasks and tools_list, each MCP door to JSON: throughput >= ${DOOR_TARGET.throughput}x, p99 <= ${DOOR_TARGET.p99}x: ${failed ? 'NOT MET' : 'met'}`,
    );
    if (process.env.BENCH_PROFILE_DIR)
      for (const t of targets) console.log(`profile: ${t.label} answered ${t.calls} calls in total`);
    process.exitCode = failed ? 1 : 0;
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
