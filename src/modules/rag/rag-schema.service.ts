import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DocumentChunksRepository } from './document-chunks.repository.js';
import { EMBEDDING_PROVIDER, type EmbeddingProvider } from './embeddings/embedding-provider.js';

/**
 * Makes sure the partial HNSW index for the configured dimension exists (the migration creates the one
 * for the default 768; see migrations/1763792000000-rag.ts for why the column has no fixed dimension).
 */
@Injectable()
export class RagSchemaService implements OnModuleInit {
  private readonly logger = new Logger(RagSchemaService.name);

  constructor(
    private readonly chunks: DocumentChunksRepository,
    @Inject(EMBEDDING_PROVIDER) private readonly embedder: EmbeddingProvider,
  ) {}

  async onModuleInit(): Promise<void> {
    const dims = this.embedder.dimensions;
    if (!Number.isInteger(dims) || dims < 1 || dims > 2000)
      throw new Error(`EMBEDDINGS_DIMENSIONS=${dims} cannot be indexed by HNSW`);
    await this.chunks.ensureVectorIndex(dims);
    this.logger.log({ msg: 'vector index ready', embedding: this.embedder.key });
  }
}
