import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { IdempotencyModule } from '../../common/idempotency/idempotency.module.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { DocumentEventsService } from './document-events.service.js';
import { DocumentIndexStateService } from './document-index-state.service.js';
import { DocumentsController } from './documents.controller.js';
import { DocumentsRepository } from './documents.repository.js';
import { DocumentsService } from './documents.service.js';
import { DocumentsToolProvider } from './documents.tool-provider.js';
import { UploadLimitInterceptor } from './upload-limit.interceptor.js';
import { ToolsModule } from '../tools/tools.module.js';
import { DocumentsMcpResources } from './documents.mcp-resources.js';

/**
 * Documents: uploads and visibility. Exports DocumentsService (for the document tools), DocumentEventsService
 * (subscribe to enqueue indexing) and DocumentIndexStateService (for the RAG indexer, which also extracts
 * the text, in its sandbox: see document-text-extractor.ts).
 */
@Module({
  imports: [
    ToolsModule,
    ProjectsModule,
    IdempotencyModule,
    MulterModule.registerAsync({
      inject: [APP_CONFIG],
      // Memory storage, stopped by multer at fileSize: the file never grows past the limit in memory.
      useFactory: (config: AppConfig) => ({
        limits: { fileSize: config.limits.uploadMaxBytes, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 12 },
        defParamCharset: 'utf8',
      }),
    }),
  ],
  controllers: [DocumentsController],
  providers: [
    DocumentsMcpResources,
    DocumentsRepository,
    DocumentsService,
    DocumentEventsService,
    DocumentIndexStateService,
    UploadLimitInterceptor,
    DocumentsToolProvider,
  ],
  exports: [DocumentsService, DocumentEventsService, DocumentIndexStateService],
})
export class DocumentsModule {}
