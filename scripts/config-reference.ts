/**
 * Writes docs/configuration.md from the configuration declaration itself (src/config/app-config.ts): every
 * variable `loadConfig` reads, with its default, its accepted range or values, as the code has them. Only the
 * prose (what a variable is for) is written here, in DESCRIPTIONS below; a variable the code reads without a
 * description here, or a description of a variable the code no longer reads, stops the script.
 *
 * Usage: npm run docs:config              (writes docs/configuration.md)
 *        npm run docs:config -- --check   (CI: fails when the committed file is not what the code says)
 *
 * How: the config modules are transpiled to CommonJS in a temporary folder and loaded there; the readers of
 * EnvReader are wrapped to record each variable's name, reader and arguments; loadConfig runs once per provider
 * (offline and openai), since some defaults depend on it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(dirname(process.argv[1]), '..');
const OUTPUT = join(ROOT, 'docs', 'configuration.md');

interface Description {
  group: string;
  text: string;
  /** Shown instead of the recorded default when the default is computed (a path, a generated secret…). */
  default?: string;
  /** Shown instead of the reader's accepted values when the code checks more than its reader says. */
  accepted?: string;
}

const GROUPS = [
  'Process',
  'Storage',
  'Secrets and sign-in',
  'Limits',
  'MCP and OAuth',
  'Embeddings and search',
  'Indexing',
  'Extraction of uploads',
  'Agent runs and webhooks',
  'GitHub',
  'Audit',
  'Shutdown',
  'Metrics and traces',
] as const;

const DESCRIPTIONS: Record<string, Description> = {
  NODE_ENV: {
    group: 'Process',
    text: '`production` requires the three secrets (`JWT_SECRET`, `API_KEY_PEPPER`, `ENCRYPTION_KEY`) and warns about an open `/metrics`',
  },
  APP_ROLE: {
    group: 'Process',
    text: '`all` = HTTP + queue workers; `api` = HTTP only; `worker` = workers only (no API; probes on `WORKER_HTTP_PORT`)',
  },
  PORT: { group: 'Process', text: 'HTTP listener port' },
  HOST: { group: 'Process', text: 'HTTP listener address' },
  WORKER_HTTP_PORT: {
    group: 'Process',
    text: '`APP_ROLE=worker`: port of its `GET /api/health`, `/api/ready` and `/metrics` (nothing else is served there)',
  },
  LOG_LEVEL: {
    group: 'Process',
    text: "logs are JSON lines (pino) from the first line on, with the request id; one access line per request (`method`, `route` pattern, `status`, `durationMs`, `requestId`, `credential: {kind, id}`; never headers, bodies or secrets); Nest's module and route wiring at `debug`",
  },
  APP_VERSION: {
    group: 'Process',
    text: 'the version `/api/health` reports',
    default: 'the `version` of package.json',
  },
  PUBLIC_URL: {
    group: 'Process',
    text: 'the address clients reach Atrium at: OAuth issuer, MCP resource identifier, base of every OAuth URL; its origin may use the MCP endpoint from a browser. An origin with an optional path, no query or credentials',
    default: '`http://localhost:$PORT`',
  },
  TRUST_PROXY: {
    group: 'Process',
    text: "Express `trust proxy` syntax: the proxies whose `X-Forwarded-For` names the client (addresses, CIDR ranges, `loopback`, `linklocal`, `uniquelocal`, or a hop count 0..10). Unset, per-IP limits (login, anonymous routes) count the socket address, so no client can pick its own. Set it behind a reverse proxy or load balancer (e.g. `10.0.0.0/8` for a cluster's ingress); `true` is refused",
    default: 'none',
    accepted: 'addresses, CIDR ranges, names, or a hop count',
  },
  DATA_DIR: {
    group: 'Storage',
    text: 'embedded database and generated secrets; one process at a time (`DATA_DIR/atrium.lock`: a second process stops with exit code 75 naming the directory and the PID holding it; a lock whose PID is dead is taken over)',
  },
  DATABASE_URL: {
    group: 'Storage',
    text: 'PostgreSQL (with the pgvector extension) to use instead of the embedded engine',
  },
  DATABASE_POOL_SIZE: {
    group: 'Storage',
    text: "connections per process (RAG search uses the same pool, two connections per hybrid search); on PostgreSQL each process opens up to 2 more for the per-call count, so that no tool call's count queues behind reads",
  },
  DATABASE_NAMED_STATEMENTS: {
    group: 'Storage',
    text: "RAG search's statements and `list_tasks` run as named (prepared) statements of their pooled connection, parsed and planned once per connection (never on the embedded engine); set `false` behind a pooler in transaction mode that does not carry prepared statements. Each pooled session also starts with `jit = off` and the HNSW search settings (one statement when the pool opens it)",
  },
  REDIS_URL: {
    group: 'Storage',
    text: "Redis for BullMQ and shared rate limits; unset = BullMQ's PostgreSQL backend and in-process limits",
  },
  REDIS_PREFIX: { group: 'Storage', text: 'key prefix in Redis' },
  JWT_SECRET: {
    group: 'Secrets and sign-in',
    text: 'signs user access tokens (≥ 32 characters)',
    default: 'generated into `DATA_DIR/secrets.json`',
  },
  API_KEY_PEPPER: {
    group: 'Secrets and sign-in',
    text: 'HMAC pepper for API keys and project session tokens (≥ 32 characters); a new one invalidates every key and token',
    default: 'generated into `DATA_DIR/secrets.json`',
  },
  ENCRYPTION_KEY: {
    group: 'Secrets and sign-in',
    text: '32 bytes, base64 (`openssl rand -base64 32`): AES-256-GCM for stored GitHub tokens and webhook secrets',
    default: 'generated into `DATA_DIR/secrets.json`',
  },
  ADMIN_EMAIL: {
    group: 'Secrets and sign-in',
    accepted: 'an email address',
    text: 'with `ADMIN_PASSWORD`: this user is created or promoted to admin at every start (idempotent)',
  },
  ADMIN_PASSWORD: {
    group: 'Secrets and sign-in',
    accepted: '≥ 10 characters',
    text: "with `ADMIN_EMAIL` (≥ 10 characters): an existing user's password is set to it, so the old one stops working",
  },
  AUTH_SIGNUP: {
    group: 'Secrets and sign-in',
    text: '`closed` stops self-registration: `POST /api/auth/register` answers 403 `FORBIDDEN` (even for the first account; create it with `ADMIN_EMAIL`)',
  },
  ACCESS_TOKEN_TTL_SECONDS: { group: 'Secrets and sign-in', text: 'user access token lifetime' },
  JSON_BODY_MAX_BYTES: { group: 'Limits', text: 'JSON body limit (413)' },
  UPLOAD_MAX_BYTES: { group: 'Limits', text: 'document upload limit (413)' },
  RATE_LIMIT_KEY_PER_MIN: {
    group: 'Limits',
    text: 'tool API calls per API key or OAuth grant per minute (429 `rate_limited`)',
  },
  RATE_LIMIT_USER_PER_MIN: {
    group: 'Limits',
    text: 'backend route calls per user or project token per minute, one budget across all routes (anonymous routes: per IP); 429 `RATE_LIMITED` with `Retry-After`; `/api/health` and `/api/ready` are never limited',
  },
  RATE_LIMIT_USER_TOOLS_PER_MIN: {
    group: 'Limits',
    text: 'tool API calls per user per minute across all their API keys and OAuth grants (429 `rate_limited`); see [Fair shares and limits](operations.md#fair-shares-and-limits)',
    default: "`RATE_LIMIT_KEY_PER_MIN` (300): one key's budget, so more keys buy no more calls",
  },
  MAX_CREDENTIALS_PER_USER: {
    group: 'Limits',
    text: 'active API keys and OAuth grants per user; creating a key beyond is 409 `CONFLICT`. The default of the admin policy `maxCredentialsPerUser`, which replaces it once an admin saves a policy',
  },
  RATE_LIMIT_LOGIN_PER_15_MIN: { group: 'Limits', text: 'login attempts per IP + email' },
  MCP_ALLOWED_ORIGINS: {
    group: 'MCP and OAuth',
    text: "comma-separated browser origins allowed on the MCP endpoint (besides `PUBLIC_URL`'s own origin)",
    default: 'empty',
  },
  MCP_SESSION_TTL_MS: {
    group: 'MCP and OAuth',
    text: 'a 2025-era MCP session unused this long is gone (404; the client initializes again); the v1 SDK client does not re-initialize by itself, hence a long default',
  },
  MCP_CONFORMANCE_FIXTURES: {
    group: 'MCP and OAuth',
    text: "`true` adds the official MCP conformance suite's fixture tools, resources and prompts to the MCP endpoint for any valid credential (`npm run conformance`; refused with `NODE_ENV=production`)",
  },
  MCP_CONFIRM_TIMEOUT_MS: {
    group: 'MCP and OAuth',
    text: 'how long a write of a "confirm writes" credential on a 2025-era session waits for the user\'s elicitation answer before it fails with `confirmation_required` (the v1 SDK client\'s own request timeout is 60 s unless the caller raises it)',
  },
  OAUTH_ACCESS_TOKEN_TTL_SECONDS: {
    group: 'MCP and OAuth',
    text: 'lifetime of OAuth access tokens (`ato_…`); refresh tokens live as long as the authorization',
  },
  OAUTH_ALLOW_PRIVATE_CLIENT_METADATA: {
    group: 'MCP and OAuth',
    text: '`true` lets client ID metadata documents be fetched from private/loopback addresses (and over plain `http` there): development only, it turns the SSRF guard off',
  },
  EMBEDDINGS_PROVIDER: {
    group: 'Embeddings and search',
    text: '`offline` (feature hashing, no network, not semantic) or `openai` (any OpenAI-compatible `/v1/embeddings`); changing it re-indexes every project',
  },
  EMBEDDINGS_BASE_URL: {
    group: 'Embeddings and search',
    text: 'base URL of the OpenAI-compatible embeddings service',
    default: '`https://api.openai.com/v1`',
  },
  EMBEDDINGS_MODEL: { group: 'Embeddings and search', text: 'embeddings model name' },
  EMBEDDINGS_API_KEY: {
    group: 'Embeddings and search',
    text: 'secret of the embeddings service; never logged or returned',
  },
  EMBEDDINGS_DIMENSIONS: { group: 'Embeddings and search', text: 'vector size (HNSW indexes up to 2000)' },
  EMBEDDINGS_BATCH_SIZE: { group: 'Embeddings and search', text: 'texts per embeddings request' },
  EMBEDDINGS_TIMEOUT_MS: { group: 'Embeddings and search', text: 'per-request timeout of the embeddings service' },
  RAG_CHUNK_TARGET_CHARS: { group: 'Embeddings and search', text: 'chunker: target chunk size' },
  RAG_CHUNK_OVERLAP_CHARS: { group: 'Embeddings and search', text: 'chunker: overlap between neighbouring chunks' },
  RAG_HYBRID_VECTOR_WEIGHT: {
    group: 'Embeddings and search',
    text: 'weight of the vector list in hybrid fusion (0 = keyword only, 1 = vector only); the default suits the offline embedder, raise it with a semantic embeddings provider',
  },
  RAG_STALE_AFTER_MS: {
    group: 'Indexing',
    text: 'when an indexing job whose worker died is taken over; also how long a document may sit unfinished without a live job before recovery gives it one (every upload answered 201 ends `indexed` or `failed`)',
  },
  RAG_RECOVERY_INTERVAL_MS: { group: 'Indexing', text: 'how often a process looks for indexing jobs to re-enqueue' },
  RAG_INDEX_DUTY_CYCLE: {
    group: 'Indexing',
    text: 'share of wall time the indexing of a document of ≥ `RAG_INDEX_PACED_MIN_CHUNKS` chunks may work on PostgreSQL while requests are served (1 = no pause): the writer pauses after each batch, leaving CPU to requests; with none served (under a tenth of the last second) it works at full speed; a process that serves none (`APP_ROLE=worker`) reads the busiest share the API instances published in PostgreSQL within 5 s, and paces while none did ([operations.md](operations.md#how-work-is-scheduled), [perf/ingest.md](perf/ingest.md))',
  },
  RAG_INDEX_PACED_MIN_CHUNKS: {
    group: 'Indexing',
    text: 'the smallest document (in chunks) paced: at `RAG_INDEX_DUTY_CYCLE` in batches of at most `RAG_INDEX_PACED_BATCH_CHUNKS` while requests are served; 0 paces every document',
  },
  RAG_INDEX_PACED_BATCH_CHUNKS: {
    group: 'Indexing',
    text: "most chunks per batch (statement and transaction) of a paced document while requests are served (otherwise up to 256): pacing lowers other users' latency only with short bursts of PostgreSQL work between pauses",
  },
  RAG_INDEX_SEGMENT_MIN_CHUNKS: {
    group: 'Indexing',
    text: 'on PostgreSQL, the smallest document (in chunks) written into pending segments (default 500; 0: none, every document goes into the main indexes directly): outside the main HNSW graph and postings index, each segment with indexes of its own built once full or written (searchable from then on), merged into the main ones in the background while the service is quiet. See [Pending segments](perf/ingest.md#pending-segments-capped-paced-and-on-by-default-2026-11-28-session-21)',
  },
  RAG_INDEX_SEGMENT_MAX_CHUNKS: {
    group: 'Indexing',
    text: "most chunks one pending segment takes (default 4096): a larger document fills several, each indexed and searchable once full, so no segment's index build is long (it holds off other chunk writes) and its HNSW graph fits in PostgreSQL's default maintenance_work_mem",
  },
  RAG_INDEX_SEGMENT_MERGE_DELAY_MS: {
    group: 'Indexing',
    text: "how long after a pending segment becomes searchable its background merge into the main indexes starts (a worker or `all` process; paced like indexing while requests are served); until then search reads the segment's own indexes beside the main ones",
  },
  INDEX_SLICE_MS: {
    group: 'Indexing',
    text: "a waiting indexing job of another user or project (the fairest) runs between a job's batches for up to five slices (or `INDEX_SLICE_CHUNKS` chunks); after a job that used its whole turn, the first works this long before it asks again; see [Fair shares and limits](operations.md#fair-shares-and-limits)",
  },
  INDEX_SLICE_CHUNKS: {
    group: 'Indexing',
    text: "the most chunks of a job run in between (its turn), and of the first job's share after such a turn (or `INDEX_SLICE_MS`)",
  },
  INDEX_MAX_QUEUED_PER_USER: {
    group: 'Indexing',
    text: "a user's queued + running indexing jobs; beyond, uploads and ingests are 429 `RATE_LIMITED` with `Retry-After`",
  },
  EXTRACT_MAX_TEXT_BYTES: {
    group: 'Extraction of uploads',
    text: 'text one upload may expand to; more ends the document `failed` with a message naming this variable',
  },
  EXTRACT_MAX_PAGES: { group: 'Extraction of uploads', text: 'pages of a PDF (checked before any page is read)' },
  EXTRACT_MAX_ARCHIVE_ENTRIES: {
    group: 'Extraction of uploads',
    text: 'entries of a DOCX (ZIP) archive, read from its central directory before anything is inflated',
  },
  EXTRACT_MAX_COMPRESSION_RATIO: {
    group: 'Extraction of uploads',
    text: 'inflated ÷ compressed size of any archive entry over 1 MiB: from the central directory first, then while inflating (which stops at the limit, or when an entry inflates past its declared size)',
  },
  EXTRACT_MAX_INFLATED_BYTES: { group: 'Extraction of uploads', text: 'all entries of an archive together, inflated' },
  EXTRACT_MAX_NESTING_DEPTH: {
    group: 'Extraction of uploads',
    text: 'open HTML elements at once (elements whose end tag may be omitted, `<p>`, `<li>`…, do not count)',
  },
  EXTRACT_TIMEOUT_MS: {
    group: 'Extraction of uploads',
    text: "one extraction (or chunking) in its sandbox thread, counted from when the thread begins it (not a fresh thread's start); past it the thread is terminated and the document fails",
  },
  EXTRACT_MAX_MEMORY_MB: {
    group: 'Extraction of uploads',
    text: 'V8 heap of one sandbox thread; a file that needs more kills only that thread and fails its document',
  },
  EXTRACT_CONCURRENCY: {
    group: 'Extraction of uploads',
    text: 'sandbox threads per process (extraction and chunking of large texts and the offline embedder run there, never on the HTTP event loop)',
  },
  EXTRACT_THREAD_NICE: {
    group: 'Extraction of uploads',
    text: 'nice value of each sandbox thread (Linux, per thread; never raises one above the process; 0 = as the process): when the cores are busy the HTTP event loop gets one before extraction and embedding do; `EXTRACT_TIMEOUT_MS` is wall time',
  },
  LLM_PROVIDER: {
    group: 'Agent runs and webhooks',
    text: '`offline` (deterministic retrieval agent, not an LLM) or `openai` (any OpenAI-compatible Chat Completions with tool calling)',
  },
  LLM_BASE_URL: {
    group: 'Agent runs and webhooks',
    text: 'base URL of the Chat Completions service (`{base}/chat/completions`)',
    default: '`https://api.openai.com/v1`',
  },
  LLM_API_KEY: { group: 'Agent runs and webhooks', text: 'secret of the LLM service; never logged or returned' },
  LLM_MODEL: { group: 'Agent runs and webhooks', text: 'model name' },
  LLM_TIMEOUT_MS: {
    group: 'Agent runs and webhooks',
    text: 'one HTTP attempt; the per-step timeout bounds all attempts of a step together',
  },
  LLM_MAX_RETRIES: {
    group: 'Agent runs and webhooks',
    text: 'retries after 429/5xx/network failures, with exponential backoff (`Retry-After` honoured)',
  },
  AGENT_RUN_TIMEOUT_MS: { group: 'Agent runs and webhooks', text: 'wall-clock limit of a run' },
  AGENT_STEP_TIMEOUT_MS: { group: 'Agent runs and webhooks', text: 'wall-clock limit of one step' },
  AGENT_STALE_AFTER_MS: {
    group: 'Agent runs and webhooks',
    text: 'a running run whose heartbeat is older than this belongs to a dead worker and is taken over',
  },
  AGENT_RECOVERY_INTERVAL_MS: {
    group: 'Agent runs and webhooks',
    text: 'how often a worker looks for runs to recover',
  },
  AGENT_APPROVAL_TIMEOUT_MS: {
    group: 'Agent runs and webhooks',
    text: 'a run waiting longer than this for an approval (`approval: "auto"`, the default, or `"writes"`; see [security.md](security.md)) fails',
  },
  AGENT_STREAM_CREDENTIAL_CHECK_MS: {
    group: 'Agent runs and webhooks',
    text: 'how often an open run stream re-checks its credential; it ends when that expired or was revoked',
  },
  AGENT_STREAM_HEARTBEAT_MS: {
    group: 'Agent runs and webhooks',
    text: 'comment line on an idle `GET /api/agent/stream/:jobId` so proxies keep it open',
  },
  WEBHOOK_ALLOW_PRIVATE: {
    group: 'Agent runs and webhooks',
    text: '`true` lets run webhooks use `http` and private/loopback addresses (development only)',
    default: '`false`',
    accepted: '`true`, anything else is false',
  },
  WEBHOOK_RETRY_BASE_MS: {
    group: 'Agent runs and webhooks',
    text: 'first retry delay of a failed webhook delivery, doubling each time',
  },
  WEBHOOK_MAX_ATTEMPTS: {
    group: 'Agent runs and webhooks',
    text: 'delivery attempts of a webhook (with the defaults the last is about 22 h after the first)',
  },
  WEBHOOK_TIMEOUT_MS: {
    group: 'Agent runs and webhooks',
    text: "one delivery attempt's whole deadline (connection, request, status line; not an idle timeout); the answer's body is never read",
  },
  WEBHOOK_MAX_IN_FLIGHT_PER_USER: {
    group: 'Agent runs and webhooks',
    text: "one user's webhook deliveries under way at once across all worker processes (leases in Redis, else in PostgreSQL); the user's further deliveries wait their turn, not an attempt",
  },
  AGENT_MAX_ACTIVE_PER_USER: {
    group: 'Agent runs and webhooks',
    text: "a user's queued + running runs; beyond, starting a run is 429 `RATE_LIMITED` with `Retry-After`",
  },
  AGENT_MAX_STREAMS_PER_USER: {
    group: 'Agent runs and webhooks',
    text: "a user's open run streams, across all instances (Redis, else PostgreSQL leases); beyond, 429 `RATE_LIMITED`",
  },
  GITHUB_API_URL: {
    group: 'GitHub',
    text: 'GitHub or GitHub Enterprise Server REST root',
    default: '`https://api.github.com`',
  },
  GITHUB_TOKEN: {
    group: 'GitHub',
    text: 'server token for registered repositories that bring none; never logged or returned',
  },
  GITHUB_TIMEOUT_MS: { group: 'GitHub', text: 'per-request timeout; a slower GitHub call fails as `upstream_error`' },
  GITHUB_MAX_RETRIES: {
    group: 'GitHub',
    text: 'retries of reads after a 5xx or network failure (writes are never retried)',
  },
  AUDIT_RETENTION_DAYS: {
    group: 'Audit',
    text: "audit entries older than this are pruned hourly; the table's trigger refuses any other DELETE, every UPDATE and TRUNCATE",
  },
  SHUTDOWN_DRAIN_DELAY_MS: {
    group: 'Shutdown',
    text: 'SIGTERM: how long `/api/ready` answers 503 while requests are still served, before the listener closes (HTTP roles; a worker stops at once)',
  },
  SHUTDOWN_TIMEOUT_MS: {
    group: 'Shutdown',
    text: 'SIGTERM: after the drain delay, deadline for in-flight work before a forced exit (exit 1)',
  },
  METRICS_ENABLED: {
    group: 'Metrics and traces',
    text: '`false`: no `GET /metrics` anywhere and no per-request measuring',
  },
  METRICS_PORT: {
    group: 'Metrics and traces',
    text: 'serve `GET /metrics` on a listener of its own (the main port then answers 404 there; must differ from `PORT`); workers serve theirs on `WORKER_HTTP_PORT` whatever this says',
    accepted: 'integer 0..65535',
  },
  METRICS_TOKEN: {
    group: 'Metrics and traces',
    text: '≥ 16 characters; wherever `/metrics` is served, a scraper must send it as `Authorization: Bearer …` (401 otherwise). Unset: `/metrics` is open (a production start logs a warning then)',
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    group: 'Metrics and traces',
    text: "turns tracing on: OTLP/HTTP (protobuf) to `<endpoint>/v1/traces`, e.g. `http://otel-collector:4318`. Unset: the OpenTelemetry SDK is not even loaded. The SDK's standard variables apply too (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_BSP_*`)",
  },
  OTEL_SERVICE_NAME: {
    group: 'Metrics and traces',
    text: '`service.name` of the spans (e.g. `atrium-api` and `atrium-worker`)',
  },
};

interface Reading {
  reader: string;
  args: unknown[];
}

/** The config module and what it imports, transpiled to CommonJS under `dir`, mirroring the source tree. */
function transpileConfig(dir: string): void {
  const pending = [join(ROOT, 'src', 'config', 'app-config.ts')];
  const done = new Set<string>();
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (done.has(file)) continue;
    done.add(file);
    const source = readFileSync(file, 'utf8');
    for (const [, specifier] of source.matchAll(/from '(\.{1,2}\/[^']+)\.js'/g))
      pending.push(resolve(dirname(file), `${specifier}.ts`));
    const output = ts.transpileModule(source, {
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        esModuleInterop: true,
        experimentalDecorators: true,
      },
      fileName: file,
    }).outputText;
    const target = join(dir, relative(ROOT, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, output);
  }
  // readPackageVersion looks for package.json two folders above src/config.
  writeFileSync(join(dir, 'package.json'), readFileSync(join(ROOT, 'package.json')));
}

type Load = (env: Record<string, string | undefined>) => unknown;

/** Every variable loadConfig reads under `env`, in reading order, with its reader and arguments. */
function record(dir: string, env: Record<string, string>): Map<string, Reading> {
  const load = createRequire(join(dir, 'index.js'));
  const { EnvReader } = load('./src/config/env-readers.js') as {
    EnvReader: { prototype: Record<string, (...args: unknown[]) => unknown> };
  };
  const { loadConfig } = load('./src/config/app-config.js') as { loadConfig: Load };
  const readings = new Map<string, Reading>();
  const originals: Record<string, (...args: unknown[]) => unknown> = {};
  let depth = 0;
  for (const reader of ['raw', 'string', 'int', 'number', 'oneOf', 'url', 'list', 'secret']) {
    const original = EnvReader.prototype[reader];
    originals[reader] = original;
    EnvReader.prototype[reader] = function (this: unknown, ...args: unknown[]) {
      // The outermost reader names the variable's kind; `raw` called by another reader does not.
      if (depth === 0) {
        const name = args[0] as string;
        const known = readings.get(name);
        if (!known || known.reader === 'raw') readings.set(name, { reader, args: args.slice(1) });
      }
      depth++;
      try {
        return original.apply(this, args);
      } finally {
        depth--;
      }
    };
  }
  try {
    loadConfig({ DATA_DIR: join(dir, 'data'), ...env });
  } finally {
    Object.assign(EnvReader.prototype, originals);
  }
  return readings;
}

function human(name: string, value: number): string {
  const units: [number, string][] = name.endsWith('_MS')
    ? [
        [86_400_000, 'd'],
        [3_600_000, 'h'],
        [60_000, 'min'],
        [1_000, 's'],
      ]
    : name.endsWith('_BYTES')
      ? [
          [1024 ** 3, 'GiB'],
          [1024 ** 2, 'MiB'],
          [1024, 'KiB'],
        ]
      : [];
  for (const [size, unit] of units) if (value >= size && value % size === 0) return ` (${value / size} ${unit})`;
  return '';
}

function defaultOf(name: string, reading: Reading): string {
  const fallback = reading.args[0];
  switch (reading.reader) {
    case 'string':
      return `\`${String(fallback)}\``;
    case 'int':
    case 'number':
      return `\`${String(fallback)}\`${human(name, fallback as number)}`;
    case 'oneOf':
      return `\`${String(reading.args[1])}\``;
    case 'list':
      return 'empty';
    default:
      return '—';
  }
}

function acceptedOf(name: string, reading: Reading): string {
  switch (reading.reader) {
    case 'int':
      return `integer ${String(reading.args[1])}..${String(reading.args[2])}`;
    case 'number':
      return `number ${String(reading.args[1])}..${String(reading.args[2])}`;
    case 'oneOf':
      return (reading.args[0] as string[]).map((value) => `\`${value}\``).join(', ');
    case 'url':
      return `URL (${(reading.args[0] as string[]).map((protocol) => protocol.replace(/:$/, '')).join(', ')})`;
    case 'list':
      return 'comma-separated list';
    case 'secret':
      return `secret, ≥ ${String(reading.args[0])} characters`;
    default:
      return name === 'PORT' ? 'port' : 'text';
  }
}

function render(base: Map<string, Reading>, openai: Map<string, Reading>): string {
  const lines = [
    '# Configuration reference',
    '',
    '<!-- Generated by `npm run docs:config` from src/config/app-config.ts (defaults and accepted values) and',
    '     scripts/config-reference.ts (descriptions). Do not edit by hand: CI checks that this file is current. -->',
    '',
    'Atrium is configured by environment variables only. They are parsed once at start-up into one typed tree',
    '(`src/config/app-config.ts`); a bad value stops start-up with one line naming the variable (exit code 78).',
    'Defaults and accepted values below are read from that code.',
    '',
  ];
  for (const group of GROUPS) {
    const names = [...base.keys()].filter((name) => DESCRIPTIONS[name]?.group === group);
    if (names.length === 0) continue;
    lines.push(`## ${group}`, '', '| variable | default | accepted | meaning |', '|---|---|---|---|');
    for (const name of names) {
      const reading = base.get(name)!;
      const description = DESCRIPTIONS[name];
      let fallback = description.default ?? defaultOf(name, reading);
      const other = openai.get(name);
      if (!description.default && other && defaultOf(name, other) !== fallback)
        fallback = `${fallback} (offline), ${defaultOf(name, other)} (openai)`;
      lines.push(
        `| \`${name}\` | ${fallback} | ${description.accepted ?? acceptedOf(name, reading)} | ${description.text} |`,
      );
    }
    lines.push('');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

function main(): void {
  const dir = mkdtempSync(join(tmpdir(), 'atrium-config-reference-'));
  try {
    transpileConfig(dir);
    const base = record(dir, {});
    const openai = record(dir, { EMBEDDINGS_PROVIDER: 'openai', LLM_PROVIDER: 'openai' });
    const undescribed = [...base.keys()].filter((name) => !DESCRIPTIONS[name]);
    const unread = Object.keys(DESCRIPTIONS).filter((name) => !base.has(name));
    const badGroup = Object.entries(DESCRIPTIONS)
      .filter(([, d]) => !(GROUPS as readonly string[]).includes(d.group))
      .map(([name]) => name);
    if (undescribed.length + unread.length + badGroup.length > 0) {
      if (undescribed.length)
        console.error(`read by src/config but not described in scripts/config-reference.ts: ${undescribed.join(', ')}`);
      if (unread.length)
        console.error(
          `described in scripts/config-reference.ts but no longer read by src/config: ${unread.join(', ')}`,
        );
      if (badGroup.length) console.error(`described with a group missing from GROUPS: ${badGroup.join(', ')}`);
      process.exitCode = 1;
      return;
    }
    const text = render(base, openai);
    if (process.argv.includes('--check')) {
      let committed = '';
      try {
        committed = readFileSync(OUTPUT, 'utf8');
      } catch {
        // a missing file is simply not current
      }
      if (committed !== text) {
        console.error(
          'docs/configuration.md is not what src/config declares; run `npm run docs:config` and commit the result',
        );
        process.exitCode = 1;
        return;
      }
      console.log(`docs/configuration.md is current (${base.size} variables)`);
      return;
    }
    writeFileSync(OUTPUT, text);
    console.log(`wrote docs/configuration.md (${base.size} variables)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
