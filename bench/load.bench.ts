/**
 * npm run bench:load
 *
 * The latency half of issue 10's load drill: Atrium (`node dist/src/main.js`, APP_ROLE=api) on a fresh
 * database of a real PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 * and Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379; "none" for the in-memory limiter), with
 * RATE_LIMIT_KEY_PER_MIN=30. Each round: 20 keys call `list_tasks` at 4× that limit for 20 s while an
 * unrelated user makes 100 paced calls (over 4 keys of its own, each under the limit); their p99 is
 * compared with 100 such calls made before the load.
 * Prints each round and the median ratio. Target: loaded p99 <= 2.00x the unloaded p99.
 * The status rules of the same scenario are asserted on every CI run by test/drill-load.e2e-spec.ts.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import {
  describeLoadScenario,
  listeningPort,
  prepareLoadScenario,
  runLoadScenario,
  unrelatedKeyLatency,
} from './load-scenario.js';

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LIMIT = 30;
/**
 * 100 calls per phase (a p99 of 25 samples is just their maximum, one GC pause decides it), spread over
 * 4 keys of the unrelated user so that none of them passes the limit; 150 ms apart, so the loaded phase
 * (2 s + 100 × ~155 ms) ends inside the 20 s load.
 */
const QUIET_CALLS = 100;
const QUIET_KEYS = 4;

async function main(): Promise<void> {
  const name = `atrium_loadbench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const dbUrl = new URL(SERVER_URL);
  dbUrl.pathname = `/${name}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-loadbench-'));
  const child = spawn(process.execPath, [join(__dirname, '..', 'src', 'main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATA_DIR: dataDir,
      DATABASE_URL: dbUrl.toString(),
      ...(REDIS_URL === 'none'
        ? {}
        : { REDIS_URL, REDIS_PREFIX: `atrium-loadbench-${randomBytes(4).toString('hex')}` }),
      APP_ROLE: 'api',
      RATE_LIMIT_KEY_PER_MIN: String(LIMIT),
      RATE_LIMIT_USER_PER_MIN: '1000000',
      // The per-key limit is what this bench loads; one user's budget across keys is not.
      RATE_LIMIT_USER_TOOLS_PER_MIN: '1000000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    const port = await listeningPort(child);
    const baseUrl = `http://127.0.0.1:${port}`;
    console.log(
      `atrium at ${baseUrl} (limit ${LIMIT}/min per key, Redis: ${REDIS_URL === 'none' ? 'no' : 'yes'}); ${ROUNDS} rounds of about 40 s`,
    );
    const ratios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // Fresh keys each round: the limiter's 60 s window would otherwise still hold the last round's calls.
      const keys = await prepareLoadScenario(baseUrl, 20, QUIET_KEYS);
      const result = await runLoadScenario(baseUrl, keys, { limit: LIMIT, quietCalls: QUIET_CALLS, quietGapMs: 150 });
      const problems = [...result.perKey.flat(), ...result.unloaded, ...result.loaded].filter((s) => s.problem);
      console.log(`round ${round}:\n  ${describeLoadScenario(result).join('\n  ')}`);
      if (problems.length > 0)
        console.log(`  WARNING: ${problems.length} answers outside the drill's rules, e.g. ${problems[0].problem}`);
      ratios.push(unrelatedKeyLatency(result).ratio);
    }
    const median = [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)];
    console.log(
      `\nunrelated key p99 under load / unloaded: rounds ${ratios.map((r) => `${r.toFixed(2)}x`).join(', ')}; median ${median.toFixed(2)}x (target <= 2.00x)`,
    );
    process.exitCode = median <= 2 ? 0 : 1;
  } finally {
    child.kill('SIGTERM');
    await exited;
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().catch((error) => {
  console.error(error);
  process.exit(1);
});
