/**
 * npm run bench:ingest
 *
 * Issue 14: throughput of extraction + indexing, and what ingestion costs everyone else. Atrium
 * (`node dist/src/main.js`, APP_ROLE=all: HTTP and the indexing worker in one process) on a fresh
 * database of a real PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 * + Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379), or on the embedded default with
 * BENCH_DATABASE_URL=embedded (then no Redis either).
 *
 * 1. Baseline: an unrelated user's paced `list_tasks` stream (BENCH_STREAM_CALLERS callers, 50 ms apart)
 *    for BENCH_BASELINE_S seconds; its p50/p99.
 * 2. For each kind of document (a 15 MB text, 200-page PDFs, 100-page DOCX files, built here): the same stream
 *    while documents of that kind are uploaded and indexed; seconds from upload to indexed, MB/s and chunks/s,
 *    and the stream's p99 against the baseline's (target ≤ 1.5×), with the calls it counted. The 15 MB text is
 *    one document. A PDF or DOCX is indexed in seconds, so one would give its stream ~100 calls, whose p99 is
 *    the slowest call or two: those phases upload distinct documents of their kind one after another (each
 *    upload inside the window, as a user's would be) until the stream counted BENCH_MIN_CALLS calls (1,000)
 *    during at least BENCH_MIN_PHASE_S seconds (10) of ingestion. After each document the stream runs on for a
 *    quiet gap as long as that document took: its calls are a reference interleaved with the measured ones, so a
 *    busy neighbour on a shared machine weighs on both (reported as "during / quiet").
 *
 * BENCH_KINDS=text,pdf,docx picks the phases (default all three). BENCH_PROFILE_DIR=dir starts the server with
 * `--cpu-prof --cpu-prof-dir=dir` (a .cpuprofile per thread when it exits). BENCH_LOOP_DELAY=1 preloads
 * loop-delay-probe.js and prints the server's event-loop delay while documents were ingested (the highest p99 and
 * max of any one document). BENCH_TRACE=1 prints, per phase, when the slow calls (above 1.5× the baseline p99)
 * started relative to their document's upload (100 ms steps for the first second, then 500 ms) and how many the quiet
 * gaps had. The server runs with the Dockerfile CMD's Node flags; BENCH_NODE_FLAGS replaces them. BENCH_TEXT_MB sets the
 * text's size (default 15). BENCH_STREAM_CALLERS=0 runs no stream and no baseline: the upload-to-indexed rate of a
 * document alone (the bench still polls its status every 100 ms). BENCH_SERVER=path/to/dist/src/main.js runs another
 * build's server under this bench (an A/B against main).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { docxOf, pdfWithPages, proseText } from './document-builders.js';
import { http, listeningPort, percentile, type Answer } from './load-scenario.js';
import { nodeFlagsSource, productionNodeFlags } from './production-node-flags.js';

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const EMBEDDED = SERVER_URL === 'embedded';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const BASELINE_S = Number(process.env.BENCH_BASELINE_S ?? 20);
const CALLERS = Number(process.env.BENCH_STREAM_CALLERS ?? 2);
const MIN_CALLS = Number(process.env.BENCH_MIN_CALLS ?? 1000);
const MIN_PHASE_S = Number(process.env.BENCH_MIN_PHASE_S ?? 10);
const KINDS = new Set((process.env.BENCH_KINDS ?? 'text,pdf,docx').split(',').map((kind) => kind.trim()));
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const LOOP_DELAY = process.env.BENCH_LOOP_DELAY === '1';
const TRACE = process.env.BENCH_TRACE === '1';
const TEXT_MB = Number(process.env.BENCH_TEXT_MB ?? 15);
/** The server's entry: this build's, or another build's for an A/B with this bench (BENCH_SERVER=…/dist/src/main.js). */
const SERVER_ENTRY = process.env.BENCH_SERVER || join(__dirname, '..', 'src', 'main.js');
const MB = 1000 * 1000;

async function ok(what: string, answer: Promise<Answer>): Promise<any> {
  const res = await answer;
  if (res.status < 200 || res.status > 299) throw new Error(`${what} → ${res.status} ${res.text.slice(0, 300)}`);
  return res.json;
}

interface Sample {
  started: number;
  ms: number;
}

/** Paced `list_tasks` calls by CALLERS callers until `until(samples)` says stop; when each of the 200s started and took. */
async function stream(
  baseUrl: string,
  key: string,
  until: (samples: Sample[]) => Promise<boolean> | boolean,
): Promise<Sample[]> {
  const samples: Sample[] = [];
  let stop = false;
  const caller = async () => {
    while (!stop) {
      const started = performance.now();
      const res = await http(baseUrl, 'POST', '/api/v1/public/mcp/call', key, { name: 'list_tasks', arguments: {} });
      if (res.status !== 200) throw new Error(`list_tasks → ${res.status} ${res.text.slice(0, 200)}`);
      samples.push({ started, ms: performance.now() - started });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const callers = Array.from({ length: CALLERS }, caller);
  while (!(await until(samples))) await new Promise((resolve) => setTimeout(resolve, 100));
  stop = true;
  await Promise.all(callers);
  return samples;
}

const latencies = (samples: Sample[]) => samples.map((sample) => sample.ms);

/**
 * BENCH_TRACE=1: where in a document's ingestion the slow calls (above `slowMs`) fell: per 250 ms step since its
 * upload started, the calls that started in that step and how many of them were slow; and the slow calls that
 * started in no document (quiet gaps). Tells a spike at upload or extraction from one spread over the batches.
 */
function traceSlowCalls(
  samples: Sample[],
  spans: { from: number; to: number; batchesFrom?: number }[],
  slowMs: number,
): string {
  const steps = new Map<number, { calls: number; slow: number }>();
  let quietCalls = 0;
  let quietSlow = 0;
  for (const sample of samples) {
    const span = spans.find((s) => sample.started >= s.from && sample.started < s.to);
    const slow = sample.ms > slowMs ? 1 : 0;
    if (!span) {
      quietCalls += 1;
      quietSlow += slow;
      continue;
    }
    const offset = sample.started - span.from;
    const step = offset < 1000 ? Math.floor(offset / 100) / 10 : Math.floor(offset / 500) / 2;
    const entry = steps.get(step) ?? { calls: 0, slow: 0 };
    entry.calls += 1;
    entry.slow += slow;
    steps.set(step, entry);
  }
  const durations = spans.map((s) => (s.to - s.from) / 1000);
  const batchesFrom = spans.filter((s) => s.batchesFrom !== undefined).map((s) => s.batchesFrom! - s.from);
  const lines = [...steps.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([step, { calls, slow }]) => `${step.toFixed(1)}s: ${slow}/${calls}`);
  return (
    `  trace: calls above ${slowMs.toFixed(1)} ms by time since upload (slow/calls): ${lines.join(', ')}; quiet gaps ${quietSlow}/${quietCalls}; ` +
    `documents took ${Math.min(...durations).toFixed(1)}–${Math.max(...durations).toFixed(1)} s; progress first seen ` +
    `${percentile(batchesFrom, 50).toFixed(0)} ms after upload (median; ${Math.min(...batchesFrom).toFixed(0)}–${Math.max(...batchesFrom).toFixed(0)} ms, polled every 100 ms)`
  );
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-ingestbench-'));
  let admin: Client | undefined;
  let databaseName: string | undefined;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    PORT: '0',
    HOST: '127.0.0.1',
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    APP_ROLE: 'all',
    RATE_LIMIT_KEY_PER_MIN: '1000000',
    RATE_LIMIT_USER_PER_MIN: '1000000',
    // Indexing and extraction settings to try (e.g. RAG_INDEX_DUTY_CYCLE=0.5) pass through to the server.
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        (entry): entry is [string, string] => /^(RAG_|EXTRACT_)/.test(entry[0]) && entry[1] !== undefined,
      ),
    ),
  };
  if (!EMBEDDED) {
    databaseName = `atrium_ingestbench_${randomBytes(4).toString('hex')}`;
    admin = new Client({ connectionString: SERVER_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${databaseName}`);
    const dbUrl = new URL(SERVER_URL);
    dbUrl.pathname = `/${databaseName}`;
    env.DATABASE_URL = dbUrl.toString();
    if (REDIS_URL !== 'none')
      Object.assign(env, { REDIS_URL, REDIS_PREFIX: `atrium-ingestbench-${randomBytes(4).toString('hex')}` });
  }
  // The "listening" line is logged at info; keep the rest quiet.
  env.LOG_LEVEL = 'info';
  const nodeFlags = [
    ...productionNodeFlags(),
    ...(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []),
    ...(LOOP_DELAY ? ['--require', join(__dirname, 'loop-delay-probe.js')] : []),
  ];
  console.log(`server ${SERVER_ENTRY} started with: node ${nodeFlags.join(' ')} (${nodeFlagsSource()})`);
  const child = spawn(process.execPath, [...nodeFlags, SERVER_ENTRY], {
    env,
    stdio: ['ignore', 'pipe', 'inherit', ...(LOOP_DELAY ? (['ipc'] as const) : [])],
  });
  /** The server's event-loop delay (p99, max in ms) since the last call (BENCH_LOOP_DELAY=1), which resets it. */
  const loopDelay = async (): Promise<{ p99: number; max: number } | undefined> => {
    if (!LOOP_DELAY) return undefined;
    const answer = new Promise<any>((resolve) => child.once('message', resolve));
    child.send('loop-delay');
    return (await answer).loopDelay;
  };
  const describeDelay = (delays: ({ p99: number; max: number } | undefined)[]) =>
    delays.length === 0 || delays[0] === undefined
      ? ''
      : `; server loop delay p99 ${Math.max(...delays.map((d) => d!.p99))} ms, max ${Math.max(...delays.map((d) => d!.max))} ms`;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    const port = await listeningPort(child);
    const baseUrl = `http://127.0.0.1:${port}`;
    const backend = EMBEDDED ? 'embedded PGlite' : `PostgreSQL${env.REDIS_URL ? ' + Redis' : ''}`;
    console.log(`atrium at ${baseUrl} (${backend}, APP_ROLE=all); ${CALLERS} list_tasks callers, 50 ms apart`);

    const user = async (name: string) => {
      const email = `${name}-${randomBytes(4).toString('hex')}@example.com`;
      const password = `pw-${randomBytes(8).toString('hex')}`;
      await ok('register', http(baseUrl, 'POST', '/api/auth/register', undefined, { email, password, name }));
      return (await ok('login', http(baseUrl, 'POST', '/api/auth/login', undefined, { email, password }))).data
        .accessToken as string;
    };
    const uploader = await user('uploader');
    const reader = await user('reader');
    const key = (
      await ok(
        'key',
        http(baseUrl, 'POST', '/api/api-keys', reader, {
          name: 'stream',
          scopes: ['tasks:read', 'tasks:write'],
          expiresIn: 'never',
        }),
      )
    ).data.key as string;
    for (let i = 0; i < 20; i++)
      await ok(
        'create_task',
        http(baseUrl, 'POST', '/api/v1/public/mcp/call', key, {
          name: 'create_task',
          arguments: { title: `bench task ${i}` },
        }),
      );
    const projectId = (await ok('project', http(baseUrl, 'POST', '/api/projects', uploader, { name: 'ingest bench' })))
      .data.id as string;

    await stream(
      baseUrl,
      key,
      (() => {
        const end = Date.now() + 3000;
        return () => Date.now() > end; // warm-up
      })(),
    );
    await loopDelay(); // reset after the warm-up
    const baselineEnd = Date.now() + (CALLERS > 0 ? BASELINE_S * 1000 : 0);
    const baseline = latencies(await stream(baseUrl, key, () => Date.now() > baselineEnd));
    const baseP99 = percentile(baseline, 99);
    if (CALLERS > 0)
      console.log(
        `baseline: ${baseline.length} calls, p50 ${percentile(baseline, 50).toFixed(1)} ms, p99 ${baseP99.toFixed(1)} ms${describeDelay([await loopDelay()])}`,
      );

    // A kind's documents differ in every page (the seed), so none is a duplicate of another.
    const kinds: { kind: string; label: string; name: string; many: boolean; build: (seed: number) => Buffer }[] = [
      {
        kind: 'text',
        label: `${TEXT_MB} MB text`,
        name: 'large.txt',
        many: false,
        build: () => Buffer.from(proseText(Math.round(TEXT_MB * MB), 7)),
      },
      {
        kind: 'pdf',
        label: '200-page PDFs',
        name: 'report.pdf',
        many: true,
        build: (seed) => pdfWithPages(200, (page) => proseText(1800, seed * 1000 + page).replace(/\n/g, ' ')),
      },
      {
        kind: 'docx',
        label: '100-page DOCX',
        name: 'memo.docx',
        many: true,
        build: (seed) =>
          docxOf(
            Array.from({ length: 100 }, (_, page) => proseText(3000, 100_000 + seed * 1000 + page).replace(/\n/g, ' ')),
          ),
      },
    ];
    const rows: string[] = [];
    for (const { kind, label, name, many, build } of kinds.filter((k) => KINDS.has(k.kind))) {
      /** The server's loop delay while each document was ingested. */
      const delays: ({ p99: number; max: number } | undefined)[] = [];
      let documents = 0;
      let bytesTotal = 0;
      let chunksTotal = 0;
      let ingestMs = 0;
      const uploadMs: number[] = [];
      /** When documents were being ingested (upload to indexed): a call that started inside one counts as "during". */
      const ingesting: { from: number; to: number; batchesFrom?: number }[] = [];
      let current: { id: string; started: number } | undefined;
      let quietUntil = 0;
      let phaseDone = false;
      const during = (sample: Sample) =>
        ingesting.some((span) => sample.started >= span.from && sample.started < span.to);
      const upload = async () => {
        const bytes = build(documents);
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(bytes)]), name.replace('.', `-${documents}.`));
        form.append('projectId', projectId);
        await loopDelay(); // reset: this document's figure starts here
        const started = performance.now();
        const uploaded = await ok('upload', http(baseUrl, 'POST', '/api/documents/upload', uploader, form));
        uploadMs.push(performance.now() - started);
        bytesTotal += bytes.length;
        current = { id: uploaded.data.id, started };
        ingesting.push({ from: started, to: Number.POSITIVE_INFINITY });
      };
      await upload();
      // Documents of a short phase alternate with quiet gaps as long as each took: the stream's calls in the gaps
      // are a reference taken at the same time as the calls during ingestion, whatever else the machine does.
      const samples = await stream(baseUrl, key, async (sofar) => {
        if (phaseDone) return true;
        if (current === undefined) {
          if (performance.now() < quietUntil) return false;
          await upload();
          return false;
        }
        const final = (await ok('get document', http(baseUrl, 'GET', `/api/documents/${current.id}`, uploader))).data;
        if (final.status === 'failed') throw new Error(`${label} (document ${documents}) failed: ${final.error}`);
        if (final.progress && ingesting[ingesting.length - 1].batchesFrom === undefined)
          ingesting[ingesting.length - 1].batchesFrom = performance.now();
        if (final.status !== 'indexed') return false;
        const now = performance.now();
        ingesting[ingesting.length - 1].to = now;
        delays.push(await loopDelay());
        ingestMs += now - current.started;
        documents += 1;
        chunksTotal += final.chunkCount as number;
        const duringSoFar = sofar.filter(during).length;
        if (!many || ((CALLERS === 0 || duringSoFar >= MIN_CALLS) && ingestMs >= MIN_PHASE_S * 1000))
          return (phaseDone = true);
        quietUntil = now + (now - current.started);
        current = undefined;
        return false;
      });
      const seconds = ingestMs / 1000;
      const ingestLatencies = latencies(samples.filter(during));
      const quietLatencies = latencies(samples.filter((sample) => !during(sample)));
      const p99 = percentile(ingestLatencies, 99);
      const what = many
        ? `${documents} × ${(bytesTotal / documents / MB).toFixed(2)} MB`
        : `${(bytesTotal / MB).toFixed(2)} MB`;
      const uploads = many
        ? `uploads answered in ${percentile(uploadMs, 50).toFixed(0)} ms median, ${Math.max(...uploadMs).toFixed(0)} ms max`
        : `upload answered in ${uploadMs[0].toFixed(0)} ms`;
      const quiet =
        quietLatencies.length > 0
          ? `; interleaved quiet gaps: ${quietLatencies.length} calls, p99 ${percentile(quietLatencies, 99).toFixed(1)} ms, during / quiet ${(p99 / percentile(quietLatencies, 99)).toFixed(2)}×`
          : '';
      const rate = `${label}: ${what} → ${chunksTotal} chunks in ${seconds.toFixed(1)} s of ingestion (${uploads}): ${(bytesTotal / MB / seconds).toFixed(2)} MB/s, ${(chunksTotal / seconds).toFixed(0)} chunks/s`;
      const row =
        CALLERS === 0
          ? `${rate} (no stream)${describeDelay(delays)}`
          : `${rate}; list_tasks during ingestion: ${ingestLatencies.length} calls, p50 ${percentile(ingestLatencies, 50).toFixed(1)} ms, ` +
            `p99 ${p99.toFixed(1)} ms = ${(p99 / baseP99).toFixed(2)}× baseline${quiet}${describeDelay(delays)}`;
      console.log(row);
      rows.push(row);
      if (TRACE && CALLERS > 0) console.log(traceSlowCalls(samples, ingesting, 1.5 * baseP99));
    }
    console.log(
      `\nsummary (${backend}):\n  ${rows.join('\n  ')}\n  target: list_tasks p99 during ingestion ≤ 1.5× baseline`,
    );
  } finally {
    child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
    if (admin && databaseName) {
      await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
