import { BullModule } from '@nestjs/bullmq';
import { DynamicModule, Module, type Provider } from '@nestjs/common';
import { AgentRunCredential } from './agent-run.credential.js';
import { IdempotencyModule } from '../../common/idempotency/idempotency.module.js';
import { LeasesModule } from '../../common/leases/leases.module.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { ToolsModule } from '../tools/tools.module.js';
import { AGENT_RUNS_QUEUE } from './agent.constants.js';
import { AgentController } from './agent.controller.js';
import { AgentRunProcessor } from './agent-run.processor.js';
import { AgentRunner } from './agent-run.runner.js';
import { AgentRunEventsListener } from './agent-run-events.listener.js';
import { AgentRunStreamService } from './agent-run-stream.service.js';
import { RunStreamSlots } from './run-stream-slots.service.js';
import { AgentRunEventsRepository } from './agent-run-events.repository.js';
import { AgentRunsRepository } from './agent-runs.repository.js';
import { AgentRunsService } from './agent-runs.service.js';
import { LLM_CLIENT } from './llm/llm-client.js';
import { TokenCipher } from '../github/token-cipher.js';
import { AgentWebhookProcessor } from './webhooks/agent-webhook.processor.js';
import { AgentWebhookDeliveriesRepository } from './webhooks/agent-webhook-deliveries.repository.js';
import { AGENT_WEBHOOKS_QUEUE, AgentWebhooksService } from './webhooks/agent-webhooks.service.js';
import { OfflineRetrievalAgent } from './llm/offline-retrieval.agent.js';
import { OpenAiChatClient } from './llm/openai-chat.client.js';

/**
 * Agent runs: an LLM tool loop (or the offline retrieval agent) over the tool registry, with the caller's own
 * permissions. The queue processor runs in APP_ROLE=all and worker; an api-only process just enqueues.
 */
@Module({})
export class AgentModule {
  static forRoot(config: AppConfig): DynamicModule {
    const providers: Provider[] = [
      {
        provide: LLM_CLIENT,
        inject: [APP_CONFIG],
        useFactory: (appConfig: AppConfig) =>
          appConfig.llm.provider === 'openai' ? new OpenAiChatClient(appConfig.llm) : new OfflineRetrievalAgent(),
      },
      AgentRunsRepository,
      AgentRunEventsRepository,
      AgentWebhookDeliveriesRepository,
      AgentRunsService,
      AgentRunner,
      AgentRunCredential,
      AgentRunEventsListener,
      AgentRunStreamService,
      RunStreamSlots,
      AgentWebhooksService,
      TokenCipher,
    ];
    if (config.role !== 'api') providers.push(AgentRunProcessor, AgentWebhookProcessor);
    return {
      module: AgentModule,
      imports: [
        BullModule.registerQueue({ name: AGENT_RUNS_QUEUE }),
        BullModule.registerQueue({ name: AGENT_WEBHOOKS_QUEUE }),
        ProjectsModule,
        ToolsModule,
        IdempotencyModule,
        LeasesModule,
        AuthModule,
      ],
      controllers: [AgentController],
      providers,
    };
  }
}
