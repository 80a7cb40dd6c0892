/**
 * The first import of src/main.ts and src/worker.ts. OpenTelemetry's instrumentations patch pg, ioredis, http and
 * express as they are required, so the SDK must start before any of them is loaded: here, before Nest or the app.
 * Without OTEL_EXPORTER_OTLP_ENDPOINT nothing of the SDK is loaded and tracing costs nothing.
 */
import { readPackageVersion, readTracingConfig, type TracingConfig } from '../../config/app-config.js';
import { EnvReader } from '../../config/env-readers.js';

let config: TracingConfig | undefined;
try {
  config = readTracingConfig(new EnvReader(process.env));
} catch {
  // A bad value is reported by loadConfig, which stops the start-up naming the variable.
}
if (config?.endpoint) {
  // A synchronous require, so the SDK is running before the next import of the entry point is evaluated.
  const { startTracing } = require('./otel-sdk.js') as typeof import('./otel-sdk.js');
  startTracing(config, process.env.APP_VERSION ?? readPackageVersion());
}
