import { DynamicModule, Module, ValidationPipe, type Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter.js';
import { ApiBusyShareModule } from './common/http/api-busy-share.module.js';
import { MetricsModule } from './common/metrics/metrics.module.js';
import { BackendThrottlerGuard } from './common/rate-limit/backend-throttler.guard.js';
import { RateLimitModule } from './common/rate-limit/rate-limit.module.js';
import { RedisModule } from './common/redis/redis.module.js';
import type { AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { AgentModule } from './modules/agent/agent.module.js';
import { AdminPolicyModule } from './modules/admin-policy/admin-policy.module.js';
import { ApiKeysModule } from './modules/api-keys/api-keys.module.js';
import { ScopeCatalogModule } from './modules/tool-kit/scope-catalog.js';
import { ToolRegistryModule } from './modules/tool-kit/tool-registry.js';
import { AuditModule } from './modules/audit/audit.module.js';
import { AuthModule } from './modules/auth/auth.module.js';
import { CredentialsModule } from './modules/credentials/credentials.module.js';
import { OAuthModule } from './modules/oauth/oauth.module.js';
import { BackendAuthGuard } from './modules/auth/guards/backend-auth.guard.js';
import { DocumentsModule } from './modules/documents/documents.module.js';
import { GithubModule } from './modules/github/github.module.js';
import { HealthModule } from './modules/health/health.module.js';
import { McpConformanceModule } from './modules/mcp-conformance/mcp-conformance.module.js';
import { ProjectsModule } from './modules/projects/projects.module.js';
import { RagModule } from './modules/rag/rag.module.js';
import { TasksModule } from './modules/tasks/tasks.module.js';
import { ToolsModule } from './modules/tools/tools.module.js';
import { QueueModule } from './queue/queue.module.js';

export interface AppModuleOptions {
  config: AppConfig;
  /** The resolved database: DATABASE_URL, or the embedded server's loopback URL. */
  databaseUrl: string;
  /** More feature modules (tests: a throw-away tool provider proves a new module needs no edit elsewhere). */
  extraModules?: readonly Type[];
}

@Module({})
export class AppModule {
  static forRoot({ config, databaseUrl, extraModules = [] }: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        DatabaseModule.forRoot(databaseUrl, config.database.poolSize),
        RedisModule,
        RateLimitModule,
        QueueModule.forRoot(config, databaseUrl),
        HealthModule,
        // Serving processes publish their HTTP busy share for worker-only ones (IndexingPacer).
        ApiBusyShareModule,
        AuditModule,
        MetricsModule.forRoot(config),
        CredentialsModule,
        AuthModule,
        ScopeCatalogModule,
        ToolRegistryModule,
        AdminPolicyModule,
        ApiKeysModule,
        OAuthModule,
        ToolsModule,
        TasksModule,
        ProjectsModule,
        DocumentsModule,
        GithubModule,
        AgentModule.forRoot(config),
        RagModule.forRoot(config),
        ...(config.mcp.conformanceFixtures ? [McpConformanceModule] : []),
        ...extraModules,
      ],
      providers: [
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        // Order matters: authenticate first, so the rate limit counts per caller.
        { provide: APP_GUARD, useClass: BackendAuthGuard },
        { provide: APP_GUARD, useClass: BackendThrottlerGuard },
        {
          provide: APP_PIPE,
          useValue: new ValidationPipe({
            whitelist: true,
            forbidNonWhitelisted: true,
            transform: true,
            stopAtFirstError: false,
            validationError: { target: false, value: false },
          }),
        },
      ],
    };
  }
}
