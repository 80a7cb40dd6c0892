import { trace, type Context, SpanKind } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  SamplingDecision,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { TracingConfig } from '../../config/app-config.js';
import { markTracingStarted } from './tracing-state.js';

/** Requests that are not worth a trace: probes every few seconds and scrapes. */
const UNTRACED_PATHS = new Set(['/api/health', '/api/ready', '/metrics']);

/**
 * BullMQ's idle housekeeping (a worker polling an empty queue every second, stalled-job checks) would start a new
 * trace each time. As roots they are dropped; the same operations inside a traced job or request are kept.
 */
const UNTRACED_ROOTS = /^(getNextJob|moveStalledJobsToWait|startStalledCheckTimer|rateLimit) /;

class QuietHousekeepingSampler implements Sampler {
  shouldSample(_context: Context, _traceId: string, spanName: string, spanKind: SpanKind): SamplingResult {
    const housekeeping = spanKind === SpanKind.INTERNAL && UNTRACED_ROOTS.test(spanName);
    return { decision: housekeeping ? SamplingDecision.NOT_RECORD : SamplingDecision.RECORD_AND_SAMPLED };
  }

  toString(): string {
    return 'QuietHousekeepingSampler';
  }
}

/**
 * Starts the OpenTelemetry SDK: OTLP/HTTP (protobuf) export of batched spans to `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`
 * (the exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself: headers, timeout, a traces-only endpoint),
 * W3C trace context, and the instrumentations of the libraries Atrium's work goes through: incoming and outgoing
 * HTTP, Express routes, PostgreSQL (pg, also under TypeORM and Kysely) and Redis (ioredis). Required only by the
 * preload, and only when tracing is on, before any of those libraries is loaded.
 *
 * What is never recorded: SQL parameter values (pg's enhancedDatabaseReporting stays off), Redis arguments (only
 * the command name), request and response bodies or headers.
 */
export function startTracing(config: TracingConfig, version: string): void {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: version }),
    sampler: new ParentBasedSampler({ root: new QuietHousekeepingSampler() }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // The global provider, AsyncLocalStorage context and the W3C traceparent propagator.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0]),
      }),
      // Route and handler spans; a span per middleware (helmet, body parsers, …) would triple every trace.
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      // Statements run outside any trace (the recovery sweeps, BullMQ's polling on the PostgreSQL backend) start none.
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  markTracingStarted({
    tracer: trace.getTracer('atrium', version),
    shutdown: () => provider.shutdown(),
    currentTraceId: () => trace.getActiveSpan()?.spanContext().traceId,
  });
}
