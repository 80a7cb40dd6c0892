import { BullModule } from '@nestjs/bullmq';
import { DynamicModule, Module, type Provider } from '@nestjs/common';
import { ApiBusyShareModule } from '../../common/http/api-busy-share.module.js';
import { ApiBusySharesRepository } from '../../common/http/api-busy-shares.repository.js';
import { httpActivity } from '../../common/http/http-activity.js';
import { IdempotencyModule } from '../../common/idempotency/idempotency.module.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { DocumentsModule } from '../documents/documents.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { ChunkWriterService } from './chunk-writer.service.js';
import { DocumentChunksRepository } from './document-chunks.repository.js';
import { IndexingJobsRepository } from './indexing-jobs.repository.js';
import { RagSearchRepository } from './rag-search.repository.js';
import { RagSegmentsRepository } from './rag-segments.repository.js';
import { RagSegmentsService } from './rag-segments.service.js';
import { EMBEDDING_PROVIDER } from './embeddings/embedding-provider.js';
import { createEmbeddingProvider } from './embeddings/embedding-provider.factory.js';
import { IndexingJobRunner } from './indexing-job.runner.js';
import { IndexingJobsService } from './indexing-jobs.service.js';
import { IndexingProcessor } from './indexing.processor.js';
import { RagSchemaService } from './rag-schema.service.js';
import { RagSearchService } from './rag-search.service.js';
import { RagToolProvider } from './rag.tool-provider.js';
import { RagController } from './rag.controller.js';
import { RAG_INDEXING_QUEUE } from './rag.constants.js';
import { IngestSandbox } from './sandbox/ingest-sandbox.service.js';
import { REQUEST_LOAD, type RequestLoad } from './indexing-pacer.js';
import { SharedRequestLoad } from './shared-request-load.js';

/**
 * RAG: chunking, embeddings, BM25 + vector search with visibility in SQL, and indexing jobs.
 * The queue processor runs in APP_ROLE=all and worker; an api-only process just enqueues.
 */
@Module({})
export class RagModule {
  static forRoot(config: AppConfig): DynamicModule {
    const providers: Provider[] = [
      {
        provide: EMBEDDING_PROVIDER,
        inject: [APP_CONFIG],
        useFactory: (appConfig: AppConfig) => createEmbeddingProvider(appConfig.embeddings),
      },
      {
        // A worker-only process serves no requests: it paces by what the API instances publish.
        provide: REQUEST_LOAD,
        inject: [APP_CONFIG, ApiBusySharesRepository],
        useFactory: (appConfig: AppConfig, shares: ApiBusySharesRepository): RequestLoad =>
          appConfig.role === 'worker' ? new SharedRequestLoad(shares) : httpActivity,
      },
      DocumentChunksRepository,
      IndexingJobsRepository,
      RagSearchRepository,
      RagSegmentsRepository,
      RagSegmentsService,
      RagSchemaService,
      ChunkWriterService,
      IngestSandbox,
      RagSearchService,
      IndexingJobsService,
      IndexingJobRunner,
      RagToolProvider,
    ];
    if (config.role !== 'api') providers.push(IndexingProcessor);
    return {
      module: RagModule,
      imports: [
        BullModule.registerQueue({ name: RAG_INDEXING_QUEUE }),
        DocumentsModule,
        ProjectsModule,
        IdempotencyModule,
        ApiBusyShareModule,
      ],
      controllers: [RagController],
      providers,
      exports: [RagSearchService, IndexingJobsService, EMBEDDING_PROVIDER],
    };
  }
}
