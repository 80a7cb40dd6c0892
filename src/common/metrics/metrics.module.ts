import { DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import type { AppConfig } from '../../config/app-config.js';
import { startDefaultMetrics } from './metrics.registry.js';
import { MetricsServer } from './metrics.server.js';
import { QueueMetrics } from './queue-metrics.service.js';

/**
 * Prometheus metrics. The HTTP series are measured by httpMetricsMiddleware (installed by app.factory.ts) and
 * /metrics on the main port is mounted there too; this module adds the queue series and the METRICS_PORT listener.
 * METRICS_ENABLED=false leaves all of it out.
 */
@Module({})
export class MetricsModule {
  static forRoot(config: AppConfig): DynamicModule {
    if (!config.metrics.enabled) return { module: MetricsModule };
    startDefaultMetrics();
    return {
      module: MetricsModule,
      imports: [DiscoveryModule],
      providers: [QueueMetrics, MetricsServer],
      exports: [MetricsServer],
    };
  }
}
