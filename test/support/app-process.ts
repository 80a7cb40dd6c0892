import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { isProcessAlive } from '../../src/database/data-dir-lock.js';
import { buildIfStale, distIsCurrent } from '../../scripts/build-if-stale.js';
import { createTestDatabase, deploymentEnv, type TestDatabase } from './test-app.js';

const ROOT = join(__dirname, '..', '..');
const BUILD_LOCK = join(ROOT, '.test-build.lock');

/** Takes the build lock, waiting for another test process's build; a lock left by a dead process is taken over. */
function withBuildLock(fn: () => void): void {
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      const fd = openSync(BUILD_LOCK, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readFileSync(BUILD_LOCK, 'utf8').trim());
      if (!holder || !isProcessAlive(holder)) {
        unlinkSync(BUILD_LOCK);
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${BUILD_LOCK} is held by pid ${holder} for more than 10 minutes`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    fn();
  } finally {
    unlinkSync(BUILD_LOCK);
  }
}

/**
 * Compiles the app exactly as `npm start` does (scripts/build-if-stale.ts: `nest build` unless dist/ was built from
 * the same inputs), so the process tests of one run (and of the next run, if nothing changed) share one build.
 * A lock file keeps two test processes from building into the same dist/ at once.
 */
export function buildOnce(): void {
  if (distIsCurrent(ROOT)) return;
  withBuildLock(() => buildIfStale(ROOT)); // a no-op when built by the process we waited for
}

export interface AppProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * SHUTDOWN_DRAIN_DELAY_MS of the processes tests start, unless a test sets it: on SIGTERM an HTTP process keeps
 * answering (readiness 503) this long before it closes, 5 s by default, which is 5 s of waiting for each process a
 * test stops only to clean up. The tests of the drain itself give it (process-lifecycle, backend-contract).
 */
const CLEANUP_DRAIN_DELAY_MS = '100';

/**
 * Starts `node dist/src/main.js` with the given environment and waits for its "listening" log line
 * ("worker started" for APP_ROLE=worker: its baseUrl is the probe port, /api/health and /api/ready only).
 */
export async function startAppProcess(env: Record<string, string>, timeoutMs = 90_000): Promise<AppProcess> {
  const readyMsg = env.APP_ROLE === 'worker' ? 'worker started' : 'listening';
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: '0',
      WORKER_HTTP_PORT: '0',
      HOST: '127.0.0.1',
      SHUTDOWN_DRAIN_DELAY_MS: CLEANUP_DRAIN_DELAY_MS,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`app did not start in time:\n${output}`)), timeoutMs);
    const scan = () => {
      const line = output.split('\n').find((l) => l.includes(`"msg":"${readyMsg}"`));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line).port as number | undefined) ?? 0);
      }
    };
    child.stdout!.on('data', scan);
    void exited.then((code) => {
      // Cleared, or a process that was meant to fail at start-up keeps Jest waiting for the timer.
      clearTimeout(timer);
      reject(new Error(`app exited with ${code} before listening:\n${output}`));
    });
  });
  return { child, baseUrl: port ? `http://127.0.0.1:${port}` : '', output: () => output, exited };
}

export interface BuiltServer {
  process: AppProcess;
  baseUrl: string;
  /** supertest against the process, for the test factories (makeUser, makeApiKey). */
  http: ReturnType<typeof request>;
  /** SIGTERM, expects exit 0, drops the test database and the data directory. */
  stop(): Promise<number | null>;
}

/**
 * Builds (once) and starts `node dist/src/main.js` as a user runs it: `services` on a fresh database of
 * TEST_DATABASE_URL's server with TEST_REDIS_URL, `embedded` with neither (the zero-config default).
 */
export async function startBuiltServer(
  backing: 'embedded' | 'services',
  env: Record<string, string> = {},
): Promise<BuiltServer> {
  buildOnce();
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-built-'));
  const processEnv: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  let database: TestDatabase | undefined;
  if (backing === 'services') {
    database = await createTestDatabase();
    Object.assign(processEnv, deploymentEnv('built'), { DATABASE_URL: database.url });
    if (process.env.TEST_REDIS_URL) processEnv.REDIS_URL = process.env.TEST_REDIS_URL;
  }
  const proc = await startAppProcess({ ...processEnv, ...env });
  return {
    process: proc,
    baseUrl: proc.baseUrl,
    http: request(proc.baseUrl),
    stop: async () => {
      if (proc.child.exitCode === null) proc.child.kill('SIGTERM');
      const code = await proc.exited;
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}
