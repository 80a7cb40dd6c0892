import type { Tracer } from '@opentelemetry/api';
import type { QueueOptions } from 'bullmq';

/**
 * What the rest of the app needs to know about tracing, without loading the SDK: whether it runs (the preload
 * started it, because OTEL_EXPORTER_OTLP_ENDPOINT is set), Atrium's own tracer for the spans it makes itself,
 * and how to flush at shutdown. With tracing off every function here is a constant-time no-op.
 */
let tracer: Tracer | undefined;
let stop: (() => Promise<void>) | undefined;
let currentTraceId: (() => string | undefined) | undefined;

export function markTracingStarted(started: {
  tracer: Tracer;
  shutdown: () => Promise<void>;
  currentTraceId: () => string | undefined;
}): void {
  tracer = started.tracer;
  stop = started.shutdown;
  currentTraceId = started.currentTraceId;
}

/** The trace id of the active span while tracing runs (the request id then follows it, see resolveRequestId). */
export function activeTraceId(): string | undefined {
  return currentTraceId?.();
}

/** Atrium's tracer while tracing runs; undefined (and nothing to pay) otherwise. */
export function atriumTracer(): Tracer | undefined {
  return tracer;
}

/** Sends the spans still buffered and stops the exporter (the last step of a clean shutdown). */
export async function shutdownTracing(): Promise<void> {
  const shutdown = stop;
  tracer = undefined;
  stop = undefined;
  currentTraceId = undefined;
  await shutdown?.();
}

/**
 * BullMQ's own telemetry option while tracing runs: `add` stores the caller's W3C trace context with the job
 * (`opts.telemetry.metadata`, a `traceparent` carrier) and the worker's `process` span continues that trace, so
 * a job's spans (its SQL, its tool calls) join the request that queued it. Loaded only when tracing runs.
 */
export function bullmqTelemetry(): Pick<QueueOptions, 'telemetry'> {
  if (!tracer) return {};
  const { BullMQOtel } = require('bullmq-otel') as typeof import('bullmq-otel');
  return { telemetry: new BullMQOtel({ tracerName: 'bullmq' }) };
}
