import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { ConfigError } from './config-error.js';
import { EnvReader } from './env-readers.js';
import { DEFAULT_EXTRACTION_LIMITS, type ExtractionLimits } from '../modules/documents/extraction-limits.js';

export const APP_ROLES = ['all', 'api', 'worker'] as const;
export type AppRole = (typeof APP_ROLES)[number];
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Server-side secrets. Never logged, never returned by any route. */
export interface AppSecrets {
  /** Signs user access tokens. */
  jwtSecret: string;
  /** HMAC pepper for API keys and project session tokens. */
  tokenPepper: string;
  /** AES-256-GCM key (32 bytes, base64) for stored upstream tokens. */
  encryptionKey: string;
}

/** The one typed configuration tree, parsed once at start-up. */
export interface AppConfig {
  env: 'production' | 'development' | 'test';
  role: AppRole;
  port: number;
  host: string;
  dataDir: string;
  logLevel: LogLevel;
  version: string;
  /**
   * `namedStatements` (DATABASE_NAMED_STATEMENTS, default true): the search statements and list_tasks run as named
   * (prepared) statements on PostgreSQL (never on the embedded engine); turn off behind a pooler in transaction mode
   * that does not carry prepared statements.
   */
  database: { url: string | undefined; poolSize: number; namedStatements: boolean };
  redis: { url: string | undefined; prefix: string };
  auth: {
    accessTokenTtlSeconds: number;
    signup: 'open' | 'closed';
    adminEmail: string | undefined;
    adminPassword: string | undefined;
  };
  /** GitHub REST API (github.com or GitHub Enterprise Server) for the registered repositories. */
  github: {
    apiUrl: string;
    /** Secret: used when a repository was registered without its own token; never logged or returned. */
    token: string | undefined;
    /** Per-request timeout; a GitHub call that takes longer fails as upstream_error. */
    timeoutMs: number;
    /** Retries of idempotent requests after a 5xx or network failure (writes are never retried). */
    maxRetries: number;
  };
  limits: {
    jsonBodyBytes: number;
    uploadMaxBytes: number;
    keyCallsPerMinute: number;
    /** RATE_LIMIT_USER_TOOLS_PER_MIN: Area A calls per user across all their keys and OAuth grants (default RATE_LIMIT_KEY_PER_MIN). */
    userToolCallsPerMinute: number;
    /** MAX_CREDENTIALS_PER_USER: active API keys and OAuth grants per user (default 50); a new key beyond is 409 CONFLICT. */
    credentialsPerUser: number;
    areaBCallsPerMinute: number;
    loginAttemptsPer15Min: number;
  };
  mcp: {
    allowedOrigins: string[];
    /** A 2025-era MCP session unused this long is gone (404, the client initializes again); pruned hourly. */
    sessionTtlMs: number;
    /** How long a write of a "confirm writes" credential waits for the user's elicitation answer before it fails. */
    confirmTimeoutMs: number;
    /** MCP_CONFORMANCE_FIXTURES: the official conformance suite's fixtures on the MCP endpoint (refused in production). */
    conformanceFixtures: boolean;
  };
  /**
   * Express `trust proxy`: which peers may set the client address through X-Forwarded-For. false = none
   * (per-IP limits use the socket address); a hop count; or addresses, CIDR ranges and the names
   * loopback / linklocal / uniquelocal.
   */
  trustProxy: false | number | string[];
  /** Where clients reach this server (the OAuth issuer and the base of every OAuth/MCP URL it announces); no trailing slash. */
  publicUrl: string;
  /** Atrium as the OAuth 2.1 authorization server of its MCP endpoint. */
  oauth: {
    accessTokenTtlSeconds: number;
    /** Fetch client ID metadata documents from private/loopback addresses too (development only: SSRF guard off). */
    allowPrivateClientMetadata: boolean;
  };
  /** RAG: which embeddings backend (one vector space at a time; changing it triggers a reindex) and chunking. */
  embeddings: {
    provider: 'offline' | 'openai';
    baseUrl: string;
    model: string;
    /** Secret: never logged or returned. */
    apiKey: string | undefined;
    dimensions: number;
    batchSize: number;
    timeoutMs: number;
    chunkTargetChars: number;
    chunkOverlapChars: number;
  };
  /** Agent runs: which model drives the tool loop (offline = deterministic retrieval agent, no LLM). */
  llm: {
    provider: 'offline' | 'openai';
    /** OpenAI-compatible Chat Completions base URL (`{baseUrl}/chat/completions`). */
    baseUrl: string;
    /** Secret: never logged or returned. */
    apiKey: string | undefined;
    model: string;
    /** One HTTP attempt; the agent's per-step timeout bounds all attempts of a step together. */
    timeoutMs: number;
    /** Retries after 429/5xx/network failures, with exponential backoff (Retry-After honoured). */
    maxRetries: number;
  };
  /** RAG search. */
  ragSearch: {
    /**
     * Weight of the vector list in hybrid score fusion (0 = keyword only, 1 = vector only). Default 0.15, chosen
     * on SciFact with the offline hashing embedder, whose vectors repeat BM25's lexical signal without its IDF,
     * so they add a little and may not dominate. With a semantic provider, raise RAG_HYBRID_VECTOR_WEIGHT.
     */
    hybridVectorWeight: number;
  };
  /** RAG indexing jobs: when a job whose worker died is taken over. */
  indexing: {
    /** A running job whose heartbeat is older than this belongs to a dead worker and is taken over. */
    staleAfterMs: number;
    /** How often a process looks for jobs to re-enqueue (queued without a queue entry, or stale). */
    recoveryIntervalMs: number;
    /**
     * Share of wall time the indexing of a large document (≥ PACED_MIN_CHUNKS chunks) may work on PostgreSQL
     * while requests are served (1 = no pause): after each batch the writer pauses so that embedding + PostgreSQL's
     * insert work take at most this share, leaving CPU to those requests; with none served it works at full speed
     * (IndexingPacer; a worker-only process sees the API instances' published load, SharedRequestLoad).
     * RAG_INDEX_DUTY_CYCLE, default 0.5.
     */
    dutyCycle: number;
    /**
     * Documents of at least this many chunks are paced at dutyCycle (0: every document). RAG_INDEX_PACED_MIN_CHUNKS,
     * default 200: a long PDF or DOCX indexed at full speed took a core for seconds and slowed other users' calls
     * (bench:ingest, docs/perf/rag.md), while short documents stay at full speed.
     */
    pacedMinChunks: number;
    /**
     * On PostgreSQL, documents of at least this many chunks are written into pending segments (0: none), out of the
     * main HNSW graph and postings index, with indexes of their own built as each fills, merged into the main ones
     * while the service is quiet (RagSegmentsService). RAG_INDEX_SEGMENT_MIN_CHUNKS, default 500: large uploads about
     * 3-4× faster, with other users' p99 during them within the bench:ingest target (docs/perf/ingest.md).
     */
    segmentMinChunks: number;
    /**
     * Most chunks one pending segment takes, RAG_INDEX_SEGMENT_MAX_CHUNKS, default 4096: a larger document fills
     * several, each indexed and searchable once full, so no index build is long (it holds off other chunk writes)
     * and each HNSW graph fits in PostgreSQL's default maintenance_work_mem (pgvector builds far slower beyond it).
     */
    segmentMaxChunks: number;
    /**
     * How long after a segment becomes searchable its merge into the main indexes starts,
     * RAG_INDEX_SEGMENT_MERGE_DELAY_MS, default 5000: the next large document of an import is written before the
     * merge competes with it.
     */
    segmentMergeDelayMs: number;
    /**
     * Most chunks per batch (one statement, one transaction) of a paced document, RAG_INDEX_PACED_BATCH_CHUNKS,
     * default 16 (1..64). Short bursts of PostgreSQL work with pauses as long: with full-size batches pacing did
     * not lower other users' tail latency, with short ones it did (docs/perf/rag.md).
     */
    pacedBatchChunks: number;
    /**
     * Fair shares: between a job's batches, a waiting job of another user or project (the fairest) runs in between for
     * up to five slices (INDEX_SLICE_MS, default 250) or INDEX_SLICE_CHUNKS (default 500) chunks; then the first one
     * goes on where it was, and after a job that used its whole turn works a slice (or that many chunks) before it asks again.
     */
    sliceMs: number;
    sliceChunks: number;
    /** INDEX_MAX_QUEUED_PER_USER (default 100): a user's queued and running indexing jobs at most; beyond, 429 RATE_LIMITED. */
    maxQueuedPerUser: number;
  };
  /** Limits on turning an untrusted upload into text (see IngestSandbox); a broken one fails the document. */
  extraction: ExtractionLimits & {
    /** Wall time of one extraction (or chunking) in its thread before the thread is killed. */
    timeoutMs: number;
    /** V8 old-generation heap of one sandbox thread. */
    maxMemoryMb: number;
    /** Sandbox threads per process. */
    concurrency: number;
    /**
     * Nice value (Linux: of each sandbox thread alone) the threads run at, so that on a busy machine the event
     * loop that serves HTTP gets a core before extraction and embedding do (0: as the process). EXTRACT_THREAD_NICE.
     */
    threadNice: number;
  };
  agent: {
    runTimeoutMs: number;
    stepTimeoutMs: number;
    /** A running run whose heartbeat is older than this belongs to a dead worker and is taken over. */
    staleAfterMs: number;
    /** How often a worker looks for runs to recover (queued without a queue entry, or stale). */
    recoveryIntervalMs: number;
    /** A run waiting for a human to approve a write longer than this fails (checked by the recovery sweep). */
    approvalTimeoutMs: number;
    /** A comment line on an idle run stream this often, so proxies keep it open. */
    streamHeartbeatMs: number;
    /** How often an open run stream re-checks its credential (it ends when that expired or was revoked). */
    streamCredentialCheckMs: number;
    /** Run webhooks: http and private/loopback addresses allowed (local development and tests only). */
    webhookAllowPrivate: boolean;
    /** First retry delay of a failed webhook delivery (doubling each time) and the number of attempts. */
    webhookRetryBaseMs: number;
    webhookMaxAttempts: number;
    /** WEBHOOK_TIMEOUT_MS: one delivery attempt's whole deadline (connection, request, status line), default 10 s. */
    webhookTimeoutMs: number;
    /** WEBHOOK_MAX_IN_FLIGHT_PER_USER: one user's deliveries under way at once across all worker processes (default 1). */
    webhookInFlightPerUser: number;
    /** AGENT_MAX_ACTIVE_PER_USER: a user's queued and running runs at most (default 20); beyond, 429 RATE_LIMITED. */
    maxActivePerUser: number;
    /** AGENT_MAX_STREAMS_PER_USER: a user's open run streams at most (default 10); beyond, 429 RATE_LIMITED. */
    maxStreamsPerUser: number;
  };
  /** The append-only audit log: entries older than this many days are pruned (by age only). */
  audit: { retentionDays: number };
  shutdownTimeoutMs: number;
  /** On SIGTERM, how long /api/ready answers 503 while requests are still served, before the listener closes. */
  shutdownDrainDelayMs: number;
  /** APP_ROLE=worker: the port of its /api/health and /api/ready probes (and of its /metrics). */
  workerHttpPort: number;
  /** Prometheus metrics (GET /metrics); docs/operations.md, "Metrics". */
  metrics: MetricsConfig;
  /** OpenTelemetry traces; read again by the tracing preload before anything else is loaded. */
  tracing: TracingConfig;
  secrets: AppSecrets;
}

export interface MetricsConfig {
  /** false: no /metrics and no per-request measuring at all (METRICS_ENABLED=false). */
  enabled: boolean;
  /** A listener of its own for /metrics (the main port then answers 404 there); APP_ROLE=worker serves it on WORKER_HTTP_PORT instead. */
  port: number | undefined;
  /** Secret: the bearer token a scraper must send wherever /metrics is served; never logged. */
  token: string | undefined;
}

export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: tracing is on only when it is set (OTLP/HTTP protobuf to `<endpoint>/v1/traces`). */
  endpoint: string | undefined;
  serviceName: string;
}

const SECRET_VARIABLES: Record<keyof AppSecrets, string> = {
  jwtSecret: 'JWT_SECRET',
  tokenPepper: 'API_KEY_PEPPER',
  encryptionKey: 'ENCRYPTION_KEY',
};

/**
 * Parses the environment. In production every secret must be given; otherwise missing secrets are
 * generated once and kept in DATA_DIR/secrets.json (mode 0600) so restarts keep sessions and keys valid.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const read = new EnvReader(env);
  const nodeEnv = read.oneOf('NODE_ENV', ['production', 'development', 'test'] as const, 'development');
  const dataDir = resolve(read.string('DATA_DIR', './data'));
  const adminEmail = read.raw('ADMIN_EMAIL');
  const adminPassword = read.raw('ADMIN_PASSWORD');
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    throw new ConfigError(
      adminEmail ? 'ADMIN_PASSWORD' : 'ADMIN_EMAIL',
      'must be set together with the other admin variable',
    );
  }
  if (adminPassword !== undefined && adminPassword.length < 10) {
    throw new ConfigError('ADMIN_PASSWORD', 'must be at least 10 characters');
  }
  const databaseUrl = read.url('DATABASE_URL', ['postgres:', 'postgresql:']);

  return {
    env: nodeEnv,
    role: read.oneOf('APP_ROLE', APP_ROLES, 'all'),
    port: read.int('PORT', 3000, 0, 65535),
    host: read.string('HOST', '0.0.0.0'),
    dataDir,
    logLevel: read.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    version: read.string('APP_VERSION', readPackageVersion()),
    database: {
      url: databaseUrl,
      poolSize: read.int('DATABASE_POOL_SIZE', 10, 1, 200),
      namedStatements: read.oneOf('DATABASE_NAMED_STATEMENTS', ['true', 'false'] as const, 'true') === 'true',
    },
    redis: { url: read.url('REDIS_URL', ['redis:', 'rediss:']), prefix: read.string('REDIS_PREFIX', 'atrium') },
    auth: {
      accessTokenTtlSeconds: read.int('ACCESS_TOKEN_TTL_SECONDS', 3600, 60, 7 * 24 * 3600),
      signup: read.oneOf('AUTH_SIGNUP', ['open', 'closed'] as const, 'open'),
      adminEmail: adminEmail?.toLowerCase(),
      adminPassword,
    },
    github: readGithubConfig(read),
    limits: {
      jsonBodyBytes: read.int('JSON_BODY_MAX_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
      uploadMaxBytes: read.int('UPLOAD_MAX_BYTES', 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      keyCallsPerMinute: read.int('RATE_LIMIT_KEY_PER_MIN', 300, 1, 1_000_000),
      // One key's budget unless set: a user's credentials share one rate, so creating more keys never buys more calls.
      userToolCallsPerMinute: read.int(
        'RATE_LIMIT_USER_TOOLS_PER_MIN',
        read.int('RATE_LIMIT_KEY_PER_MIN', 300, 1, 1_000_000),
        1,
        10_000_000,
      ),
      credentialsPerUser: read.int('MAX_CREDENTIALS_PER_USER', 50, 1, 100_000),
      areaBCallsPerMinute: read.int('RATE_LIMIT_USER_PER_MIN', 600, 1, 1_000_000),
      loginAttemptsPer15Min: read.int('RATE_LIMIT_LOGIN_PER_15_MIN', 10, 1, 100_000),
    },
    mcp: {
      allowedOrigins: read.list('MCP_ALLOWED_ORIGINS'),
      sessionTtlMs: read.int('MCP_SESSION_TTL_MS', 86_400_000, 1_000, 30 * 86_400_000),
      // The official v1 SDK client gives up on a request after 60 s unless told otherwise; a human needs longer.
      confirmTimeoutMs: read.int('MCP_CONFIRM_TIMEOUT_MS', 120_000, 100, 3_600_000),
      conformanceFixtures: readConformanceFixtures(read, nodeEnv),
    },
    trustProxy: readTrustProxy(read),
    publicUrl: readPublicUrl(read),
    oauth: {
      accessTokenTtlSeconds: read.int('OAUTH_ACCESS_TOKEN_TTL_SECONDS', 3600, 60, 24 * 3600),
      allowPrivateClientMetadata:
        read.oneOf('OAUTH_ALLOW_PRIVATE_CLIENT_METADATA', ['true', 'false'] as const, 'false') === 'true',
    },
    embeddings: readEmbeddingsConfig(read),
    llm: readLlmConfig(read),
    ragSearch: {
      hybridVectorWeight: read.number('RAG_HYBRID_VECTOR_WEIGHT', 0.15, 0, 1),
    },
    indexing: {
      staleAfterMs: read.int('RAG_STALE_AFTER_MS', 60_000, 500, 3_600_000),
      recoveryIntervalMs: read.int('RAG_RECOVERY_INTERVAL_MS', 30_000, 100, 3_600_000),
      dutyCycle: read.number('RAG_INDEX_DUTY_CYCLE', 0.5, 0.1, 1),
      pacedMinChunks: read.int('RAG_INDEX_PACED_MIN_CHUNKS', 200, 0, 100_000_000),
      pacedBatchChunks: read.int('RAG_INDEX_PACED_BATCH_CHUNKS', 16, 1, 64),
      segmentMinChunks: read.int('RAG_INDEX_SEGMENT_MIN_CHUNKS', 500, 0, 100_000_000),
      segmentMaxChunks: read.int('RAG_INDEX_SEGMENT_MAX_CHUNKS', 4_096, 16, 1_000_000),
      segmentMergeDelayMs: read.int('RAG_INDEX_SEGMENT_MERGE_DELAY_MS', 5_000, 0, 86_400_000),
      sliceMs: read.int('INDEX_SLICE_MS', 250, 50, 3_600_000),
      sliceChunks: read.int('INDEX_SLICE_CHUNKS', 500, 1, 10_000_000),
      maxQueuedPerUser: read.int('INDEX_MAX_QUEUED_PER_USER', 100, 1, 1_000_000),
    },
    extraction: {
      maxTextBytes: read.int(
        'EXTRACT_MAX_TEXT_BYTES',
        DEFAULT_EXTRACTION_LIMITS.maxTextBytes,
        1024,
        1024 * 1024 * 1024,
      ),
      maxPages: read.int('EXTRACT_MAX_PAGES', DEFAULT_EXTRACTION_LIMITS.maxPages, 1, 1_000_000),
      maxArchiveEntries: read.int(
        'EXTRACT_MAX_ARCHIVE_ENTRIES',
        DEFAULT_EXTRACTION_LIMITS.maxArchiveEntries,
        10,
        1_000_000,
      ),
      maxCompressionRatio: read.int(
        'EXTRACT_MAX_COMPRESSION_RATIO',
        DEFAULT_EXTRACTION_LIMITS.maxCompressionRatio,
        2,
        100_000,
      ),
      maxInflatedBytes: read.int(
        'EXTRACT_MAX_INFLATED_BYTES',
        DEFAULT_EXTRACTION_LIMITS.maxInflatedBytes,
        1024,
        4 * 1024 * 1024 * 1024,
      ),
      maxNestingDepth: read.int('EXTRACT_MAX_NESTING_DEPTH', DEFAULT_EXTRACTION_LIMITS.maxNestingDepth, 10, 1_000_000),
      timeoutMs: read.int('EXTRACT_TIMEOUT_MS', 120_000, 100, 3_600_000),
      maxMemoryMb: read.int('EXTRACT_MAX_MEMORY_MB', 512, 32, 16_384),
      concurrency: read.int('EXTRACT_CONCURRENCY', 1, 1, 64),
      threadNice: read.int('EXTRACT_THREAD_NICE', 10, 0, 19),
    },
    agent: {
      runTimeoutMs: read.int('AGENT_RUN_TIMEOUT_MS', 120_000, 1_000, 3_600_000),
      stepTimeoutMs: read.int('AGENT_STEP_TIMEOUT_MS', 30_000, 100, 600_000),
      staleAfterMs: read.int('AGENT_STALE_AFTER_MS', 30_000, 500, 3_600_000),
      recoveryIntervalMs: read.int('AGENT_RECOVERY_INTERVAL_MS', 15_000, 100, 3_600_000),
      approvalTimeoutMs: read.int('AGENT_APPROVAL_TIMEOUT_MS', 86_400_000, 1_000, 30 * 86_400_000),
      streamHeartbeatMs: read.int('AGENT_STREAM_HEARTBEAT_MS', 15_000, 100, 300_000),
      streamCredentialCheckMs: read.int('AGENT_STREAM_CREDENTIAL_CHECK_MS', 5_000, 100, 300_000),
      webhookAllowPrivate: read.raw('WEBHOOK_ALLOW_PRIVATE') === 'true',
      // 5 s doubling over 14 attempts: the last one about 22 h after the first (API.md: up to 24 h).
      webhookRetryBaseMs: read.int('WEBHOOK_RETRY_BASE_MS', 5_000, 10, 3_600_000),
      webhookMaxAttempts: read.int('WEBHOOK_MAX_ATTEMPTS', 14, 1, 30),
      webhookTimeoutMs: read.int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
      webhookInFlightPerUser: read.int('WEBHOOK_MAX_IN_FLIGHT_PER_USER', 1, 1, 64),
      maxActivePerUser: read.int('AGENT_MAX_ACTIVE_PER_USER', 20, 1, 100_000),
      maxStreamsPerUser: read.int('AGENT_MAX_STREAMS_PER_USER', 10, 1, 100_000),
    },
    audit: { retentionDays: read.int('AUDIT_RETENTION_DAYS', 365, 1, 36_500) },
    shutdownTimeoutMs: read.int('SHUTDOWN_TIMEOUT_MS', 10_000, 100, 120_000),
    shutdownDrainDelayMs: read.int('SHUTDOWN_DRAIN_DELAY_MS', 5_000, 0, 120_000),
    workerHttpPort: read.int('WORKER_HTTP_PORT', 3001, 0, 65535),
    metrics: readMetricsConfig(read, read.int('PORT', 3000, 0, 65535)),
    tracing: readTracingConfig(read),
    secrets: resolveSecrets(read, nodeEnv, dataDir),
  };
}

function readMetricsConfig(read: EnvReader, mainPort: number): MetricsConfig {
  const port = read.raw('METRICS_PORT') === undefined ? undefined : read.int('METRICS_PORT', 0, 0, 65535);
  if (port !== undefined && port !== 0 && port === mainPort)
    throw new ConfigError('METRICS_PORT', 'must differ from PORT (unset it to serve /metrics on the main port)');
  return {
    enabled: read.oneOf('METRICS_ENABLED', ['true', 'false'] as const, 'true') === 'true',
    port,
    // A scraper's credential: long enough that it cannot be guessed from outside.
    token: read.secret('METRICS_TOKEN', 16),
  };
}

/**
 * Exported for the tracing preload (src/common/tracing/tracing.preload.ts), which must decide before any
 * instrumented module is loaded, so before loadConfig runs; both read the same variables the same way.
 */
export function readTracingConfig(read: EnvReader): TracingConfig {
  return {
    endpoint: read.url('OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']),
    serviceName: read.string('OTEL_SERVICE_NAME', 'atrium'),
  };
}

/** TRUST_PROXY in Express syntax, checked here so a typo stops start-up instead of trusting the wrong peers. */
function readTrustProxy(read: EnvReader): AppConfig['trustProxy'] {
  const value = read.raw('TRUST_PROXY');
  if (value === undefined || value === 'false') return false;
  if (value === 'true') {
    throw new ConfigError(
      'TRUST_PROXY',
      '"true" would let every client choose its own address; name the proxies (addresses, CIDR ranges, loopback, linklocal, uniquelocal) or a hop count',
    );
  }
  if (/^\d+$/.test(value)) return read.int('TRUST_PROXY', 0, 0, 10);
  const entries = read.list('TRUST_PROXY');
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address);
    const namedRange = ['loopback', 'linklocal', 'uniquelocal'].includes(entry);
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (!namedRange && (family === 0 || !validBits || extra !== undefined)) {
      throw new ConfigError(
        'TRUST_PROXY',
        `"${entry}" is not an IP address, a CIDR range, loopback, linklocal or uniquelocal`,
      );
    }
  }
  return entries;
}

/** The conformance suite's fixtures are test doubles on the real endpoint: never in production. */
function readConformanceFixtures(read: EnvReader, nodeEnv: string): boolean {
  const on = read.oneOf('MCP_CONFORMANCE_FIXTURES', ['true', 'false'] as const, 'false') === 'true';
  if (on && nodeEnv === 'production')
    throw new ConfigError(
      'MCP_CONFORMANCE_FIXTURES',
      'must not be true when NODE_ENV=production (it adds test fixtures to the MCP endpoint)',
    );
  return on;
}

/** PUBLIC_URL without a trailing slash; an origin plus an optional path prefix, nothing else. */
function readPublicUrl(read: EnvReader): string {
  const given = read.url('PUBLIC_URL', ['http:', 'https:']);
  if (given === undefined) return `http://localhost:${read.int('PORT', 3000, 0, 65535)}`;
  const url = new URL(given);
  if (url.search || url.hash || url.username || url.password)
    throw new ConfigError(
      'PUBLIC_URL',
      'must be an origin with an optional path, without query, fragment or credentials',
    );
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function readEmbeddingsConfig(read: EnvReader): AppConfig['embeddings'] {
  const provider = read.oneOf('EMBEDDINGS_PROVIDER', ['offline', 'openai'] as const, 'offline');
  const openai = provider === 'openai';
  const baseUrl = read.url('EMBEDDINGS_BASE_URL', ['http:', 'https:']) ?? 'https://api.openai.com/v1';
  return {
    provider,
    baseUrl,
    model: read.string('EMBEDDINGS_MODEL', openai ? 'text-embedding-3-small' : 'hash-v1'),
    apiKey: read.raw('EMBEDDINGS_API_KEY'),
    // HNSW indexes vectors of up to 2000 dimensions.
    dimensions: read.int('EMBEDDINGS_DIMENSIONS', openai ? 1536 : 768, 8, 2000),
    batchSize: read.int('EMBEDDINGS_BATCH_SIZE', 64, 1, 2048),
    timeoutMs: read.int('EMBEDDINGS_TIMEOUT_MS', 30_000, 100, 600_000),
    chunkTargetChars: read.int('RAG_CHUNK_TARGET_CHARS', 1000, 100, 20_000),
    chunkOverlapChars: read.int('RAG_CHUNK_OVERLAP_CHARS', 150, 0, 5_000),
  };
}

function readLlmConfig(read: EnvReader): AppConfig['llm'] {
  const provider = read.oneOf('LLM_PROVIDER', ['offline', 'openai'] as const, 'offline');
  return {
    provider,
    baseUrl: (read.url('LLM_BASE_URL', ['http:', 'https:']) ?? 'https://api.openai.com/v1').replace(/\/+$/, ''),
    apiKey: read.raw('LLM_API_KEY'),
    model: read.string('LLM_MODEL', provider === 'openai' ? 'gpt-4o-mini' : 'offline-retrieval'),
    timeoutMs: read.int('LLM_TIMEOUT_MS', 30_000, 100, 600_000),
    maxRetries: read.int('LLM_MAX_RETRIES', 2, 0, 10),
  };
}

function resolveSecrets(read: EnvReader, nodeEnv: AppConfig['env'], dataDir: string): AppSecrets {
  const given: Partial<AppSecrets> = {
    jwtSecret: read.secret('JWT_SECRET', 32),
    tokenPepper: read.secret('API_KEY_PEPPER', 32),
    encryptionKey: read.secret('ENCRYPTION_KEY', 32),
  };
  if (given.encryptionKey !== undefined && Buffer.from(given.encryptionKey, 'base64').length !== 32) {
    throw new ConfigError('ENCRYPTION_KEY', 'must be 32 bytes encoded as base64 (openssl rand -base64 32)');
  }
  const missing = (Object.keys(SECRET_VARIABLES) as (keyof AppSecrets)[]).filter((key) => given[key] === undefined);
  if (missing.length === 0) return given as AppSecrets;
  if (nodeEnv === 'production') {
    throw new ConfigError(SECRET_VARIABLES[missing[0]], 'is required when NODE_ENV=production');
  }
  const stored = loadOrCreateSecretFile(dataDir);
  return { ...stored, ...stripUndefined(given) };
}

function loadOrCreateSecretFile(dataDir: string): AppSecrets {
  const file = join(dataDir, 'secrets.json');
  if (existsSync(file)) {
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<AppSecrets>;
      if (parsed.jwtSecret && parsed.tokenPepper && parsed.encryptionKey) return parsed as AppSecrets;
    } catch {
      throw new ConfigError('DATA_DIR', `holds an unreadable ${file}; fix or remove it`);
    }
  }
  const generated: AppSecrets = {
    jwtSecret: randomBytes(48).toString('base64url'),
    tokenPepper: randomBytes(48).toString('base64url'),
    encryptionKey: randomBytes(32).toString('base64'),
  };
  try {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, JSON.stringify(generated, null, 2), { mode: 0o600 });
  } catch (error) {
    throw new ConfigError('DATA_DIR', `is not writable (${(error as Error).message})`);
  }
  return generated;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function readPackageVersion(): string {
  for (const candidate of [
    join(__dirname, '..', '..', 'package.json'),
    join(__dirname, '..', '..', '..', 'package.json'),
  ]) {
    if (existsSync(candidate)) {
      return (JSON.parse(readFileSync(candidate, 'utf8')) as { version?: string }).version ?? '0.0.0';
    }
  }
  return '0.0.0';
}

function readGithubConfig(read: EnvReader): AppConfig['github'] {
  return {
    apiUrl: (read.url('GITHUB_API_URL', ['http:', 'https:']) ?? 'https://api.github.com').replace(/\/+$/, ''),
    token: read.raw('GITHUB_TOKEN'),
    timeoutMs: read.int('GITHUB_TIMEOUT_MS', 10_000, 100, 120_000),
    maxRetries: read.int('GITHUB_MAX_RETRIES', 2, 0, 5),
  };
}
