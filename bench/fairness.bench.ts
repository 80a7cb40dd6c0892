/**
 * npm run bench:fairness
 *
 * Issue 34: what one user's bulk work costs another user. Atrium as a multi-user deployment runs it: one API process
 * (APP_ROLE=api) and two worker processes (APP_ROLE=worker) on a fresh database of a real PostgreSQL
 * (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres) + Redis (BENCH_REDIS_URL, default
 * redis://127.0.0.1:6379). Agent runs talk to a local model server that answers each call after BENCH_MODEL_DELAY_MS
 * (default 1500 ms), so a run is one slow step.
 *
 * 1. Idle: the small user uploads a one-line document (upload → indexed) and starts one run (execute → succeeded),
 *    BENCH_ROUNDS times (default 3), one after another.
 * 2. Loaded: the bulk user uploads a BENCH_BULK_MB text (default 10 MB) and, once it is being indexed, queues 20 runs;
 *    then the small user does the same as in 1, BENCH_ROUNDS times, while the backlog is still there.
 * Prints the small user's waits in both phases and the ratios of their medians (target: ≤ 2×). BENCH_BULK_UPLOADS=2
 * uploads two large texts (both workers' indexing busy, so the small document waits for a slice to end);
 * BENCH_FINISH=0 stops after the rounds instead of waiting for the bulk work to finish.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { proseText } from './document-builders.js';
import { http, listeningPort, percentile, type Answer } from './load-scenario.js';

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const MODEL_DELAY_MS = Number(process.env.BENCH_MODEL_DELAY_MS ?? 1500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BULK_MB = Number(process.env.BENCH_BULK_MB ?? 10);
const BULK_RUNS = 20;
/** BENCH_BULK_UPLOADS=2 keeps both workers' indexing busy with large texts, so the small document needs a slice to end. */
const BULK_UPLOADS = Number(process.env.BENCH_BULK_UPLOADS ?? 1);
/** BENCH_FINISH=0: stop after the small user's rounds instead of waiting for the bulk user's work to finish. */
const FINISH = process.env.BENCH_FINISH !== '0';

async function ok(what: string, answer: Promise<Answer>): Promise<any> {
  const res = await answer;
  if (res.status < 200 || res.status > 299) throw new Error(`${what} → ${res.status} ${res.text.slice(0, 300)}`);
  return res.json.data;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** A local OpenAI-compatible model answering every call with a final message after MODEL_DELAY_MS. */
async function slowModel(): Promise<{ baseUrl: string; close: () => void }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'chatcmpl-bench',
            object: 'chat.completion',
            created: Math.floor(Date.now() / 1000),
            model: 'bench-model',
            choices: [{ index: 0, message: { role: 'assistant', content: 'Done.' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      }, MODEL_DELAY_MS),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, close: () => server.close() };
}

function start(script: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [join(__dirname, '..', 'src', script)], { env, stdio: ['ignore', 'pipe', 'inherit'] });
}

async function main(): Promise<void> {
  // Built before any connection is open: building one takes the event loop for seconds on a busy machine, and a
  // kept-alive connection the server closed meanwhile would be reused for the upload (EPIPE).
  const largeTexts = Array.from({ length: BULK_UPLOADS }, (_, i) =>
    Buffer.from(proseText(BULK_MB * 1000 * 1000, 7 + i)),
  );
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-fairbench-'));
  const databaseName = `atrium_fairbench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${databaseName}`);
  const dbUrl = new URL(SERVER_URL);
  dbUrl.pathname = `/${databaseName}`;
  const model = await slowModel();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    PORT: '0',
    HOST: '127.0.0.1',
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATA_DIR: dataDir,
    DATABASE_URL: dbUrl.toString(),
    REDIS_URL,
    REDIS_PREFIX: `atrium-fairbench-${randomBytes(4).toString('hex')}`,
    JWT_SECRET: randomBytes(32).toString('hex'),
    API_KEY_PEPPER: randomBytes(32).toString('hex'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: model.baseUrl,
    LLM_MODEL: 'bench-model',
    UPLOAD_MAX_BYTES: String(Math.max(20, BULK_MB + 1) * 1024 * 1024),
    RATE_LIMIT_USER_PER_MIN: '1000000',
    // Fair-share and indexing settings to try (e.g. INDEX_SLICE_MS=2000) pass through to every process.
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        (entry): entry is [string, string] => /^(RAG_|EXTRACT_|INDEX_|AGENT_)/.test(entry[0]) && entry[1] !== undefined,
      ),
    ),
  };
  const api = start('main.js', { ...env, APP_ROLE: 'api' });
  const processes = [api];
  try {
    const baseUrl = `http://127.0.0.1:${await listeningPort(api)}`;
    // The API process migrated the database; the workers start on it.
    for (let i = 0; i < 2; i += 1)
      processes.push(start('worker.js', { ...env, APP_ROLE: 'worker', WORKER_HTTP_PORT: '0' }));
    for (const worker of processes.slice(1)) worker.stdout!.resume();
    console.log(`atrium: API at ${baseUrl} + 2 workers (PostgreSQL + Redis); model answers after ${MODEL_DELAY_MS} ms`);

    const user = async (name: string) => {
      const email = `${name}-${randomBytes(4).toString('hex')}@example.com`;
      const password = `pw-${randomBytes(8).toString('hex')}`;
      await http(baseUrl, 'POST', '/api/auth/register', undefined, { email, password, name });
      return (await ok('login', http(baseUrl, 'POST', '/api/auth/login', undefined, { email, password })))
        .accessToken as string;
    };
    const bulk = await user('bulk');
    const small = await user('small');
    const bulkProject = (await ok('project', http(baseUrl, 'POST', '/api/projects', bulk, { name: 'bulk' })))
      .id as string;
    const smallProject = (await ok('project', http(baseUrl, 'POST', '/api/projects', small, { name: 'small' })))
      .id as string;

    let uploads = 0;
    const uploadDocument = async (token: string, projectId: string, name: string, bytes: Buffer): Promise<string> => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(bytes)]), name);
      form.append('projectId', projectId);
      return (await ok('upload', http(baseUrl, 'POST', '/api/documents/upload', token, form))).id as string;
    };
    const documentStatus = async (token: string, id: string) =>
      (await ok('document', http(baseUrl, 'GET', `/api/documents/${id}`, token))).status as string;
    const runStatus = async (token: string, id: string) =>
      (await ok('status', http(baseUrl, 'GET', `/api/agent/status/${id}`, token))).status as string;
    const execute = async (token: string, projectId: string) =>
      (
        await ok(
          'execute',
          http(baseUrl, 'POST', '/api/agent/execute', token, {
            projectId,
            input: 'summarise the notes',
            approval: 'none',
          }),
        )
      ).jobId as string;

    /** The small user's document (upload → indexed) and run (execute → succeeded), at the same time; ms each. */
    const smallRound = async (): Promise<{ documentMs: number; runMs: number }> => {
      const document = (async () => {
        const started = performance.now();
        uploads += 1;
        const id = await uploadDocument(
          small,
          smallProject,
          `note-${uploads}.txt`,
          Buffer.from(`A one-line note number ${uploads} about a teal kettle.\n`),
        );
        await until('small document', async () => (await documentStatus(small, id)) === 'indexed');
        return performance.now() - started;
      })();
      const run = (async () => {
        const started = performance.now();
        const id = await execute(small, smallProject);
        await until('small run', async () => (await runStatus(small, id)) === 'succeeded');
        return performance.now() - started;
      })();
      const [documentMs, runMs] = await Promise.all([document, run]);
      return { documentMs, runMs };
    };

    await smallRound(); // warm-up: both workers up, the first statements prepared
    const idle: { documentMs: number; runMs: number }[] = [];
    for (let i = 0; i < ROUNDS; i += 1) idle.push(await smallRound());

    const largeStarted = performance.now();
    const larges: string[] = [];
    for (const [i, text] of largeTexts.entries())
      larges.push(await uploadDocument(bulk, bulkProject, `large-${i}.txt`, text));
    await until('large documents under way', async () =>
      (await Promise.all(larges.map((id) => documentStatus(bulk, id)))).every((status) => status === 'processing'),
    );
    const runs: string[] = [];
    for (let i = 0; i < BULK_RUNS; i += 1) runs.push(await execute(bulk, bulkProject));
    const loaded: { documentMs: number; runMs: number }[] = [];
    const backlog: string[] = [];
    for (let i = 0; i < ROUNDS; i += 1) {
      loaded.push(await smallRound());
      const runsLeft = (await Promise.all(runs.map((id) => runStatus(bulk, id)))).filter(
        (status) => status === 'queued' || status === 'running',
      ).length;
      const largeViews = await Promise.all(
        larges.map(async (id) => (await ok('document', http(baseUrl, 'GET', `/api/documents/${id}`, bulk))) as any),
      );
      const states = largeViews.map((view) => (view.error ? `${view.status} (${view.error})` : view.status));
      backlog.push(`${runsLeft} bulk runs unfinished, large documents ${states.join(', ')}`);
    }

    const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    const median = (values: number[]) => percentile(values, 50);
    console.log(`\nsmall user's waits (${ROUNDS} rounds each; the document and the run at the same time):`);
    console.log(
      `  idle:   document ${idle.map((r) => fmt(r.documentMs)).join(', ')}; run ${idle.map((r) => fmt(r.runMs)).join(', ')}`,
    );
    console.log(
      `  behind: document ${loaded.map((r) => fmt(r.documentMs)).join(', ')}; run ${loaded.map((r) => fmt(r.runMs)).join(', ')}`,
    );
    for (const [i, line] of backlog.entries()) console.log(`    after round ${i + 1}: ${line}`);
    const docRatio = median(loaded.map((r) => r.documentMs)) / median(idle.map((r) => r.documentMs));
    const runRatio = median(loaded.map((r) => r.runMs)) / median(idle.map((r) => r.runMs));
    console.log(
      `  ratio (median behind / median idle): document ${docRatio.toFixed(2)}×, run ${runRatio.toFixed(2)}× (target ≤ 2×)`,
    );
    const idleDoc = median(idle.map((r) => r.documentMs));
    const idleRun = median(idle.map((r) => r.runMs));
    console.log(
      `  per round (behind / median idle): document ${loaded.map((r) => `${(r.documentMs / idleDoc).toFixed(2)}×`).join(', ')}; run ${loaded.map((r) => `${(r.runMs / idleRun).toFixed(2)}×`).join(', ')}`,
    );

    if (!FINISH) return;
    await until('bulk runs', async () =>
      (await Promise.all(runs.map((id) => runStatus(bulk, id)))).every((status) => status === 'succeeded'),
    );
    await until(
      'large documents',
      async () =>
        (await Promise.all(larges.map((id) => documentStatus(bulk, id)))).every((status) => status === 'indexed'),
      3_600_000,
    );
    console.log(
      `bulk user's work: ${BULK_UPLOADS} × ${BULK_MB} MB text indexed after ${fmt(performance.now() - largeStarted)}; ${BULK_RUNS} runs done`,
    );
  } finally {
    for (const child of processes) child.kill('SIGTERM');
    await Promise.all(
      processes.map(
        (child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve))),
      ),
    );
    model.close();
    await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
