import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every Prometheus series Atrium exposes, in one registry of its own (not prom-client's global one, which other
 * libraries may also fill). The instruments are process-wide, as Prometheus counts per process: a test that boots
 * several apps in one process reads deltas. Every label value comes from a bounded set (route patterns, registered
 * tool names, error codes, queue names), never from input.
 */
export const metricsRegistry = new Registry();

/** Route pattern of a request that matched no route (404s, static files): never its raw path. */
export const UNMATCHED_ROUTE = 'unmatched';

/** Label of a tool name that is not registered (never the name the caller sent). */
export const UNKNOWN_TOOL = 'unknown';

export const httpRequestsTotal = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [metricsRegistry],
});

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from the request reaching the app to the last byte of its answer, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

export const toolCallsTotal = new Counter({
  name: 'atrium_tool_calls_total',
  help: 'Tool calls by tool, outcome (ok, or the Area A error code) and door (json, mcp, agent)',
  labelNames: ['tool', 'status', 'door'] as const,
  registers: [metricsRegistry],
});

export const toolCallDuration = new Histogram({
  name: 'atrium_tool_call_duration_seconds',
  help: 'Duration of tool calls by tool and door',
  labelNames: ['tool', 'door'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [metricsRegistry],
});

export const rateLimitedTotal = new Counter({
  name: 'atrium_rate_limited_total',
  help: 'Calls refused by a rate limit, by area (tool-api: per API key or OAuth grant; backend: per user, project token or IP, and logins)',
  labelNames: ['area'] as const,
  registers: [metricsRegistry],
});

export const redactionsTotal = new Counter({
  name: 'atrium_redactions_total',
  help: 'Credential-shaped strings replaced by [redacted], by kind (atrium, github, aws, google, slack, stripe, private_key, jwt) and where (tool_result, run_output, webhook_body, upstream_error)',
  labelNames: ['kind', 'where'] as const,
  registers: [metricsRegistry],
});

export const jobsTotal = new Counter({
  name: 'atrium_jobs_total',
  help: 'Queue jobs this process finished, by queue and outcome (completed, failed: one count per failed attempt)',
  labelNames: ['queue', 'status'] as const,
  registers: [metricsRegistry],
});

export const jobDuration = new Histogram({
  name: 'atrium_job_duration_seconds',
  help: 'Processing time of queue jobs (start of the attempt to its end), by queue and outcome',
  labelNames: ['queue', 'status'] as const,
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
  registers: [metricsRegistry],
});

/** What a live app contributes to atrium_queue_waiting: its queues' waiting counts, read when scraped. */
export type QueueDepthSource = () => Promise<{ queue: string; waiting: number }[]>;

const queueDepthSources = new Set<QueueDepthSource>();

export const queueWaiting = new Gauge({
  name: 'atrium_queue_waiting',
  help: 'Jobs waiting to be processed (waiting + prioritized) per queue, read from the queue backend (Redis or PostgreSQL) at scrape time',
  labelNames: ['queue'] as const,
  registers: [metricsRegistry],
  async collect() {
    // A queue whose backend did not answer is left out of this scrape rather than reported with a stale or zero value.
    this.reset();
    for (const source of queueDepthSources) {
      for (const { queue, waiting } of await source()) this.set({ queue }, waiting);
    }
  },
});

/** Registers the queues of one app for atrium_queue_waiting; returns the function that removes them again. */
export function addQueueDepthSource(source: QueueDepthSource): () => void {
  queueDepthSources.add(source);
  return () => queueDepthSources.delete(source);
}

let defaultMetricsStarted = false;

/** Node's process metrics (CPU, memory, event loop lag, GC, handles), once per process. */
export function startDefaultMetrics(): void {
  if (defaultMetricsStarted) return;
  defaultMetricsStarted = true;
  collectDefaultMetrics({ register: metricsRegistry });
}
