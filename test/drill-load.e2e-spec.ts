import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  countStatus,
  describeLoadScenario,
  prepareLoadScenario,
  runLoadScenario,
  type LoadScenarioKeys,
  type LoadScenarioResult,
} from '../bench/load-scenario';
import { buildOnce, startAppProcess, type AppProcess } from './support/app-process';
import { createTestDatabase, deploymentEnv, startTestApp, type TestDatabase } from './support/test-app';

/**
 * Load drill (issue 10): at 4× the per-key limit from 20 keys at once, the service answers 429 (never
 * 500), every key gets exactly its allowance, and an unrelated key's calls keep succeeding while the load
 * runs. The scenario lives in bench/load-scenario.ts; its latency target (the unrelated key's p99 within
 * 2× its unloaded p99) is measured by `npm run bench:load`, on a quiet machine, not asserted here: a
 * 25-sample p99 on a shared 2-core CI box swings with whatever else runs (it failed one CI run at 9.5×
 * while the bench measures far less; docs/perf/drills.md). This suite prints the figures.
 *
 * With TEST_DATABASE_URL the app runs as its own process (`node dist/src/main.js`), so the clients' work
 * in this Jest process does not share the server's event loop; without it (embedded engine, which one
 * process owns) the app runs in-process as in the other suites.
 */

const LIMIT = 30;
const LOADED_KEYS = 20;
const CALLS_PER_KEY = 40;
const QUIET_CALLS = 25;

describe('load drill: 20 keys at 4× the per-key limit', () => {
  let baseUrl: string;
  let kind: string;
  let close: () => Promise<void> = async () => {};
  let keys: LoadScenarioKeys;

  beforeAll(async () => {
    const limits = {
      RATE_LIMIT_KEY_PER_MIN: String(LIMIT),
      RATE_LIMIT_USER_PER_MIN: '1000000',
      RATE_LIMIT_USER_TOOLS_PER_MIN: '1000000',
    };
    if (process.env.TEST_DATABASE_URL) {
      buildOnce();
      const database: TestDatabase = await createTestDatabase();
      const dataDir = mkdtempSync(join(tmpdir(), 'atrium-load-'));
      const proc: AppProcess = await startAppProcess({
        NODE_ENV: 'test',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info', // startAppProcess waits for the "listening" info line
        DATABASE_URL: database.url,
        ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
        ...deploymentEnv('load'),
        APP_ROLE: 'api',
        ...limits,
      });
      baseUrl = proc.baseUrl;
      kind = `postgres, app in its own process${process.env.TEST_REDIS_URL ? ' + redis' : ''}`;
      close = async () => {
        proc.child.kill('SIGTERM');
        await proc.exited;
        await database.drop();
        rmSync(dataDir, { recursive: true, force: true });
      };
    } else {
      const inProcess = await startTestApp({ env: limits });
      baseUrl = inProcess.baseUrl;
      kind = `${inProcess.database.kind}, app in-process`;
      close = () => inProcess.close();
    }
    keys = await prepareLoadScenario(baseUrl, LOADED_KEYS);
  }, 180_000);

  afterAll(async () => {
    await close();
  });

  it('answers only 200/429 (429s with Retry-After and rate_limited) to 20 keys at 4× the limit, never 5xx; the unrelated key gets only 200s', async () => {
    const result: LoadScenarioResult = await runLoadScenario(baseUrl, keys, {
      limit: LIMIT,
      callsPerKey: CALLS_PER_KEY,
      quietCalls: QUIET_CALLS,
    });
    // eslint-disable-next-line no-console
    console.log([`drill-load (${kind}):`, ...describeLoadScenario(result)].join('\n'));

    const all = result.perKey.flat();
    const problems = [...all, ...result.unloaded, ...result.loaded].filter((s) => s.problem).map((s) => s.problem!);
    expect(problems.slice(0, 5)).toEqual([]);
    expect(all).toHaveLength(LOADED_KEYS * CALLS_PER_KEY);
    expect(all.filter((s) => s.status >= 500 || s.status === 0)).toHaveLength(0);
    expect(all.every((s) => s.status === 200 || s.status === 429)).toBe(true);
    // Each key got exactly its allowance: the limiter neither let more through nor refused early.
    for (const samples of result.perKey) expect(countStatus(samples, 200)).toBe(LIMIT);
    expect(result.unloaded.every((s) => s.status === 200)).toBe(true);
    expect(result.loaded.every((s) => s.status === 200)).toBe(true);
    // The unrelated calls actually overlapped the load (otherwise "unaffected" would mean nothing).
    expect(result.quietUnderLoad).toBeGreaterThan(0);
  }, 120_000);
});
